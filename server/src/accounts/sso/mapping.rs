//! Who a verified ID token signs in as: the mapping rules, pure so they are tested alone.
//! Only a token with a verified `email` signs in; a provider account (`sub`) linked to a user
//! signs in as that user, whatever its email now; an unlinked one maps by email to a user who is
//! not linked yet, and is linked on that first sign-in. The user must be enabled.

use crate::store::{OidcLinkRow, UserId, UserRow};

/// The claims of a verified ID token that Porch reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub issuer: String,
    /// The provider's stable id for the person (`sub`).
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    /// The `name` claim, for an account created on first sign-in.
    pub name: Option<String>,
}

/// Why a single sign-on did not sign anyone in. The code is stable: it is put in the sign-in
/// page's URL and in the audit log (docs/sso.md lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Discovery has not succeeded yet: the provider could not be reached.
    Unavailable,
    /// Discovery has not succeeded: the provider answered with a configuration that does not
    /// match Porch's settings (another issuer, no valid discovery document). Retrying will not
    /// mend it; an admin must.
    Misconfigured,
    /// The provider answered with an error (refused, or the person cancelled), or with neither
    /// an error nor a code.
    ProviderError,
    /// No attempt of this browser matches the callback's `state` (tampered, replayed, expired,
    /// or started in another browser).
    StateMismatch,
    /// The code exchange failed or the ID token did not pass its checks.
    TokenInvalid,
    /// No `email`, or `email_verified` is not true.
    EmailUnverified,
    /// No Porch user has this email, and its domain is not provisioned.
    UnknownUser,
    /// The Porch user is disabled.
    UserDisabled,
    /// The Porch user with the token's email is linked to another account at the provider.
    SubjectMismatch,
}

impl Refusal {
    /// Every refusal, in the order of the docs.
    pub const ALL: [Self; 9] = [
        Self::Unavailable,
        Self::Misconfigured,
        Self::ProviderError,
        Self::StateMismatch,
        Self::TokenInvalid,
        Self::EmailUnverified,
        Self::UnknownUser,
        Self::UserDisabled,
        Self::SubjectMismatch,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Unavailable => "sso_unavailable",
            Self::Misconfigured => "sso_misconfigured",
            Self::ProviderError => "sso_provider_error",
            Self::StateMismatch => "sso_state_mismatch",
            Self::TokenInvalid => "sso_token_invalid",
            Self::EmailUnverified => "sso_email_unverified",
            Self::UnknownUser => "sso_unknown_user",
            Self::UserDisabled => "sso_user_disabled",
            Self::SubjectMismatch => "sso_subject_mismatch",
        }
    }

    /// The refusal with this code.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }

    /// What the sign-in page says.
    pub fn message(self) -> &'static str {
        match self {
            Self::Unavailable => {
                "Single sign-on is not available right now: Porch cannot reach the sign-in \
                 provider. Try again in a minute, or sign in with your password."
            }
            Self::Misconfigured => {
                "Single sign-on is misconfigured: the sign-in provider's settings do not match \
                 Porch's. Tell your admin; until it is fixed, sign in with your password."
            }
            Self::ProviderError => {
                "The sign-in provider did not sign you in (it refused, or the sign-in was \
                 cancelled). Try again."
            }
            Self::StateMismatch => {
                "That sign-in did not start in this browser, or took longer than 10 minutes. \
                 Start again with the button below."
            }
            Self::TokenInvalid => {
                "The sign-in provider's answer could not be verified. Try again; if it keeps \
                 happening, tell your admin."
            }
            Self::EmailUnverified => {
                "Your sign-in provider has not verified your email address, so Porch cannot \
                 tell which account is yours. Verify it there, then try again."
            }
            Self::UnknownUser => {
                "There is no Porch account for your email address. Ask an admin to invite you."
            }
            Self::UserDisabled => "Your Porch account is disabled. Ask an admin to enable it.",
            Self::SubjectMismatch => {
                "Your Porch account is linked to another account at the sign-in provider. Sign \
                 in with that one, or ask an admin."
            }
        }
    }
}

