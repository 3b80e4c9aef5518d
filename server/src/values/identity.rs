//! Who a site says its visitor is (docs/widget.md#known-visitors): the `identity` of `hello`,
//! with the user id, name and email parsed, and whether the site's `user_hash` vouched for it.
//! The check of the hash itself is the widget's (it holds the site's secret); this is the value.

/// Longest user id accepted (sites use numbers, UUIDs or e-mail addresses).
pub const MAX_USER_ID_CHARS: usize = 256;
/// Longest name kept.
const MAX_NAME_CHARS: usize = 200;

/// What the team calls a visitor who gave no name or email: `Visitor #12`, their id, everywhere
/// Porch shows one (the inbox, search, the digest, integrations' posts); search takes it back.
pub fn anonymous_visitor(id: impl std::fmt::Display) -> String {
    format!("Visitor #{id}")
}

/// A visitor's identity as the host page gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitorIdentity {
    /// The site's own id for the user, as text.
    pub user_id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    /// True only when `user_hash` was the HMAC of `user_id` under the site's identity secret.
    pub is_verified: bool,
}

impl VisitorIdentity {
    /// Keeps a claim whose user id is 1 to [`MAX_USER_ID_CHARS`] characters without control or
    /// invisible characters (after trimming); `None` otherwise. An id is shown to agents beside
    /// the name and email: a direction override in it would reverse them, and it cannot be
    /// taken out of the id, which `user_hash` covers as sent. A name is put on one line without direction
    /// overrides and cut to 200 characters; an email a visitor could not type (see
    /// [`super::is_visitor_email`]) is dropped. Not verified yet.
    pub fn parse(user_id: &str, name: Option<&str>, email: Option<&str>) -> Option<Self> {
        let user_id = user_id.trim();
        let id_ok = !user_id.is_empty()
            && user_id.chars().count() <= MAX_USER_ID_CHARS
            && !user_id
                .chars()
                .any(|c| c.is_control() || super::is_invisible(c));
        id_ok.then(|| Self {
            user_id: user_id.to_owned(),
            name: name.and_then(clean_name),
            email: email.and_then(clean_email),
            is_verified: false,
        })
    }

    /// The same identity, marked as vouched for by the site.
    #[must_use]
    pub fn verified(self) -> Self {
        Self {
            is_verified: true,
            ..self
        }
    }
}

fn clean_name(raw: &str) -> Option<String> {
    let kept: String = super::one_line(raw).chars().take(MAX_NAME_CHARS).collect();
    // Cut after a space, the name would end in one.
    let kept = kept.trim_end();
    (!kept.is_empty()).then(|| kept.to_owned())
}

/// The same rule as an address the visitor types: one replies can be mailed to, with nothing
/// invisible (a direction override would show agents another address).
fn clean_email(raw: &str) -> Option<String> {
    let email = raw.trim();
    super::is_visitor_email(email).then(|| email.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_keeps_what_is_well_formed() {
        let id = VisitorIdentity::parse(" 42 ", Some(" Ada "), Some("ada@example.org"))
            .expect("valid id");
        assert_eq!(id.user_id, "42");
        assert_eq!(id.name.as_deref(), Some("Ada"));
        assert_eq!(id.email.as_deref(), Some("ada@example.org"));
        assert!(!id.is_verified);
        assert!(id.verified().is_verified);
        // Cut at 200 characters right after a space: the space goes too.
        let long = format!("{} tail", "x".repeat(199));
        let cut = VisitorIdentity::parse("42", Some(&long), None).expect("valid id");
        assert_eq!(cut.name.as_deref(), Some("x".repeat(199).as_str()));
    }

    #[test]
    fn bad_ids_are_refused_and_bad_details_dropped() {
        assert!(VisitorIdentity::parse("", None, None).is_none());
        assert!(VisitorIdentity::parse("a\nb", None, None).is_none());
        // An override would reverse the name and email shown after the id.
        assert!(VisitorIdentity::parse("7\u{202E}x", None, None).is_none());
        assert!(VisitorIdentity::parse("7\u{200B}", None, None).is_none());
        assert!(VisitorIdentity::parse(&"x".repeat(257), None, None).is_none());
        assert!(VisitorIdentity::parse(&"x".repeat(256), None, None).is_some());
        let id = VisitorIdentity::parse("7", Some("  "), Some("not an email")).expect("id");
        assert_eq!((id.name, id.email), (None, None));
        let spoofed = VisitorIdentity::parse("7", None, Some("ceo\u{202E}moc.knab@x.test"));
        assert_eq!(spoofed.expect("id").email, None, "a direction override");
        let turned = VisitorIdentity::parse("7", Some("Ana\u{202E}tnega\u{2066}\nX"), None);
        assert_eq!(turned.expect("id").name.as_deref(), Some("Anatnega X"));
        let long = format!("{}@example.org", "a".repeat(250));
        assert_eq!(
            VisitorIdentity::parse("7", None, Some(&long))
                .expect("id")
                .email,
            None
        );
    }
}
