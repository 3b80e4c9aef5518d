//! Text from outside, parsed: message bodies, client-chosen message ids and web origins. Once a
//! value has one of these types, it is known to be well-formed; the store binds bodies and ids
//! as they are.

use std::borrow::Cow;

pub use porch_app::chars::{is_direction_control, is_invisible};

use rusqlite::ToSql;
use rusqlite::types::ToSqlOutput;

/// Longest message body, in characters: longer is refused from the widget and the API, and cut
/// from a mail or a Slack reply ([`MessageBody::clip`]).
pub const MAX_BODY_CHARS: usize = 4000;
/// Longest client-chosen message id.
pub const MAX_CLIENT_ID_LEN: usize = 64;

/// Why a value from outside was refused; the text is shown to the sender. Mostly a fixed
/// sentence; owned where it names what was refused (which origin of a list).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub Cow<'static, str>);

impl From<&'static str> for Invalid {
    fn from(reason: &'static str) -> Self {
        Self(Cow::Borrowed(reason))
    }
}

impl From<String> for Invalid {
    fn from(reason: String) -> Self {
        Self(Cow::Owned(reason))
    }
}

/// "refund", "refund and vip", "refund, vip and b2b".
pub fn listed_in_words<S: AsRef<str>>(names: &[S]) -> String {
    match names {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
    }
}

/// `text` on one line: line breaks and other control characters become spaces, runs of white
/// space one space, none at either end, and direction overrides, embeddings and isolates are
/// dropped. For names, which show in lists, headers and mails: an override would turn the rest
/// of the line around (`Ana\u{202E}tnega` reads as "Ana agent"), where no mark of ours can
/// fence it (a Slack message, a mail subject).
pub fn one_line(text: &str) -> String {
    text.split(char::is_control)
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
        .replace(is_direction_control, "")
}

/// `text`'s lines as a reader may show them: split at CRLF, LF, a lone CR, and Unicode's line
/// and paragraph separators.
pub fn lines_as_shown(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(['\n', '\r', '\u{2028}', '\u{2029}']) {
        lines.push(&rest[..at]);
        let width = if rest[at..].starts_with("\r\n") {
            2
        } else {
            rest[at..].chars().next().map_or(1, char::len_utf8)
        };
        rest = &rest[at + width..];
    }
    lines.push(rest);
    lines
}

/// `text` with `prefix` before every line after the first, for a line of Porch's own that the
/// text continues (`[time] You: …` in a visitor's text download): see [`indented`].
pub fn continued(text: &str, prefix: &str) -> String {
    lines_as_shown(text).join(&format!("\n{prefix}"))
}

/// `text` with `prefix` before every line (as [`lines_as_shown`] counts them), where Porch's own
/// lines start at the line's start (a mail's transcript or digest, a text download): nothing a
/// visitor writes can then pass for one of them (an entry, a link, an agent's line).
pub fn indented(text: &str, prefix: &str) -> String {
    format!("{prefix}{}", continued(text, prefix))
}