/// What the stored accounts say about a token's email and subject, read in one transaction.
#[derive(Debug, Default)]
pub struct Known<'a> {
    /// The Porch user with the token's email.
    pub user: Option<&'a UserRow>,
    /// That user's link, if they signed in through SSO before.
    pub user_link: Option<&'a OidcLinkRow>,
    /// The user the token's subject (at its issuer) is linked to, if any.
    pub subject_owner: Option<&'a UserRow>,
}

/// What to do with a verified token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Sign in as this user; `link` when this is their first SSO sign-in.
    SignIn {
        user: UserId,
        link: bool,
    },
    /// Create an agent with this email, link it and sign in.
    Provision {
        email: String,
    },
    Refuse(Refusal),
}

/// Applies the mapping rules to `claims`, given what is stored and the provisioned domains
/// (lower case).
pub fn decide(claims: &Claims, known: &Known<'_>, provision_domains: &[String]) -> Decision {
    let Some(email) = claims
        .email
        .as_deref()
        .filter(|_| claims.email_verified == Some(true))
    else {
        return Decision::Refuse(Refusal::EmailUnverified);
    };
    // The link is who this provider account is: its email may have changed at the provider
    // since (a new name, a new domain), and an email now shared with another user does not
    // make it that user.
    if let Some(owner) = known.subject_owner {
        if owner.is_disabled {
            return Decision::Refuse(Refusal::UserDisabled);
        }
        return Decision::SignIn {
            user: owner.id,
            link: false,
        };
    }
    let Some(user) = known.user else {
        let domain = email.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase());
        return match domain {
            Some(domain) if provision_domains.contains(&domain) => Decision::Provision {
                email: email.to_owned(),
            },
            _ => Decision::Refuse(Refusal::UnknownUser),
        };
    };
    if user.is_disabled {
        return Decision::Refuse(Refusal::UserDisabled);
    }
    // This provider account is linked to nobody: the user with its email is linked to another
    // one (another account with the same email, or the same person at another issuer).
    if known.user_link.is_some() {
        return Decision::Refuse(Refusal::SubjectMismatch);
    }
    Decision::SignIn {
        user: user.id,
        link: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUER: &str = "https://id.example.com";

    fn claims(email: &str, verified: Option<bool>, subject: &str) -> Claims {
        Claims {
            issuer: ISSUER.to_owned(),
            subject: subject.to_owned(),
            email: Some(email.to_owned()),
            email_verified: verified,
            name: None,
        }
    }

    fn user(id: i64, email: &str, is_disabled: bool) -> UserRow {
        UserRow {
            id: UserId(id),
            email: email.to_owned(),
            name: "Ana".to_owned(),
            role: "agent".to_owned(),
            is_disabled,
        }
    }

    fn link(subject: &str) -> OidcLinkRow {
        OidcLinkRow {
            issuer: ISSUER.to_owned(),
            subject: subject.to_owned(),
        }
    }

    #[test]
    fn a_known_user_with_a_verified_email_is_linked_on_first_sign_in() {
        let ana = user(1, "ana@example.com", false);
        let known = Known {
            user: Some(&ana),
            ..Known::default()
        };
        let decision = decide(&claims("ana@example.com", Some(true), "s1"), &known, &[]);
        assert_eq!(
            decision,
            Decision::SignIn {
                user: UserId(1),
                link: true
            }
        );
    }

    #[test]
    fn a_linked_user_signs_in_again_with_the_same_subject_only() {
        let ana = user(1, "ana@example.com", false);
        let ana_link = link("s1");
        let known = Known {
            user: Some(&ana),
            user_link: Some(&ana_link),
            subject_owner: Some(&ana),
        };
        let same = decide(&claims("ana@example.com", Some(true), "s1"), &known, &[]);
        assert_eq!(
            same,
            Decision::SignIn {
                user: UserId(1),
                link: false
            }
        );
        let other = Known {
            subject_owner: None,
            ..known
        };
        let decision = decide(&claims("ana@example.com", Some(true), "s2"), &other, &[]);
        assert_eq!(decision, Decision::Refuse(Refusal::SubjectMismatch));
    }

    #[test]
    fn a_subject_linked_to_one_user_cannot_take_over_another_by_changing_its_email() {
        let ana = user(1, "ana@example.com", false);
        let bo = user(2, "bo@example.com", false);
        let known = Known {
            user: Some(&bo),
            user_link: None,
            subject_owner: Some(&ana),
        };
        let decision = decide(&claims("bo@example.com", Some(true), "s1"), &known, &[]);
        assert_eq!(
            decision,
            Decision::SignIn {
                user: UserId(1),
                link: false
            },
            "still Ana, never Bo"
        );
    }

    #[test]
    fn the_same_subject_at_another_issuer_is_another_account() {
        let ana = user(1, "ana@example.com", false);
        let elsewhere = OidcLinkRow {
            issuer: "https://old-id.example.com".to_owned(),
            subject: "s1".to_owned(),
        };
        let known = Known {
            user: Some(&ana),
            user_link: Some(&elsewhere),
            subject_owner: None,
        };
        let decision = decide(&claims("ana@example.com", Some(true), "s1"), &known, &[]);
        assert_eq!(decision, Decision::Refuse(Refusal::SubjectMismatch));
    }

    #[test]
    fn an_unverified_or_missing_email_is_refused_even_for_a_known_user() {
        let ana = user(1, "ana@example.com", false);
        let known = Known {
            user: Some(&ana),
            ..Known::default()
        };
        for verified in [None, Some(false)] {
            let decision = decide(&claims("ana@example.com", verified, "s1"), &known, &[]);
            assert_eq!(decision, Decision::Refuse(Refusal::EmailUnverified));
        }
        let mut no_email = claims("ana@example.com", Some(true), "s1");
        no_email.email = None;
        assert_eq!(
            decide(&no_email, &known, &[]),
            Decision::Refuse(Refusal::EmailUnverified)
        );
    }

    #[test]
    fn a_disabled_user_is_refused() {
        let ana = user(1, "ana@example.com", true);
        let ana_link = link("s1");
        let known = Known {
            user: Some(&ana),
            user_link: Some(&ana_link),
            subject_owner: Some(&ana),
        };
        let decision = decide(&claims("ana@example.com", Some(true), "s1"), &known, &[]);
        assert_eq!(decision, Decision::Refuse(Refusal::UserDisabled));
        let under_a_new_email = Known {
            subject_owner: Some(&ana),
            ..Known::default()
        };
        let decision = decide(
            &claims("ana.new@example.com", Some(true), "s1"),
            &under_a_new_email,
            &[],
        );
        assert_eq!(decision, Decision::Refuse(Refusal::UserDisabled));
    }

    #[test]
    fn unknown_people_are_provisioned_only_from_listed_domains() {
        let domains = vec!["example.com".to_owned()];
        let known = Known::default();
        let decision = decide(
            &claims("Cy@EXAMPLE.com", Some(true), "s3"),
            &known,
            &domains,
        );
        assert_eq!(
            decision,
            Decision::Provision {
                email: "Cy@EXAMPLE.com".to_owned()
            }
        );
        for email in ["cy@example.org", "cy@sub.example.com", "cy@notexample.com"] {
            let decision = decide(&claims(email, Some(true), "s3"), &known, &domains);
            assert_eq!(decision, Decision::Refuse(Refusal::UnknownUser), "{email}");
        }
        let unverified = decide(
            &claims("cy@example.com", Some(false), "s3"),
            &known,
            &domains,
        );
        assert_eq!(unverified, Decision::Refuse(Refusal::EmailUnverified));
    }

    #[test]
    fn a_linked_subject_whose_email_changed_signs_in_as_its_user_and_is_not_provisioned() {
        let ana = user(1, "ana@example.com", false);
        let domains = vec!["example.com".to_owned()];
        let known = Known {
            subject_owner: Some(&ana),
            ..Known::default()
        };
        let decision = decide(
            &claims("new@example.com", Some(true), "s1"),
            &known,
            &domains,
        );
        assert_eq!(
            decision,
            Decision::SignIn {
                user: UserId(1),
                link: false
            }
        );
    }

    #[test]
    fn codes_round_trip_and_are_unique() {
        for refusal in Refusal::ALL {
            assert_eq!(Refusal::from_code(refusal.code()), Some(refusal));
        }
        assert_eq!(Refusal::from_code("nope"), None);
    }
}
