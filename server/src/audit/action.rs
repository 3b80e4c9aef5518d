//! The audited actions and their codes. The codes are a documented, stable contract
//! (docs/admin.md#audit-log): stored in rows and filtered on, so never rename one.

/// Everything the audit log records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditAction {
    SignedIn,
    SignInFailed,
    SignInThrottled,
    SignedOut,
    SignedOutElsewhere,
    UserCreated,
    UserInvited,
    UserLinkCreated,
    UserRoleChanged,
    UserRenamed,
    UserDisabled,
    UserEnabled,
    UserPasswordChanged,
    UserPasswordResetRequested,
    SiteCreated,
    SiteUpdated,
    SiteDeleted,
    SiteIdentitySecretRotated,
    SiteIdentitySecretRemoved,
    IntegrationCreated,
    IntegrationUpdated,
    IntegrationSecretRotated,
    IntegrationDisabled,
    IntegrationEnabled,
    IntegrationDeleted,
    DeliveryDismissed,
    TokenCreated,
    TokenRevoked,
    TwoFactorEnabled,
    TwoFactorDisabled,
    TwoFactorReset,
    TwoFactorRecoveryUsed,
    TwoFactorRecoveryRegenerated,
    TeamTwoFactorRequired,
    PrivacyExported,
    PrivacyErased,
    SecretsRotated,
    SlackConversationAction,
    CannedReplyCreated,
    CannedReplyUpdated,
    CannedReplyDeleted,
    ImapSaved,
    ImapRemoved,
    ImapTested,
}

impl AuditAction {
    /// Every action, in the order the docs list them.
    pub const ALL: [Self; 44] = [
        Self::SignedIn,
        Self::SignInFailed,
        Self::SignInThrottled,
        Self::SignedOut,
        Self::SignedOutElsewhere,
        Self::UserCreated,
        Self::UserInvited,
        Self::UserLinkCreated,
        Self::UserRoleChanged,
        Self::UserRenamed,
        Self::UserDisabled,
        Self::UserEnabled,
        Self::UserPasswordChanged,
        Self::UserPasswordResetRequested,
        Self::SiteCreated,
        Self::SiteUpdated,
        Self::SiteDeleted,
        Self::SiteIdentitySecretRotated,
        Self::SiteIdentitySecretRemoved,
        Self::IntegrationCreated,
        Self::IntegrationUpdated,
        Self::IntegrationSecretRotated,
        Self::IntegrationDisabled,
        Self::IntegrationEnabled,
        Self::IntegrationDeleted,
        Self::DeliveryDismissed,
        Self::TokenCreated,
        Self::TokenRevoked,
        Self::TwoFactorEnabled,
        Self::TwoFactorDisabled,
        Self::TwoFactorReset,
        Self::TwoFactorRecoveryUsed,
        Self::TwoFactorRecoveryRegenerated,
        Self::TeamTwoFactorRequired,
        Self::PrivacyExported,
        Self::PrivacyErased,
        Self::SecretsRotated,
        Self::SlackConversationAction,
        Self::CannedReplyCreated,
        Self::CannedReplyUpdated,
        Self::CannedReplyDeleted,
        Self::ImapSaved,
        Self::ImapRemoved,
        Self::ImapTested,
    ];

    /// The stable dotted code stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignedIn => "session.signed_in",
            Self::SignInFailed => "session.sign_in_failed",
            Self::SignInThrottled => "session.sign_in_throttled",
            Self::SignedOut => "session.signed_out",
            Self::SignedOutElsewhere => "session.signed_out_elsewhere",
            Self::UserCreated => "user.created",
            Self::UserInvited => "user.invited",
            Self::UserLinkCreated => "user.link_created",
            Self::UserRoleChanged => "user.role_changed",
            Self::UserRenamed => "user.renamed",
            Self::UserDisabled => "user.disabled",
            Self::UserEnabled => "user.enabled",
            Self::UserPasswordChanged => "user.password_changed",
            Self::UserPasswordResetRequested => "user.password_reset_requested",
            Self::SiteCreated => "site.created",
            Self::SiteUpdated => "site.updated",
            Self::SiteDeleted => "site.deleted",
            Self::SiteIdentitySecretRotated => "site.identity_secret_rotated",
            Self::SiteIdentitySecretRemoved => "site.identity_secret_removed",
            Self::IntegrationCreated => "integration.created",
            Self::IntegrationUpdated => "integration.updated",
            Self::IntegrationSecretRotated => "integration.secret_rotated",
            Self::IntegrationDisabled => "integration.disabled",
            Self::IntegrationEnabled => "integration.enabled",
            Self::IntegrationDeleted => "integration.deleted",
            Self::DeliveryDismissed => "delivery.dismissed",
            Self::TokenCreated => "token.created",
            Self::TokenRevoked => "token.revoked",
            Self::TwoFactorEnabled => "two_factor.enabled",
            Self::TwoFactorDisabled => "two_factor.disabled",
            Self::TwoFactorReset => "two_factor.reset",
            Self::TwoFactorRecoveryUsed => "two_factor.recovery_used",
            Self::TwoFactorRecoveryRegenerated => "two_factor.recovery_regenerated",
            Self::TeamTwoFactorRequired => "team.two_factor_required",
            Self::PrivacyExported => "privacy.exported",
            Self::PrivacyErased => "privacy.erased",
            Self::SecretsRotated => "secrets.rotated",
            Self::SlackConversationAction => "slack.conversation_action",
            Self::CannedReplyCreated => "canned_reply.created",
            Self::CannedReplyUpdated => "canned_reply.updated",
            Self::CannedReplyDeleted => "canned_reply.deleted",
            Self::ImapSaved => "email.imap_saved",
            Self::ImapRemoved => "email.imap_removed",
            Self::ImapTested => "email.imap_tested",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_dotted_lowercase() {
        let codes: std::collections::HashSet<_> =
            AuditAction::ALL.iter().map(|a| a.as_str()).collect();
        assert_eq!(codes.len(), AuditAction::ALL.len());
        for code in codes {
            let (noun, verb) = code.split_once('.').expect("dotted");
            assert!(!noun.is_empty() && !verb.is_empty(), "{code}");
            assert!(
                code.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'),
                "{code}"
            );
        }
    }

    #[test]
    fn the_docs_list_every_code() {
        let docs = include_str!("../../../docs/admin.md");
        for action in AuditAction::ALL {
            assert!(
                docs.contains(&format!("`{}`", action.as_str())),
                "docs/admin.md does not list {}",
                action.as_str()
            );
        }
    }
}