/// Whether `c` breaks a one-line value: a control character (line breaks, tab) or Unicode's line
/// and paragraph separators, which end a mail header as a line break would.
pub fn breaks_the_line(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `c` belongs in a URL as sent: a browser's `location.href` percent-encodes control and
/// invisible characters, so a raw one is a hand-made hint, dropped before agents read it.
pub(super) fn is_url_char(c: char) -> bool {
    !c.is_control() && !is_invisible(c)
}

/// Whether `raw` is an address a visitor may give (the pre-chat form, the offline email form):
/// RFC 5321 syntax within its 254-character path, a domain with a dot, one a mail can be
/// addressed to, and nothing invisible. Agents read it as
/// typed, and a direction override would show `ceo\u{202E}moc.knab@x.test` as
/// `ceotset.x@bank.com`, an address the mail does not go to.
pub fn is_visitor_email(raw: &str) -> bool {
    raw.len() <= 254
        && !raw.chars().any(is_invisible)
        && raw
            .parse::<lettre::Address>()
            .is_ok_and(|a| has_internet_domain(&a) && is_mailable(a))
}

/// Whether the domain is a host name mail on the internet can reach: labels of letters, digits
/// and inner hyphens (RFC 5321's, with letters of any script for internationalised names), at
/// least two of them (`a@b` is nearly always a typo), the last not all digits (`example.123` is
/// no top-level domain). An address literal (`a@[192.0.2.1]`) is not taken: no mail server
/// Porch relays through would deliver to one, and no visitor has one.
fn has_internet_domain(address: &lettre::Address) -> bool {
    let labels: Vec<&str> = address.domain().split('.').collect();
    let is_label = |label: &&str| {
        (1..=63).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    labels.len() >= 2
        && labels.iter().all(is_label)
        && !labels[labels.len() - 1].chars().all(|c| c.is_ascii_digit())
}

/// Whether a mail can be addressed to `address`. The parser takes some addresses (a quoted
/// local part, `"a b"@example.org`) that a message's envelope then refuses: a reply to one could
/// never be sent, so it is not taken in the first place.
fn is_mailable(address: lettre::Address) -> bool {
    lettre::Message::builder()
        .from(lettre::message::Mailbox::new(None, address.clone()))
        .to(lettre::message::Mailbox::new(None, address))
        .body(String::new())
        .is_ok()
}

/// Whether `text` shows nothing: only white space and invisible characters.
fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || is_invisible(c))
}

/// A control character a message may not hold: all but tab and the line breaks (NUL, escape,
/// the C1 controls), which no one types and which some destinations choke on.
fn is_refused_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// Why [`MessageBody::parse`] refuses a body: its [`Invalid`] is one of these, so a caller that
/// says it in its own words (the inbox's page) can tell which.
pub const BODY_EMPTY: &str = "The message is empty.";
pub const BODY_CONTROL: &str =
    "The message holds a control character (such as NUL); only tab and line breaks are allowed.";
pub const BODY_TOO_LONG: &str = "The message is longer than 4,000 characters.";

/// A message body: trimmed, 1 to [`MAX_BODY_CHARS`] characters, something visible among them,
/// and no control characters but tab and line breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageBody(String);

