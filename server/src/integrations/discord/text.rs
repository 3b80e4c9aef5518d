//! Visitor text as Discord shows it: markdown and mention syntax escaped so it shows as typed,
//! and split into posts within Discord's length limit without tearing a character or an escape.

use porch_app::chars::overrides_written_out;

/// What Discord leaves out at a link's end: `(see https://a.example/x).` links `…/x`.
const LEFT_OUT: [char; 8] = ['.', ',', ':', ';', '"', '\'', ')', ']'];

/// Discord's limit on `content`, in characters.
pub const CONTENT_LIMIT: usize = 2000;

/// Escapes the characters of Discord markdown and mention syntax with a backslash, so visitor
/// text shows as typed (mentions could not ping anyway: nothing is allowed to be mentioned).
/// Links are left as typed: Discord makes a link of `http(s)://…` before any markdown, so a
/// backslash there would become part of the link (`a\_b` opens `a/_b`). The direction overrides
/// are written out first, as the inbox does, so a link cannot be reversed into another's look
/// (`porch_app::chars::overrides_written_out`).
pub fn escape(text: &str) -> String {
    let text = overrides_written_out(text);
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = &*text;
    while let Some(c) = rest.chars().next() {
        let link = link_at(rest, out.chars().next_back());
        if link > 0 {
            // The punctuation after it as typed too: Discord's link takes any backslash there
            // (`(https://a.example/x\)` would open `…/x\`) and leaves the rest out, and a `)` or
            // `]` alone makes no markdown (the `(` or `[` before it is escaped).
            let tail = rest[link..]
                .find(|c: char| !LEFT_OUT.contains(&c))
                .unwrap_or(rest.len() - link);
            out.push_str(&rest[..link + tail]);
            rest = &rest[link + tail..];
            continue;
        }
        if matches!(
            c,
            '\\' | '*' | '_' | '~' | '`' | '|' | '>' | '#' | '-' | '[' | ']' | '(' | ')' | '<'
        ) || (c == '.' && rest[1..].starts_with(' ') && numbers_a_line(&out))
        {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Whether `out` ends in a line's number and nothing before it but spaces (`  12`): a `.` and
/// a space after it would make the line an ordered list, which Discord renumbers.
fn numbers_a_line(out: &str) -> bool {
    let line = out
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .trim_start_matches(' ');
    !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
}

/// The length of the link `text` starts with, as Discord finds one: `http://` or `https://`
/// (any case) after no letter or digit, running to white space or `<`, less the punctuation
/// Discord leaves out at its end. 0 if there is none. A backslash ends it too, so no
/// backslash of a link can escape the character after it.
fn link_at(text: &str, before: Option<char>) -> usize {
    if before.is_some_and(char::is_alphanumeric) {
        return 0;
    }
    let scheme = ["https://", "http://"].into_iter().find(|scheme| {
        text.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    });
    let Some(scheme) = scheme else {
        return 0;
    };
    let run = text
        .find(|c: char| c.is_whitespace() || c == '<' || c == '\\')
        .unwrap_or(text.len());
    let link = text[..run].trim_end_matches(LEFT_OUT);
    if link.len() > scheme.len() {
        link.len()
    } else {
        0
    }
}

/// Splits escaped `text` into parts of at most `limit` characters, at a line break or space when
/// one is near. A cut falls only between whole units: a grapheme (so no character, emoji or
/// accent is torn apart) that is not an escaping backslash waiting for the character it escapes
/// (a lone backslash at the end of a part would escape nothing, and the next part would lose it).
pub fn split(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(2);
    let ends = unit_ends(text);
    let mut parts = Vec::new();
    // Units consumed so far, and the char and byte offsets where the current part starts.
    let (mut next, mut start_char, mut start_byte) = (0, 0, 0);
    while ends.last().is_some_and(|last| last.0 - start_char > limit) {
        // The last unit end that fits, and the last one right after a line break or a space.
        let mut fit = None;
        let (mut at_newline, mut at_space) = (None, None);
        for (i, (end_char, _, last)) in ends.iter().enumerate().skip(next) {
            if end_char - start_char > limit {
                break;
            }
            fit = Some(i);
            match last {
                '\n' => at_newline = Some(i),
                ' ' => at_space = Some(i),
                _ => {}
            }
        }
        let near = |i: &usize| ends[*i].0 - start_char >= limit / 2;
        let cut = at_newline
            .filter(near)
            .or_else(|| at_space.filter(near))
            .or(fit);
        let (end_char, end_byte) = match cut {
            Some(i) => {
                next = i + 1;
                (ends[i].0, ends[i].1)
            }
            // One grapheme longer than a whole part (a pile of combining marks): cut it at a
            // character, which keeps the text valid; an escape stays whole, as it opens the unit
            // and a part holds at least two characters.
            None => {
                let byte = text[start_byte..]
                    .char_indices()
                    .nth(limit)
                    .map_or(text.len(), |(b, _)| start_byte + b);
                (start_char + limit, byte)
            }
        };
        parts.push(text[start_byte..end_byte].to_owned());
        start_char = end_char;
        start_byte = end_byte;
        while ends.get(next).is_some_and(|e| e.0 <= start_char) {
            next += 1;
        }
    }
    parts.push(text[start_byte..].to_owned());
    parts
}

/// Where each cuttable unit of escaped text ends: (chars before the end, bytes before the end,
/// the unit's last char). A backslash and the grapheme after it form one unit.
fn unit_ends(text: &str) -> Vec<(usize, usize, char)> {
    use unicode_segmentation::UnicodeSegmentation;
    let mut ends: Vec<(usize, usize, char)> = Vec::new();
    let (mut chars, mut escaping) = (0, false);
    for (byte, grapheme) in text.grapheme_indices(true) {
        chars += grapheme.chars().count();
        let end = byte + grapheme.len();
        let last = grapheme.chars().next_back().unwrap_or(' ');
        if escaping {
            escaping = false;
        } else if grapheme == "\\" {
            escaping = true;
            continue;
        }
        ends.push((chars, end, last));
    }
    if escaping {
        // A trailing lone backslash (not produced by `escape`): it ends the text all the same.
        ends.push((chars, text.len(), '\\'));
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_overrides_are_written_out_and_end_a_link() {
        assert_eq!(
            escape("pay at https://evil.example/\u{202E}moc.elpmaxe"),
            "pay at https://evil.example/\\<U+202E\\>moc.elpmaxe"
        );
    }

    #[test]
    fn the_punctuation_after_a_link_is_sent_as_typed() {
        assert_eq!(
            escape("Order (https://shop.example/o?id=42). See [https://docs.example/x]!"),
            "Order \\(https://shop.example/o?id=42). See \\[https://docs.example/x]!"
        );
        // Nested: every closing bracket of the run, not just the first.
        assert_eq!(
            escape("((https://a.example/x)) *"),
            "\\(\\(https://a.example/x)) \\*"
        );
    }

    #[test]
    fn markdown_is_escaped() {
        assert_eq!(escape("**hi** @everyone"), "\\*\\*hi\\*\\* @everyone");
        // A numbered line would be an ordered list; a number elsewhere stays as typed.
        assert_eq!(escape("1. one\n  12. two"), "1\\. one\n  12\\. two");
        assert_eq!(escape("v1. x 3.5 a 2. b"), "v1. x 3.5 a 2. b");
        // No masked link: its brackets are escaped (the `)` after the link is as typed).
        assert_eq!(escape("[x](http://a)"), "\\[x\\]\\(http://a)");
        // Links stay as typed, and what follows them is escaped again.
        assert_eq!(
            escape("see https://my-site.example/a_b_c?x=*1*. _ok_"),
            "see https://my-site.example/a_b_c?x=*1*. \\_ok\\_"
        );
        assert_eq!(
            escape("(HTTPS://a.example/x_y) <http://b.example/_>"),
            "\\(HTTPS://a.example/x_y) \\<http://b.example/_>"
        );
        // Not a link: no host, a letter before it, or a backslash that would escape what follows.
        assert_eq!(escape("http:// _x_"), "http:// \\_x\\_");
        assert_eq!(escape("xhttp://a_b"), "xhttp://a\\_b");
        assert_eq!(
            escape("http://a.example\\<@1>"),
            "http://a.example\\\\\\<@1\\>"
        );
    }

    #[test]
    fn long_text_is_split_within_the_limit() {
        let text = "word ".repeat(1000);
        let parts = split(&text, CONTENT_LIMIT);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.chars().count() <= CONTENT_LIMIT));
        assert_eq!(parts.concat(), text);
        assert_eq!(split("short", CONTENT_LIMIT), ["short"]);
    }

    /// Every part, read on its own, must show what its share of the visitor's text was.
    fn assert_whole_units(text: &str, parts: &[String], limit: usize) {
        assert_eq!(parts.concat(), text);
        for part in parts {
            assert!(part.chars().count() <= limit, "{part:?} over {limit}");
            assert!(!part.is_empty());
            // Unescaping a part consumes every backslash with the character after it.
            let mut chars = part.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    assert!(chars.next().is_some(), "lone backslash ends {part:?}");
                }
            }
        }
    }

    #[test]
    fn a_cut_never_falls_between_a_backslash_and_what_it_escapes() {
        // An escaped visitor backslash is two backslashes: the old check saw the second one at
        // the edge of a part and cut between the two.
        for text in ["a\\".repeat(700), "\\".repeat(1500), "x\\*".repeat(700)] {
            let escaped = escape(&text);
            let parts = split(&escaped, CONTENT_LIMIT);
            assert_whole_units(&escaped, &parts, CONTENT_LIMIT);
        }
        let parts = split(&escape(&format!("{}\\", "a".repeat(1999))), CONTENT_LIMIT);
        assert_eq!(parts, ["a".repeat(1999), "\\\\".to_owned()]);
    }

    #[test]
    fn a_cut_never_falls_inside_a_grapheme() {
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}";
        let text = format!("{}{family}{}", "a".repeat(1998), "b".repeat(10));
        let parts = split(&text, CONTENT_LIMIT);
        assert_eq!(parts[0], "a".repeat(1998));
        assert!(parts[1].starts_with(family));
        let accents = "e\u{301}".repeat(1500);
        let parts = split(&accents, CONTENT_LIMIT);
        assert!(parts.iter().all(|p| p.starts_with('e')), "{parts:?}");
        assert_whole_units(&accents, &parts, CONTENT_LIMIT);
    }

    /// A property over many generated texts (no proptest in the tree: a fixed-seed generator
    /// keeps it reproducible): whatever the text and the limit, parts are whole units.
    #[test]
    fn any_escaped_text_splits_into_whole_units() {
        const ALPHABET: [&str; 12] = [
            "a",
            " ",
            "\n",
            "\\",
            "*",
            "_",
            "é",
            "e\u{301}",
            "\u{1F44D}\u{1F3FD}",
            "日",
            "\\\\",
            "\u{1F468}\u{200D}\u{1F469}",
        ];
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            usize::try_from(seed >> 33).unwrap_or(0) % n
        };
        for _ in 0..300 {
            let len = 1 + next(400);
            let text: String = (0..len).map(|_| ALPHABET[next(ALPHABET.len())]).collect();
            let limit = 4 + next(60);
            let escaped = escape(&text);
            assert_whole_units(&escaped, &split(&escaped, limit), limit);
        }
    }
}
