//! What the visitor wrote in a mail reply: HTML turned into plain text (tags dropped, never
//! interpreted; quoted `<blockquote>`s, scripts and styles left out) and the quoted history cut
//! off (`>` lines, "On … wrote:" and its translations, Outlook's header block, the signature).

/// "On … wrote:" in the languages mail clients most often write it: how the line starts and the
/// verb it holds; it ends with ':'.
const ATTRIBUTIONS: &[(&str, &str)] = &[
    ("On ", "wrote"),
    ("Am ", "schrieb"),
    ("Le ", "écrit"),
    ("El ", "escribió"),
    ("Op ", "schreef"),
    ("Op ", "geschreven"),
    ("Il ", "scritto"),
    ("Em ", "escreveu"),
    ("Den ", "skrev"),
    ("W dniu ", "napisał"),
];

/// Lines that start a forwarded or quoted original in Outlook and others.
const SEPARATORS: &[&str] = &[
    "-----Original Message-----",
    "-----Ursprüngliche Nachricht-----",
    "-----Message d'origine-----",
    "-----Mensaje original-----",
    "Begin forwarded message:",
];

/// Header names of Outlook's quoted header block ("From: … / Sent: … / To: …").
const OUTLOOK_FROM: &[&str] = &["From:", "Von:", "De :", "De:", "Van:", "Da:"];
const OUTLOOK_NEXT: &[&str] = &[
    "Sent:",
    "Date:",
    "Gesendet:",
    "Envoyé :",
    "Enviado:",
    "Verzonden:",
    "Inviato:",
    "To:",
];

/// The new text of a reply: everything above the first sign of quoted history, without quoted
/// (`>`) lines and the signature, trimmed.
pub fn strip_quoted(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.lines().collect();
    let end = history_start(&lines).unwrap_or(lines.len());
    let mut kept: Vec<&str> = Vec::new();
    for line in &lines[..end] {
        // "-- " is the signature separator (RFC 3676 §4.3); some clients drop the space.
        if *line == "-- " || *line == "--" {
            break;
        }
        if line.trim_start().starts_with('>') {
            continue;
        }
        kept.push(line.trim_end());
    }
    while kept
        .last()
        .is_some_and(|l| l.is_empty() || is_device_footer(l))
    {
        kept.pop();
    }
    kept.join("\n").trim().to_owned()
}

/// "Sent from my iPhone" and the like, which mobile clients append.
fn is_device_footer(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("Sent from my ") || line.starts_with("Get Outlook for ")
}

/// The first line of the quoted history, if any.
fn history_start(lines: &[&str]) -> Option<usize> {
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim();
        if SEPARATORS.iter().any(|s| line.starts_with(s))
            || (line.len() >= 20 && line.chars().all(|c| c == '_'))
        {
            return Some(i);
        }
        // Clients wrap a long attribution, so it may end on the next line.
        let joined = match lines.get(i + 1) {
            Some(next) if !line.ends_with(':') => format!("{line} {}", next.trim()),
            _ => line.to_owned(),
        };
        if is_attribution(&joined) && (joined.contains('@') || followed_by_quote_or_end(lines, i)) {
            return Some(i);
        }
        if OUTLOOK_FROM.iter().any(|h| line.starts_with(h))
            && lines
                .get(i + 1)
                .is_some_and(|next| OUTLOOK_NEXT.iter().any(|h| next.trim().starts_with(h)))
        {
            return Some(i);
        }
    }
    None
}

fn is_attribution(line: &str) -> bool {
    line.len() < 300
        && line.ends_with(':')
        && ATTRIBUTIONS
            .iter()
            .any(|(start, verb)| line.starts_with(start) && line.contains(verb))
}

/// An attribution without an address is only history if what follows is quoted or nothing
/// is left, so "On Monday I wrote:" in the visitor's own text is kept when their text goes on.
fn followed_by_quote_or_end(lines: &[&str], at: usize) -> bool {
    lines
        .iter()
        .skip(at + 1)
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .is_none_or(|l| l.starts_with('>'))
}

/// Plain text of an HTML body, for a reply without a text part. Tags are dropped (never
/// interpreted: the result is shown escaped like any message), the content of `<blockquote>`
/// (the quoted history of most clients), `<script>`, `<style>` and `<head>` is left out, and
/// blocks become line breaks.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut skip_depth: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        if skip_depth.is_empty() {
            push_text(&mut out, &rest[..lt]);
        }
        let after = &rest[lt + 1..];
        let Some(gt) = after.find('>') else {
            rest = "";
            break;
        };
        let tag = &after[..gt];
        rest = &after[gt + 1..];
        if tag.starts_with("!--") {
            // A comment may hold '>'; skip to its real end.
            if let Some(end) = rest.find("-->").filter(|_| !tag.ends_with("--")) {
                rest = &rest[end + 3..];
            }
            continue;
        }
        let is_end = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if matches!(name.as_str(), "blockquote" | "script" | "style" | "head") {
            if is_end {
                if skip_depth.last() == Some(&name) {
                    skip_depth.pop();
                }
            } else if !tag.ends_with('/') {
                skip_depth.push(name.clone());
            }
            continue;
        }
        if skip_depth.is_empty()
            && matches!(
                name.as_str(),
                "br" | "p" | "div" | "li" | "tr" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
            )
        {
            out.push('\n');
        }
    }
    if skip_depth.is_empty() {
        push_text(&mut out, rest);
    }
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let mut text = lines.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text.trim().to_owned()
}

