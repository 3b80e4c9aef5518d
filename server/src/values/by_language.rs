//! A site's own texts in other languages (docs/widget.md, "Languages"), typed one a line as
//! `code: text` (`de: Hallo!`): the greeting on the site page, the away message on the hours
//! page. The widget shows the one in its language instead of the site's main text.

use std::collections::BTreeMap;

use super::Invalid;
use super::site::WIDGET_LOCALES;

/// Texts by language code (always one of [`WIDGET_LOCALES`]).
pub type ByLanguage = BTreeMap<String, String>;

/// What one kind of text is called in its refusals, and how long each may be.
#[derive(Debug, Clone, Copy)]
pub struct LanguageLines {
    pub shape: &'static str,
    pub unknown_code: &'static str,
    pub length: &'static str,
    pub twice: &'static str,
    pub max_chars: usize,
}

/// Greetings: 1 to 500 characters each.
pub const GREETING_LINES: LanguageLines = LanguageLines {
    shape: "Write each greeting in another language on its own line, as \"de: Hallo!\".",
    unknown_code: "A greeting's language code is not one the widget speaks (such as de or fr).",
    length: "Each greeting has 1 to 500 characters.",
    twice: "Write one greeting per language.",
    max_chars: 500,
};

/// Away messages: 1 to 500 characters each, like the main one.
pub const AWAY_LINES: LanguageLines = LanguageLines {
    shape: "Write each away message in another language on its own line, as \"de: Wir sind gleich zur\u{fc}ck.\".",
    unknown_code: "An away message's language code is not one the widget speaks (such as de or fr).",
    length: "Each away message in another language has 1 to 500 characters.",
    twice: "Write one away message per language.",
    max_chars: 500,
};

impl LanguageLines {
    /// Parses the lines; blank lines are skipped, code and text trimmed. A refusal starts with
    /// the line it is about (its first 40 characters), so the admin knows which one to fix.
    pub fn parse(&self, raw: &str) -> Result<ByLanguage, Invalid> {
        let mut texts = ByLanguage::new();
        for line in raw.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let refused = |reason: &str| {
                let shown: String = line.chars().take(40).collect();
                let more = if shown.len() < line.len() { "…" } else { "" };
                Invalid::from(format!("{shown}{more}: {reason}"))
            };
            let (code, text) = line.split_once(':').ok_or_else(|| refused(self.shape))?;
            // Codes are read in any case (`DE` is `de`), as the widget reads the browser's.
            let (code, text) = (code.trim().to_ascii_lowercase(), text.trim());
            if !WIDGET_LOCALES.iter().any(|(c, _)| *c == code) {
                return Err(refused(self.unknown_code));
            }
            if text.is_empty() || text.chars().count() > self.max_chars {
                return Err(refused(self.length));
            }
            if texts.insert(code, text.to_owned()).is_some() {
                return Err(refused(self.twice));
            }
        }
        Ok(texts)
    }
}

/// The lines that would parse back to `texts` (to fill a form, and as stored).
pub fn language_lines(texts: &ByLanguage) -> String {
    texts
        .iter()
        .map(|(code, text)| format!("{code}: {text}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_show_back_the_same() {
        let texts = AWAY_LINES
            .parse("\n fr : Nous sommes absents.\nDE: Wir sind weg: bis morgen.\n")
            .expect("valid");
        assert_eq!(texts["fr"], "Nous sommes absents.");
        assert_eq!(texts["de"], "Wir sind weg: bis morgen.");
        let shown = language_lines(&texts);
        assert_eq!(
            shown,
            "de: Wir sind weg: bis morgen.\nfr: Nous sommes absents."
        );
        assert_eq!(AWAY_LINES.parse(&shown), Ok(texts));
    }

    #[test]
    fn each_wrong_line_is_refused_with_its_reason() {
        let long = format!("de: {}", "x".repeat(501));
        let long_shown = format!("de: {}…", "x".repeat(36));
        for (raw, line, reason) in [
            ("Hallo!", "Hallo!", AWAY_LINES.shape),
            ("sv: Hej!", "sv: Hej!", AWAY_LINES.unknown_code),
            ("de:", "de:", AWAY_LINES.length),
            (long.as_str(), long_shown.as_str(), AWAY_LINES.length),
            ("de: Weg\nde: Auch weg", "de: Auch weg", AWAY_LINES.twice),
        ] {
            let named = Invalid::from(format!("{line}: {reason}"));
            assert_eq!(AWAY_LINES.parse(raw), Err(named), "{raw}");
        }
    }
}
