//! What a `bad_frame` error says: which rule of the widget protocol a client's frame broke
//! (docs/widget-protocol.md, "error").

/// What a `bad_frame` error's `message` says: which rule a frame broke, for the developer of a
/// client ("unknown variant `mesage`, expected one of …", "missing field `client_id`",
/// "duplicate field `body`"), in serde's words with where in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFrame(String);

impl BadFrame {
    /// The most of the detail a message carries: it may quote the frame (an unknown type).
    const DETAIL_CHARS: usize = 200;

    pub fn new(detail: &str) -> Self {
        let mut cut: String = detail.chars().take(Self::DETAIL_CHARS).collect();
        if cut.len() < detail.len() {
            cut.push('…');
        }
        Self(format!("That frame does not fit the protocol: {cut}."))
    }

    /// A binary frame: the protocol is JSON text.
    pub fn binary() -> Self {
        Self::new("a binary frame, where the protocol takes JSON text frames")
    }

    /// A `hello` after the first.
    pub fn second_hello() -> Self {
        Self::new("a second hello, where a connection takes one")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widget::protocol::ClientFrame;

    /// A client's developer reads what did not fit, not a list of what might not have.
    #[test]
    fn a_bad_frame_says_what_did_not_fit() {
        let said = |text: &str| {
            ClientFrame::parse(text)
                .expect_err(text)
                .as_str()
                .to_owned()
        };
        for (text, detail) in [
            (r#"{"type":"mesage"}"#, "unknown variant `mesage`"),
            (
                r#"{"type":"message","body":"x"}"#,
                "missing field `client_id`",
            ),
            (
                r#"{"type":"message","client_id":"a","body":"a","body":"b"}"#,
                "duplicate field `body`",
            ),
            (r#"{"type":"typing","active":"yes"}"#, "expected a boolean"),
            ("[1]", "not a JSON object"),
            (r#""hello""#, "not a JSON object"),
            ("{not json", "key must be a string"),
            (
                r#"{"type":"message","client_id":"a","body":"\ud800"}"#,
                "a lone surrogate escape (\\uD800 to \\uDFFF without its pair)",
            ),
            (
                r#"{"type":"message","client_id":"a","body":"x\udc00"}"#,
                "a lone surrogate escape",
            ),
        ] {
            let message = said(text);
            assert!(
                message.starts_with("That frame does not fit the protocol: ")
                    && message.contains(detail),
                "{text}: {message}"
            );
        }
        // An unknown type is quoted, and a long one cut.
        let long = said(&format!(r#"{{"type":"{}"}}"#, "x".repeat(10_000)));
        assert!(long.chars().count() < 300 && long.ends_with("…."), "{long}");
        assert!(BadFrame::binary().as_str().contains("a binary frame"));
    }
}
