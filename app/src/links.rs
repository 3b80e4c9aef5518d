//! Links in message text: `http://` and `https://` URLs become links that open in a new tab and
//! tell the target nothing (`rel="noopener noreferrer nofollow"`); everything else stays text,
//! escaped by Leptos like any other text. No other scheme is ever linked, nor an address with a
//! user name in it.

use leptos::prelude::*;

/// A run of a message's text: plain, or a URL to link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment<'a> {
    Text(&'a str),
    Link(&'a str),
}

/// Characters that end a sentence around a URL rather than belong to it.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"', '>'];

/// Splits `text` into plain runs and URLs. A URL starts with `http://` or `https://` (any case)
/// at the start of the text or after a space, an opening bracket or quote or a direction control,
/// runs to the next whitespace, `<`, `>`, `"` or direction control, and leaves out trailing punctuation (a closing parenthesis stays when the URL
/// opened one, as in Wikipedia links).
pub fn segments(text: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut plain_from = 0;
    let mut at = 0;
    while let Some(found) = next_url_start(text, at) {
        let end = text[found..]
            .find(ends_url)
            .map_or(text.len(), |n| found + n);
        let url = trim_trailing(&text[found..end]);
        let is_https = url
            .get(..8)
            .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        let scheme_len = if is_https { 8 } else { 7 };
        // A user name in the address (`https://support.acme.com@evil.example/`) makes it read as
        // another host than the one it opens: left as text, as is a scheme with nothing after it.
        let host_part = url[scheme_len.min(url.len())..]
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default();
        if url.len() <= scheme_len || host_part.contains('@') {
            at = end;
            continue;
        }
        if plain_from < found {
            out.push(Segment::Text(&text[plain_from..found]));
        }
        out.push(Segment::Link(url));
        plain_from = found + url.len();
        at = plain_from;
    }
    if plain_from < text.len() {
        out.push(Segment::Text(&text[plain_from..]));
    }
    out
}

/// True for a character no URL in a message runs over: whitespace, the `<`, `>` and `"` that a
/// URL can never hold unencoded (the widget's panel stops at the same ones), and the direction
/// controls, which no address holds either: the link's text is then its address as written.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '<' | '>' | '"') || crate::chars::is_direction_control(c)
}

/// Where the next URL starts at or after byte `from`.
fn next_url_start(text: &str, from: usize) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let mut search = from;
    while let Some(n) = lower[search..].find("http") {
        let start = search + n;
        let rest = &lower[start..];
        let is_scheme = rest.starts_with("http://") || rest.starts_with("https://");
        let is_word_start = text[..start].chars().next_back().is_none_or(|c| {
            c.is_whitespace() || "([{<\"'".contains(c) || crate::chars::is_direction_control(c)
        });
        if is_scheme && is_word_start {
            return Some(start);
        }
        search = start + 4;
    }
    None
}

fn trim_trailing(url: &str) -> &str {
    let mut url = url;
    while let Some(last) = url.chars().next_back() {
        let keeps_paren = last == ')' && url.matches('(').count() >= url.matches(')').count();
        if !TRAILING.contains(&last) || keeps_paren {
            break;
        }
        url = &url[..url.len() - last.len_utf8()];
    }
    url
}

/// A message's text with its URLs linked, each isolated from the text around it (`<bdi>`), and
/// the direction overrides written out ([`crate::chars::overrides_written_out`]).
pub fn linked_text(text: &str) -> impl IntoView {
    segments(text)
        .into_iter()
        .map(|segment| match segment {
            Segment::Text(plain) => crate::chars::overrides_written_out(plain)
                .into_owned()
                .into_any(),
            Segment::Link(url) => view! {
                <a href=url.to_owned() rel="noopener noreferrer nofollow" target="_blank"><bdi>{url.to_owned()}</bdi></a>
            }
            .into_any(),
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_found_and_sentence_punctuation_is_left_out() {
        assert_eq!(
            segments("see https://example.com/a?b=1, then reply."),
            [
                Segment::Text("see "),
                Segment::Link("https://example.com/a?b=1"),
                Segment::Text(", then reply."),
            ]
        );
        assert_eq!(
            segments("(http://x.example/wiki/A_(b))"),
            [
                Segment::Text("("),
                Segment::Link("http://x.example/wiki/A_(b)"),
                Segment::Text(")"),
            ]
        );
        // Where the widget's panel stops too: a quote or angle bracket ends the URL.
        assert_eq!(
            segments(r#"https://e.example/a"b <https://f.example/c>"#),
            [
                Segment::Link("https://e.example/a"),
                Segment::Text(r#""b <"#),
                Segment::Link("https://f.example/c"),
                Segment::Text(">"),
            ]
        );
    }

    #[test]
    fn an_address_with_a_user_name_stays_text() {
        let text =
            "Reset it at https://support.acme.com@evil.example/reset or https://a.example/@me";
        assert_eq!(
            segments(text),
            [
                Segment::Text("Reset it at https://support.acme.com@evil.example/reset or "),
                Segment::Link("https://a.example/@me"),
            ]
        );
        assert_eq!(
            segments("http://user:pw@example.com/p"),
            [Segment::Text("http://user:pw@example.com/p")]
        );
    }

    #[test]
    fn only_http_and_https_are_linked() {
        for text in [
            "javascript:alert(1)",
            "data:text/html,<b>x</b>",
            "ftp://example.com",
            "xhttps://example.com",
            "https://",
        ] {
            assert!(
                segments(text).iter().all(|s| matches!(s, Segment::Text(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn the_text_is_kept_whole() {
        for text in [
            "",
            "no links",
            "a https://b.example c http://d.example",
            "HTTPS://E.EXAMPLE!",
        ] {
            let joined: String = segments(text)
                .iter()
                .map(|s| match s {
                    Segment::Text(t) | Segment::Link(t) => *t,
                })
                .collect();
            assert_eq!(joined, text);
        }
    }

    #[test]
    fn markup_in_a_message_stays_text_and_a_link_cannot_break_out() {
        let html = view! { <p>{linked_text(
            r#"<b>hi</b> https://e.example/"onmouseover="x"#
        )}</p> }
        .to_html();
        assert!(html.contains("&lt;b&gt;hi&lt;/b&gt;"), "{html}");
        assert!(
            !html.contains(r#"" onmouseover"#) && !html.contains(r#""onmouseover="x""#),
            "{html}"
        );
        assert!(
            html.contains(r#"rel="noopener noreferrer nofollow""#),
            "{html}"
        );
    }

    /// A direction override cannot make a link's text read as another address: the link ends
    /// before it, and the override is written out for the agent to see.
    #[test]
    fn a_direction_override_ends_a_link_and_is_written_out() {
        let text =
            "see https://evil.example/\u{202E}moc.elpmaxe and \u{2067}https://a.example/x\u{2069}";
        assert_eq!(
            segments(text),
            [
                Segment::Text("see "),
                Segment::Link("https://evil.example/"),
                Segment::Text("\u{202E}moc.elpmaxe and \u{2067}"),
                Segment::Link("https://a.example/x"),
                Segment::Text("\u{2069}"),
            ]
        );
        let html = view! { <p>{linked_text(text)}</p> }.to_html();
        assert!(
            html.contains(
                r#"target="_blank"><bdi>https://evil.example/</bdi></a>&lt;U+202E&gt;moc.elpmaxe"#
            ),
            "{html}"
        );
        assert!(!html.contains('\u{202E}'), "{html}");
        // Isolates, which bidirectional software inserts, stay as typed.
        assert!(html.contains('\u{2067}'), "{html}");
    }
}
