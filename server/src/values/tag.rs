//! A conversation's tag (docs/admin.md, "Tags"): a short name agents sort conversations by,
//! "refund" or "vip plan". Written as typed, read the same way by everyone: lower case, one
//! space between words, so "VIP  Plan" and "vip plan" are one tag.

use super::Invalid;

/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 40;

/// Characters a tag may have besides letters and digits (of any script) and spaces. No comma:
/// it separates tags where several are typed at once.
const TAG_PUNCTUATION: &[char] = &['-', '_', '.', '/', '&', '+', '#', '\''];

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
        let name = raw
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase();
        if name.is_empty() {
            return Err(Invalid::from("A tag needs at least one letter or digit."));
        }
        if name.chars().count() > MAX_TAG_CHARS {
            return Err(Invalid::from(format!(
                "A tag has at most {MAX_TAG_CHARS} characters."
            )));
        }
        if let Some(bad) = name
            .chars()
            .find(|&c| !(c.is_alphanumeric() || c == ' ' || TAG_PUNCTUATION.contains(&c)))
        {
            return Err(Invalid::from(format!(
                "A tag has letters, digits, spaces and - _ . / & + # ' only, not {bad:?}."
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
    /// The first piece that is not a valid tag, as [`Tag::parse`] says.
    pub fn parse_list(raw: &str) -> Result<Vec<Self>, Invalid> {
        let mut tags: Vec<Self> = Vec::new();
        for piece in raw.split(',').filter(|p| !p.trim().is_empty()) {
            let tag = Self::parse(piece)?;
            if !tags.contains(&tag) {
                tags.push(tag);
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
            "line\u{0}",
            "emoji 🎉",
        ] {
            assert!(Tag::parse(refused).is_err(), "{refused:?}");
        }
        assert!(Tag::parse(&"x".repeat(MAX_TAG_CHARS + 1)).is_err());
    }

    #[test]
    fn a_list_skips_empty_pieces_and_repeats() {
        let tags = Tag::parse_list("refund, VIP,,refund , vip").expect("tags");
        let names: Vec<_> = tags.iter().map(Tag::as_str).collect();
        assert_eq!(names, ["refund", "vip"]);
        assert!(Tag::parse_list("refund, <x>").is_err());
        assert!(Tag::parse_list(" , ").expect("none").is_empty());
    }
}