impl MessageBody {
    /// Trims white space at both ends and checks the length and characters.
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let trimmed = raw.trim();
        if is_blank(trimmed) {
            return Err(Invalid::from(BODY_EMPTY));
        }
        if trimmed.contains(is_refused_control) {
            return Err(Invalid::from(BODY_CONTROL));
        }
        if trimmed.chars().count() > MAX_BODY_CHARS {
            return Err(Invalid::from(BODY_TOO_LONG));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// Like [`MessageBody::parse`], except that a message carrying attachments may have no
    /// text (then the body is empty).
    pub fn parse_beside_attachments(raw: &str, has_attachments: bool) -> Result<Self, Invalid> {
        if has_attachments && is_blank(raw) {
            return Ok(Self(String::new()));
        }
        Self::parse(raw)
    }

    /// Text from a channel where the sender cannot be told "too long" (a mail, a Slack reply),
    /// without the control characters a body may not hold, trimmed and cut to
    /// [`MAX_BODY_CHARS`], marked with "…" where it was cut, so that it parses rather than being
    /// lost.
    pub fn clip(raw: &str) -> String {
        let kept: String = raw.chars().filter(|c| !is_refused_control(*c)).collect();
        let trimmed = kept.trim();
        if trimmed.chars().count() <= MAX_BODY_CHARS {
            return trimmed.to_owned();
        }
        let mut clipped: String = trimmed.chars().take(MAX_BODY_CHARS - 1).collect();
        clipped.push('…');
        clipped
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl ToSql for MessageBody {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

/// A sender-chosen message id: 1 to 64 characters of `A-Z a-z 0-9 - _`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let ok_len = !raw.is_empty() && raw.len() <= MAX_CLIENT_ID_LEN;
        let ok_chars = raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok_len && ok_chars {
            Ok(Self(raw.to_owned()))
        } else {
            Err(Invalid::from(
                "client_id must be 1 to 64 characters of A-Z, a-z, 0-9, - and _.",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl ToSql for ClientId {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

/// A web origin, `scheme://host[:port]`, lower-cased, without path or trailing slash.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin(String);

impl Origin {
    /// Accepts `http` and `https` origins; a trailing slash is dropped, and so is the scheme's
    /// default port, which browsers never send (`https://a.example:443` is `https://a.example`).
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let lowered = raw.trim().trim_end_matches('/').to_ascii_lowercase();
        let rest = lowered
            .strip_prefix("https://")
            .or_else(|| lowered.strip_prefix("http://"))
            .ok_or(Invalid::from("An origin starts with http:// or https://."))?;
        if rest.contains('*') {
            return Err(Invalid::from(
                "An origin is one website, without wildcards: list each one, such as https://www.example.com and https://shop.example.com.",
            ));
        }
        let valid_host = !rest.is_empty()
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
        if !valid_host {
            return Err(Invalid::from(
                "An origin is scheme://host[:port], without a path, for example https://www.example.com.",
            ));
        }
        // Stored as a browser writes it in `Origin`, which is what it must match: what the
        // characters above allow but no browser sends is refused (a port of 0 or over 65535, two
        // ports, brackets that hold no IPv6 address), and the rest written the browser's way
        // (the scheme's default port dropped, `:08443` as `:8443`, `127.1` as `127.0.0.1`).
        let sent = reqwest::Url::parse(&lowered)
            .ok()
            .filter(|url| url.host().is_some() && url.path() == "/" && url.port() != Some(0))
            .map(|url| url.origin().ascii_serialization());
        match sent {
            Some(origin) if origin.starts_with("http") => Ok(Self(origin)),
            _ => Err(Invalid::from(
                "An origin is scheme://host[:port], the port from 1 to 65535, for example https://www.example.com:8443.",
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_break_a_reader_may_show_starts_a_line() {
        assert_eq!(
            lines_as_shown("a\r\nb\rc\u{2028}d\u{2029}e\nf\n"),
            ["a", "b", "c", "d", "e", "f", ""]
        );
        assert_eq!(
            indented("a\r\nb\rc\u{2028}d\u{2029}e\nf", "  > "),
            "  > a\n  > b\n  > c\n  > d\n  > e\n  > f"
        );
        assert_eq!(
            continued("one\n[time] Admin: x", "    "),
            "one\n    [time] Admin: x"
        );
        assert_eq!(continued("", "  "), "");
    }

    #[test]
    fn a_visitor_email_is_well_formed_and_shows_what_it_is() {
        assert!(is_visitor_email("ada@example.org"));
        assert!(is_visitor_email("ada@mail.example-shop.co.uk"));
        assert!(
            is_visitor_email("jörg@bücher.example"),
            "an international name"
        );
        assert!(
            is_visitor_email("\"john.doe\"@example.org"),
            "quoted, and mailable"
        );
        for bad in [
            "not-an-address",
            "ceo\u{202E}moc.knab@x.test",
            "ada\u{200B}@example.org",
            "a'\u{2066}evil@x.test",
            "\"<!channel> *x*\"@example.org",
            "a@b",
            "a@example.",
            "a@ex_ample.org",
            "a@example.123",
            "a@-example.org",
            "a@[192.0.2.1]",
            "a@[IPv6:2001:db8::1]",
        ] {
            assert!(!is_visitor_email(bad), "{bad:?}");
        }
        assert!(!is_visitor_email(&format!(
            "{}@example.org",
            "a".repeat(250)
        )));
    }

    #[test]
    fn body_is_trimmed_and_bounded() {
        assert_eq!(
            MessageBody::parse("  hi \n").map(MessageBody::into_string),
            Ok("hi".into())
        );
        assert!(MessageBody::parse(" \n\t ").is_err());
        assert!(MessageBody::parse(&"é".repeat(MAX_BODY_CHARS)).is_ok());
        assert!(MessageBody::parse(&"é".repeat(MAX_BODY_CHARS + 1)).is_err());
        let clipped = MessageBody::clip(&format!(" {} ", "a".repeat(MAX_BODY_CHARS + 10)));
        assert_eq!(clipped.chars().count(), MAX_BODY_CHARS);
        assert!(clipped.ends_with("a…"));
        assert!(MessageBody::parse(&clipped).is_ok());
        assert_eq!(MessageBody::clip(" short "), "short");
    }

    #[test]
    fn a_body_must_show_something_and_hold_no_control_characters() {
        for blank in [
            "\u{200B}",
            " \u{200B}\u{FEFF} \u{2060}",
            "\u{3164}",
            "\u{00AD}\n",
            "\u{FE0F}",
            "\u{E0020}\u{E0041}",
            "\u{2800}",
            "\u{1D173}",
        ] {
            assert_eq!(
                MessageBody::parse(blank),
                Err(Invalid::from("The message is empty.")),
                "{blank:?}"
            );
        }
        for control in ["a\0b", "a\u{1B}[31m", "a\u{85}b", "a\u{7F}"] {
            assert!(MessageBody::parse(control).is_err(), "{control:?}");
        }
        let ok = "line\r\n\tindented \u{200D}\u{1F469} \u{2764}\u{FE0F}";
        assert!(MessageBody::parse(ok).is_ok());
        assert!(MessageBody::parse_beside_attachments("\u{200B}", true).is_ok());
        assert_eq!(MessageBody::clip("a\0b\u{1B}c "), "abc");
    }

    #[test]
    fn client_id_allows_only_safe_characters() {
        assert!(ClientId::parse("a-Z_09").is_ok());
        assert!(ClientId::parse("").is_err());
        assert!(ClientId::parse("has space").is_err());
        assert!(ClientId::parse(&"x".repeat(65)).is_err());
    }

    #[test]
    fn origin_is_normalised() {
        assert_eq!(
            Origin::parse("HTTPS://Example.com/").map(|o| o.0),
            Ok("https://example.com".into())
        );
        assert_eq!(
            Origin::parse("http://localhost:3000").map(|o| o.0),
            Ok("http://localhost:3000".into())
        );
        for (given, saved) in [
            ("https://example.com:443", "https://example.com"),
            ("http://example.com:80/", "http://example.com"),
            ("https://example.com:80", "https://example.com:80"),
            ("http://example.com:8080", "http://example.com:8080"),
        ] {
            assert_eq!(
                Origin::parse(given).map(|o| o.0),
                Ok(saved.into()),
                "{given}"
            );
        }
        assert!(Origin::parse("example.com").is_err());
        assert!(Origin::parse("https://example.com/path").is_err());
        assert!(Origin::parse("https://").is_err());
        // Shapes no browser sends, so they could never match.
        for never in [
            "http://x.test:99999",
            "http://x.test:0",
            "http://x.test:80:81",
            "http://[x.test]",
        ] {
            let refused = Origin::parse(never).expect_err(never);
            assert!(refused.0.contains("1 to 65535"), "{never}: {refused:?}");
        }
        // Written the browser's way, so that it matches what a browser sends.
        for (given, saved) in [
            ("http://[::1]:8080", "http://[::1]:8080"),
            ("https://shop.example:08443", "https://shop.example:8443"),
            ("http://shop.example:080", "http://shop.example"),
            ("https://shop.example:", "https://shop.example"),
            ("http://127.1", "http://127.0.0.1"),
            ("http://[0:0::1]", "http://[::1]"),
        ] {
            assert_eq!(
                Origin::parse(given).map(|o| o.0),
                Ok(saved.into()),
                "{given}"
            );
        }
        let wildcard = Origin::parse("http://*.example.com").expect_err("a wildcard");
        assert!(wildcard.0.contains("without wildcards"), "{wildcard:?}");
    }
}
