//! Validated account fields: email addresses, display names and roles.

use crate::chat::Invalid;
use crate::values::{is_direction_control, is_invisible};

/// An email address, trimmed; checked only for shape (the mailer will find out the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailAddress(String);

impl EmailAddress {
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let email = raw.trim();
        let shape_ok = email.len() <= 254
            && !email.chars().any(char::is_whitespace)
            && email.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && domain.contains('.') && !domain.contains('@')
            });
        if shape_ok {
            Ok(Self(email.to_owned()))
        } else {
            Err(Invalid::from(
                "Enter an email address such as ana@example.com.",
            ))
        }
    }

    /// The address of an account being made (an invitation, `porch user add`): besides the shape,
    /// one the invitation and reset mails can go to, by the rule a visitor's address meets
    /// (`<a@example.com>`, `a@example..com` and `a@example.com.` were taken). Not asked of an
    /// address signing in: an account made before keeps working.
    pub fn parse_new(raw: &str) -> Result<Self, Invalid> {
        let email = Self::parse(raw)?;
        if crate::values::is_visitor_email(email.as_str()) {
            Ok(email)
        } else {
            Err(Invalid::from(
                "Enter an email address such as ana@example.com.",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A name shown to visitors and colleagues: trimmed, 1 to 80 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayName(String);

impl DisplayName {
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let name = raw.trim();
        if name.is_empty() {
            return Err(Invalid::from("Enter a name."));
        }
        if name.chars().count() > 80 {
            return Err(Invalid::from("The name must have at most 80 characters."));
        }
        // A line break in a name would end a mail header it is written into (an invitation's
        // `To`), and no one is called that.
        if name.chars().any(crate::values::breaks_the_line) {
            return Err(Invalid::from(
                "A name cannot hold line breaks, tabs or other control characters.",
            ));
        }
        // Shown beside other text (a status line, the visitor's header, a search hit), an
        // override turns that text around ("…noitasrevnoc siht koot"); names in any script read
        // right without one.
        if name.chars().any(is_direction_control) {
            return Err(Invalid::from(
                "A name cannot hold direction overrides, embeddings or isolates \
                 (U+202A to U+202E, U+2066 to U+2069).",
            ));
        }
        if name.chars().all(|c| c.is_whitespace() || is_invisible(c)) {
            return Err(Invalid::from("A name needs a visible character."));
        }
        Ok(Self(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a user may do. Agents answer chats; admins also manage sites and the team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Admin,
    Agent,
}

impl Role {
    /// Reads the stored or submitted form (`admin`, `agent`).
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        match raw {
            "admin" => Ok(Self::Admin),
            "agent" => Ok(Self::Agent),
            _ => Err(Invalid::from("The role is admin or agent.")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Agent => "agent",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_need_a_local_part_and_a_domain() {
        assert_eq!(
            EmailAddress::parse(" ana@example.com ").map(|e| e.0),
            Ok("ana@example.com".into())
        );
        for bad in [
            "",
            "ana",
            "@example.com",
            "ana@localhost",
            "a b@example.com",
            "a@b@c.com",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad}");
        }
        // A new account's address must be one a mail can go to.
        for bad in ["<a@example.com>", "a@example..com", "a@example.com."] {
            assert!(EmailAddress::parse_new(bad).is_err(), "{bad}");
        }
        assert!(EmailAddress::parse_new("ana.lopez@example.co.uk").is_ok());
    }

    #[test]
    fn names_are_one_line_of_1_to_80_characters() {
        assert_eq!(
            DisplayName::parse("  Ana Lima ").map(|n| n.as_str().to_owned()),
            Ok("Ana Lima".to_owned())
        );
        // Any script, and a direction mark (which weighs as a letter would), is a name.
        for good in [
            "\u{5D3}\u{5E0}\u{5D4}",
            "\u{645}\u{631}\u{64A}\u{645}",
            "Ana\u{200F}",
        ] {
            assert!(DisplayName::parse(good).is_ok(), "{good:?} refused");
        }
        for bad in [
            "",
            "Carl\r\nBcc: evil@x.com",
            "Dana\nReply-To: x@evil.com",
            "tab\there",
            "n\u{85}el",
            "line\u{2028}sep",
            "Ann\u{202E}",
            "\u{2067}Ann",
            "\u{200B}\u{200B}",
            "\u{2800}",
        ] {
            assert!(DisplayName::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(DisplayName::parse(&"a".repeat(81)).is_err());
    }

    #[test]
    fn roles_round_trip() {
        assert_eq!(Role::parse("admin").map(Role::as_str), Ok("admin"));
        assert!(Role::parse("root").is_err());
    }
}
