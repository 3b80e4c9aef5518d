//! A conversation's tag (docs/admin.md, "Tags"): a short name agents sort conversations by,
//! "refund" or "vip plan". Written as typed, read the same way by everyone: lower case, one
//! space between words, so "VIP  Plan" and "vip plan" are one tag.

use std::collections::HashSet;

use unicode_normalization::UnicodeNormalization as _;
use unicode_normalization::char::is_combining_mark;
use unicode_segmentation::UnicodeSegmentation as _;

use super::{Invalid, is_invisible};

/// Longest tag, in characters: the side panel's field says so too.
pub use porch_app::tags::MAX_TAG_CHARS;

/// Most tags one conversation has, and so most names one change may give.
pub const MAX_TAGS: usize = 20;

/// Characters a tag may have besides letters and digits (of any script) and spaces. No comma:
/// it separates tags where several are typed at once.
const TAG_PUNCTUATION: &[char] = &['-', '_', '.', '/', '&', '+', '#', '\''];

/// The first character a tag may not have. A tag is read by what a reader sees as one letter
/// (a grapheme): a letter or digit with the marks of its script (an accent typed apart, a Thai
/// tone mark, the dot that lower case gives "İ"), or one of the few allowed characters alone.
/// Nothing invisible, and no mark without its letter.
fn first_refused(name: &str) -> Option<char> {
    for grapheme in name.graphemes(true) {
        let mut chars = grapheme.chars();
        let Some(base) = chars.next() else {
            continue;
        };
        let is_letter = base.is_alphanumeric() && !is_combining_mark(base);
        if is_invisible(base) || !(is_letter || base == ' ' || TAG_PUNCTUATION.contains(&base)) {
            return Some(base);
        }
        if let Some(extra) = chars.find(|&c| !is_letter || !is_combining_mark(c)) {
            return Some(extra);
        }
    }
    None
}

/// A refused character as the error names it: itself in quotes, or its code point when it
/// shows nothing or sits on its neighbour (a mark).
fn shown(c: char) -> String {
    if c.is_control() || is_invisible(c) || c.is_whitespace() || is_combining_mark(c) {
        format!("U+{:04X}", u32::from(c))
    } else {
        format!("\u{201c}{c}\u{201d}")
    }
}

/// A valid tag name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tag(String);

impl Tag {
    /// Reads a tag as an agent typed it.
    ///
    /// # Errors
    /// `Invalid` for an empty tag, one longer than [`MAX_TAG_CHARS`], or one with a character
    /// other than letters, digits, spaces and `- _ . / & + # '`.
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        // Composed (NFC), so "café" typed either way is one tag.
        let name: String = raw
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
            .nfc()
            .collect();
        if name.is_empty() {
            return Err(Invalid::from("A tag needs at least one letter or digit."));
        }
        if name.chars().count() > MAX_TAG_CHARS {
            return Err(Invalid::from(format!(
                "A tag has at most {MAX_TAG_CHARS} characters."
            )));
        }
        if let Some(bad) = first_refused(&name) {
            return Err(Invalid::from(format!(
                "A tag has letters, digits, spaces and - _ . / & + # ' only, not {}.",
                shown(bad)
            )));
        }
        if !name.chars().any(char::is_alphanumeric) {
            return Err(Invalid::from("A tag needs at least one letter or digit."));
        }
        Ok(Self(name))
    }

    /// Reads tags typed in one field, separated by commas; empty pieces are skipped, and a tag
    /// typed twice counts once.
    ///
    /// # Errors
    /// As [`Tag::parse_all`] says.
    pub fn parse_list(raw: &str) -> Result<Vec<Self>, Invalid> {
        Self::parse_all(raw.split(',').filter(|p| !p.trim().is_empty()))
    }

    /// Reads several names, each once, in the order given.
    ///
    /// # Errors
    /// The first name that is not a valid tag, as [`Tag::parse`] says; more than [`MAX_TAGS`]
    /// different names (read no further: a body of a hundred thousand names costs no more).
    pub fn parse_all<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<Self>, Invalid> {
        let mut tags = Vec::new();
        let mut seen = HashSet::new();
        for name in names {
            let tag = Self::parse(name)?;
            if seen.insert(tag.clone()) {
                tags.push(tag);
            }
            if tags.len() > MAX_TAGS {
                // The list itself is too long, whatever the conversation has.
                return Err(Invalid::from(format!(
                    "At most {MAX_TAGS} different tags in one list."
                )));
            }
        }
        Ok(tags)
    }

    /// The tag's name, as stored and shown.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_lower_case_with_one_space_between_words() {
        assert_eq!(
            Tag::parse("  VIP \t Plan ").expect("tag").as_str(),
            "vip plan"
        );
        assert_eq!(
            Tag::parse("Überweisung").expect("tag").as_str(),
            "überweisung"
        );
        assert_eq!(Tag::parse("払い戻し").expect("tag").as_str(), "払い戻し");
        // Letters with their script's marks: an accent typed apart, Thai tone marks, Devanagari,
        // and the dot that lower case gives a Turkish capital I.
        for word in ["cafe\u{301}", "ที่นี่", "हिंदी", "İstanbul"] {
            assert!(Tag::parse(word).is_ok(), "{word}");
        }
        assert_eq!(
            Tag::parse("b2b/eu-west").expect("tag").as_str(),
            "b2b/eu-west"
        );
        assert_eq!(
            Tag::parse(&"x".repeat(MAX_TAG_CHARS))
                .expect("tag")
                .as_str()
                .len(),
            40
        );
    }

    #[test]
    fn what_is_not_a_tag_is_refused() {
        for refused in [
            "",
            "   ",
            "--",
            "a,b",
            "<b>",
            "a\u{202e}b",
            "a\u{200b}b",
            "a\u{200d}b",
            "-\u{301}",
            "\u{3164}",
            "\u{e31}x",
            "a\u{1f3fb}",
            "line\u{0}",
            "emoji 🎉",
        ] {
            assert!(Tag::parse(refused).is_err(), "{refused:?}");
        }
        assert!(Tag::parse(&"x".repeat(MAX_TAG_CHARS + 1)).is_err());
        let said = |raw: &str| Tag::parse(raw).map_or_else(|e| e.0.into_owned(), |_| String::new());
        assert!(
            said("a<b").ends_with("only, not \u{201c}<\u{201d}."),
            "{}",
            said("a<b")
        );
        assert!(
            said("a\u{200b}b").ends_with("only, not U+200B."),
            "{}",
            said("a\u{200b}b")
        );
    }

    #[test]
    fn a_list_skips_empty_pieces_and_repeats() {
        let tags = Tag::parse_list("refund, VIP,,refund , vip").expect("tags");
        let names: Vec<_> = tags.iter().map(Tag::as_str).collect();
        assert_eq!(names, ["refund", "vip"]);
        assert!(Tag::parse_list("refund, <x>").is_err());
        assert!(Tag::parse_list(" , ").expect("none").is_empty());
        let many: Vec<String> = (0..=MAX_TAGS).map(|n| format!("t{n}")).collect();
        assert!(Tag::parse_all(many.iter().map(String::as_str)).is_err());
        let same = vec!["vip"; 1000];
        assert_eq!(Tag::parse_all(same).expect("one").len(), 1);
    }
}