/// Appends HTML text with its white space collapsed and entities decoded.
fn push_text(out: &mut String, raw: &str) {
    let mut collapsed = String::with_capacity(raw.len());
    for word in raw.split_ascii_whitespace() {
        if !collapsed.is_empty() {
            collapsed.push(' ');
        }
        collapsed.push_str(word);
    }
    if raw.starts_with(|c: char| c.is_ascii_whitespace()) && !out.ends_with(['\n', ' ']) {
        out.push(' ');
    }
    out.push_str(&decode_entities(&collapsed));
    if raw.ends_with(|c: char| c.is_ascii_whitespace()) && !collapsed.is_empty() {
        out.push(' ');
    }
}

/// Decodes the entities mail clients use; anything else stays as written.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let decoded = after.find(';').filter(|&semi| semi <= 10).and_then(|semi| {
            let name = &after[..semi];
            let ch = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            ch.map(|c| (c, semi))
        });
        match decoded {
            Some((c, semi)) => {
                out.push(c);
                rest = &after[semi + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gmail_reply_keeps_only_the_new_text() {
        let mail = "Yes, the blue one please.\n\nOn Tue, Dec 1, 2026 at 10:02 AM Shop <\nchat@porch.test> wrote:\n\n> Ana replied to your conversation on Shop:\n>\n> Which colour?\n";
        assert_eq!(strip_quoted(mail), "Yes, the blue one please.");
    }

    #[test]
    fn apple_mail_reply_with_device_footer() {
        let mail = "Thanks!\r\n\r\nSent from my iPhone\r\n\r\n> On 1 Dec 2026, at 10:02, Shop <chat@porch.test> wrote:\r\n>\r\n> Which colour?\r\n";
        assert_eq!(strip_quoted(mail), "Thanks!");
    }

    #[test]
    fn outlook_reply_cuts_at_the_header_block() {
        let mail = "Tomorrow works.\r\n\r\n________________________________\r\nFrom: Shop <chat@porch.test>\r\nSent: Tuesday, December 1, 2026 10:02 AM\r\nTo: ana@example.org\r\nSubject: New reply from Shop\r\n\r\nWhich day?\r\n";
        assert_eq!(strip_quoted(mail), "Tomorrow works.");
        let plain = "Tomorrow.\n\nFrom: Shop <chat@porch.test>\nSent: Tuesday\nWhich day?";
        assert_eq!(strip_quoted(plain), "Tomorrow.");
    }

    #[test]
    fn german_and_french_attributions_and_signatures() {
        let de = "Passt.\n\nAm Di., 1. Dez. 2026 um 10:02 Uhr schrieb Shop <chat@porch.test>:\n> Welche Farbe?";
        assert_eq!(strip_quoted(de), "Passt.");
        let fr = "D'accord.\n-- \nAna Dupont\n06 12 34 56 78\n\nLe mar. 1 déc. 2026 à 10:02, Shop <chat@porch.test> a écrit :\n> Quelle couleur ?";
        assert_eq!(strip_quoted(fr), "D'accord.");
    }

    #[test]
    fn own_text_that_looks_like_an_attribution_is_kept() {
        let mail = "On Monday I wrote:\nthe parcel never came.\nCan you check?";
        assert_eq!(strip_quoted(mail), mail);
    }

    #[test]
    fn interleaved_quotes_keep_the_answers() {
        let mail = "> Which colour?\nBlue.\n> Which size?\nM.";
        assert_eq!(strip_quoted(mail), "Blue.\nM.");
    }

    #[test]
    fn html_is_turned_into_text_without_quotes_or_scripts() {
        let html = "<html><head><style>p{color:red}</style></head><body><div dir=\"ltr\">Blue &amp; <b>big</b>,<br>please&nbsp;&#x1F600;</div><script>alert(1)</script><div class=\"gmail_quote\"><div class=\"gmail_attr\">On Tue, Dec 1, 2026 at 10:02 AM Shop &lt;chat@porch.test&gt; wrote:<br></div><blockquote class=\"gmail_quote\">Which <blockquote>nested</blockquote> colour?</blockquote></div></body></html>";
        let text = html_to_text(html);
        assert_eq!(
            strip_quoted(&text),
            "Blue & big,\nplease \u{1F600}",
            "from {text:?}"
        );
    }

    #[test]
    fn markup_in_text_stays_text() {
        assert_eq!(
            html_to_text("&lt;script&gt;x&lt;/script&gt; <img src=x onerror=alert(1)>"),
            "<script>x</script>"
        );
    }
}
