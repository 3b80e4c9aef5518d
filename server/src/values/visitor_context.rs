//! What the widget's `hello` tells about the visitor's browser (docs/widget-protocol.md): the
//! page, where they came from, their language and time zone. Shown to agents beside the
//! conversation, so every field is optional and anything malformed is dropped rather than
//! refused: a bad hint must never cost the visitor their chat.

use super::{PrechatAnswers, VisitorIdentity};

/// Longest page or referrer URL kept, in characters.
pub const MAX_URL_CHARS: usize = 2048;
/// Longest language tag kept (BCP 47 tags in practice stay far below).
const MAX_LANGUAGE_CHARS: usize = 35;
/// Longest time zone name kept (IANA names are at most about 30 characters).
const MAX_TIME_ZONE_CHARS: usize = 64;

/// The visitor's browser as the widget describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisitorContext {
    /// The page the visitor is on.
    pub page: Option<String>,
    /// The page that linked to it (`document.referrer`).
    pub referrer: Option<String>,
    /// The browser's language (`navigator.language`), such as `de-DE`.
    pub language: Option<String>,
    /// The browser's IANA time zone, such as `Europe/Berlin`.
    pub time_zone: Option<String>,
    /// Who the host page says the visitor is, verified or not; set once `hello` is checked.
    pub identity: Option<VisitorIdentity>,
    /// The pre-chat form's answers, sent with the visitor's first message (stored once).
    pub prechat: Option<PrechatAnswers>,
}

impl VisitorContext {
    /// Keeps what is well-formed: URLs cut to [`MAX_URL_CHARS`] without control characters, a
    /// language tag of letters, digits and `-`, a time zone name of letters, digits and `_+-/`.
    pub fn from_hello(
        page: Option<String>,
        referrer: Option<String>,
        language: Option<String>,
        time_zone: Option<String>,
    ) -> Self {
        Self {
            page: page.and_then(|p| url(&p)),
            referrer: referrer.and_then(|r| url(&r)),
            language: language.filter(|l| is_language_tag(l)),
            time_zone: time_zone.filter(|z| is_time_zone_name(z)),
            identity: None,
            prechat: None,
        }
    }
}

fn url(raw: &str) -> Option<String> {
    let kept: String = raw
        .trim()
        .chars()
        .filter(|&c| super::text::is_url_char(c))
        .take(MAX_URL_CHARS)
        .collect();
    (!kept.is_empty()).then_some(kept)
}

fn is_language_tag(tag: &str) -> bool {
    (1..=MAX_LANGUAGE_CHARS).contains(&tag.len())
        && tag.starts_with(|c: char| c.is_ascii_alphabetic())
        && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn is_time_zone_name(name: &str) -> bool {
    (1..=MAX_TIME_ZONE_CHARS).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+-/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(language: &str, time_zone: &str) -> VisitorContext {
        VisitorContext::from_hello(None, None, Some(language.into()), Some(time_zone.into()))
    }

    #[test]
    fn well_formed_hints_are_kept() {
        let kept = context("pt-BR", "America/Argentina/Buenos_Aires");
        assert_eq!(kept.language.as_deref(), Some("pt-BR"));
        assert_eq!(
            kept.time_zone.as_deref(),
            Some("America/Argentina/Buenos_Aires")
        );
        assert_eq!(
            context("en", "Etc/GMT+5").time_zone.as_deref(),
            Some("Etc/GMT+5")
        );
    }

    #[test]
    fn malformed_hints_are_dropped() {
        for (language, time_zone) in [
            ("", ""),
            ("de DE", "Europe/Berlin<script>"),
            ("<b>", "/etc/passwd"),
            ("-x", "Europe/../x"),
            (&"a".repeat(36), &"A".repeat(65)),
        ] {
            let dropped = context(language, time_zone);
            assert_eq!((dropped.language, dropped.time_zone), (None, None));
        }
    }

    #[test]
    fn urls_are_cut_and_lose_control_characters() {
        let long = format!("https://example.com/{}", "a".repeat(3000));
        let kept = VisitorContext::from_hello(
            Some(long),
            Some(" https://search.example/?q=a\nb\u{202E}\u{200B} ".into()),
            None,
            None,
        );
        assert_eq!(kept.page.map(|p| p.chars().count()), Some(MAX_URL_CHARS));
        assert_eq!(
            kept.referrer.as_deref(),
            Some("https://search.example/?q=ab")
        );
        assert_eq!(
            VisitorContext::from_hello(Some("  ".into()), None, None, None).page,
            None
        );
    }
}
