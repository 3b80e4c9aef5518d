//! File names as shown and downloaded: no path, no control or direction-changing characters,
//! an ending that fits the sniffed kind, and the RFC 6266 `Content-Disposition` header.

use std::fmt::Write as _;

use super::Kind;

/// Longest name kept, in characters (the ending is kept when cutting).
const MAX_NAME_CHARS: usize = 120;

/// The name to store for an upload the client called `raw`, of kind `kind`: the last path
/// component, without control characters or Unicode direction overrides, trimmed, at most
/// 120 characters, and ending in an extension of `kind` (added when missing or wrong, so
/// `page.html` holding text is stored as `page.html.txt`).
pub fn sanitise_name(raw: &str, kind: Kind) -> String {
    let last = raw.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last
        .chars()
        .filter(|c| !c.is_control() && !is_direction_control(*c))
        .collect();
    let trimmed = clean.trim_matches(|c: char| c.is_whitespace() || c == '.');
    let fitting = trimmed.rsplit_once('.').filter(|(_, ending)| {
        kind.extensions()
            .iter()
            .any(|e| e.eq_ignore_ascii_case(ending))
    });
    let (stem, ending) = fitting.unwrap_or((trimmed, kind.extensions()[0]));
    // The stem is cut so that the whole name, ending included, fits.
    let room = MAX_NAME_CHARS - 1 - ending.chars().count();
    let stem: String = stem.chars().take(room).collect();
    let stem = stem.trim_end_matches(|c: char| c.is_whitespace() || c == '.');
    let stem = if stem.is_empty() { "file" } else { stem };
    format!("{stem}.{ending}")
}

/// Characters that reorder how text is displayed (RLO and friends): a name like
/// `invoice\u{202E}fdp.exe` would otherwise show as `invoiceexe.pdf`.
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The `Content-Disposition` value (RFC 6266): `inline` or `attachment`, an ASCII `filename`
/// fallback and the exact name as UTF-8 in `filename*` (RFC 8187).
pub fn content_disposition(name: &str, is_inline: bool) -> String {
    let kind = if is_inline { "inline" } else { "attachment" };
    let fallback: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for byte in name.bytes() {
        // RFC 8187 attr-char: ALPHA / DIGIT / "!#$&+-.^_`|~"; everything else percent-encoded.
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    format!("{kind}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_controls_and_direction_overrides_go() {
        assert_eq!(
            sanitise_name("C:\\Users\\ann\\photo.PNG", Kind::Png),
            "photo.PNG"
        );
        assert_eq!(sanitise_name("../../etc/passwd", Kind::Text), "passwd.txt");
        assert_eq!(sanitise_name("a\u{0}b\nc.pdf", Kind::Pdf), "abc.pdf");
        assert_eq!(
            sanitise_name("invoice\u{202E}fdp.exe", Kind::Pdf),
            "invoicefdp.exe.pdf"
        );
        assert_eq!(sanitise_name("  ..  ", Kind::Jpeg), "file.jpg");
        assert_eq!(sanitise_name("page.html", Kind::Text), "page.html.txt");
        let long = sanitise_name(&"x".repeat(500), Kind::Gif);
        assert_eq!((long.chars().count(), long.ends_with("x.gif")), (120, true));
        let long = sanitise_name(&format!("{}.txt", "c".repeat(118)), Kind::Text);
        assert_eq!((long.chars().count(), long.ends_with("c.txt")), (120, true));
        let long = sanitise_name(&format!("{}.html", "b".repeat(119)), Kind::Text);
        assert_eq!((long.chars().count(), long.ends_with("b.txt")), (120, true));
        assert_eq!(sanitise_name(".png", Kind::Png), "png.png");
    }

    #[test]
    fn the_disposition_has_an_ascii_fallback_and_the_exact_name() {
        assert_eq!(
            content_disposition("Rechnung März \"1\".pdf", false),
            "attachment; filename=\"Rechnung M_rz _1_.pdf\"; \
             filename*=UTF-8''Rechnung%20M%C3%A4rz%20%221%22.pdf"
        );
        assert!(content_disposition("a.png", true).starts_with("inline; "));
    }
}
