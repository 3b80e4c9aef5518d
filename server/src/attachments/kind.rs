//! The allow-list of file types, each recognised by its first bytes (magic numbers).

/// A file type Porch accepts as an attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Png,
    Jpeg,
    Gif,
    Webp,
    Pdf,
    /// UTF-8 text without control characters other than tab, line feed, carriage return and
    /// form feed.
    Text,
}

impl Kind {
    /// Recognises `data` by its content alone; `None` for anything not on the allow-list.
    pub fn sniff(data: &[u8]) -> Option<Self> {
        if data.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Self::Png)
        } else if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(Self::Jpeg)
        } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
            Some(Self::Gif)
        } else if data.len() >= 12 && data.starts_with(b"RIFF") && &data[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else if data.starts_with(b"%PDF-") {
            Some(Self::Pdf)
        } else if is_plain_text(data) {
            Some(Self::Text)
        } else {
            None
        }
    }

    /// The `Content-Type` it is stored and served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
            Self::Pdf => "application/pdf",
            Self::Text => "text/plain; charset=utf-8",
        }
    }

    /// The kind a stored content type names.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        [
            Self::Png,
            Self::Jpeg,
            Self::Gif,
            Self::Webp,
            Self::Pdf,
            Self::Text,
        ]
        .into_iter()
        .find(|kind| kind.content_type() == content_type)
    }

    /// Images are shown inline; everything else is only ever downloaded.
    pub fn is_image(self) -> bool {
        matches!(self, Self::Png | Self::Jpeg | Self::Gif | Self::Webp)
    }

    /// File name endings that fit the kind; the first is added to a name that has none of them.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Self::Png => &["png"],
            Self::Jpeg => &["jpg", "jpeg"],
            Self::Gif => &["gif"],
            Self::Webp => &["webp"],
            Self::Pdf => &["pdf"],
            Self::Text => &["txt", "log", "csv", "md"],
        }
    }
}

fn is_plain_text(data: &[u8]) -> bool {
    !data.is_empty()
        && std::str::from_utf8(data).is_ok_and(|text| {
            text.chars()
                .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r' | '\x0c'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_bytes() {
        assert_eq!(Kind::sniff(b"\x89PNG\r\n\x1a\nrest"), Some(Kind::Png));
        assert_eq!(Kind::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(Kind::Jpeg));
        assert_eq!(Kind::sniff(b"GIF89a..."), Some(Kind::Gif));
        assert_eq!(Kind::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(Kind::Webp));
        assert_eq!(Kind::sniff(b"%PDF-1.7"), Some(Kind::Pdf));
        assert_eq!(Kind::sniff("héllo\r\n\tworld".as_bytes()), Some(Kind::Text));
    }

    #[test]
    fn anything_else_is_refused() {
        for data in [
            &b""[..],
            b"MZ\x90\0",
            b"PK\x03\x04",
            b"text with a \0 NUL",
            b"\x1b[31mescape",
            b"\xff\xfe not utf-8",
        ] {
            assert_eq!(Kind::sniff(data), None, "{data:?}");
        }
    }

    #[test]
    fn content_types_round_trip() {
        for kind in [
            Kind::Png,
            Kind::Jpeg,
            Kind::Gif,
            Kind::Webp,
            Kind::Pdf,
            Kind::Text,
        ] {
            assert_eq!(Kind::from_content_type(kind.content_type()), Some(kind));
        }
    }
}
