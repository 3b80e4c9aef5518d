//! Text between Porch and Slack: escaping visitor text for `mrkdwn` (only `&`, `<`, `>` are
//! control characters), and turning an agent's Slack text back into plain text.

use porch_app::chars::overrides_written_out;

/// At most this many people a reply mentions are looked up by name (each is one `users.info`
/// call unless cached); others stay as their Slack id.
const NAMED_MENTIONS: usize = 5;

/// Escapes `&`, `<` and `>` so visitor text cannot mention `@channel`, ping users or mask links,
/// and writes out the direction overrides, as the inbox does, so it cannot pass a reversed link
/// off as another (`porch_app::chars::overrides_written_out`).
pub fn escape(text: &str) -> String {
    let text = overrides_written_out(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// Plain text from Slack `mrkdwn`: `<url|label>` becomes `label (url)`, `<url>` the url,
/// `<@U123>` stays readable as `@U123`, and the three entities are decoded.
pub fn to_plain(text: &str) -> String {
    to_plain_named(text, &[])
}

/// The people a text mentions without a name (`<@U123>`, as Slack sends mentions now), each
/// once and at most [`NAMED_MENTIONS`]: looked up so the visitor reads `@Ana`, not an id.
pub fn unnamed_mentions(text: &str) -> Vec<&str> {
    let mut users: Vec<&str> = Vec::new();
    for piece in text.split("<@").skip(1) {
        let Some(end) = piece.find('>') else {
            continue;
        };
        let user = &piece[..end];
        if !user.is_empty() && !user.contains(['|', '<']) && !users.contains(&user) {
            users.push(user);
            if users.len() == NAMED_MENTIONS {
                break;
            }
        }
    }
    users
}

/// [`to_plain`], a mention without a label named from `names` (Slack user id, name).
pub fn to_plain_named(text: &str, names: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &rest[start + 1..start + end];
        let (target, label) = inner
            .split_once('|')
            .map_or((inner, None), |(t, l)| (t, Some(l)));
        let readable = if let Some(user) = target.strip_prefix('@') {
            let known = names.iter().find(|(id, _)| id == user);
            let name = label.or_else(|| known.map(|(_, name)| name.as_str()));
            marked('@', name.unwrap_or(user))
        } else if let Some(special) = target.strip_prefix('!') {
            special_mention(special, label)
        } else if let Some(channel) = target.strip_prefix('#') {
            marked('#', label.unwrap_or(channel))
        } else {
            let url = target.strip_prefix("mailto:").unwrap_or(target);
            match label {
                Some(label) if label != url => format!("{label} ({url})"),
                _ => url.to_owned(),
            }
        };
        out.push_str(&readable);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// `name` after `mark` (`@Ana`, `#general`), unless it already starts with it, as some labels do.
fn marked(mark: char, name: &str) -> String {
    if name.starts_with(mark) {
        name.to_owned()
    } else {
        format!("{mark}{name}")
    }
}

/// A `<!…>` token as Slack's clients show it: its label when it has one, written out (`@here`,
/// a group's `@team`, a date's fallback text such as `Feb 18, 2014`); without one, `@here`,
/// `@channel` or `@everyone`, `@group` for a user group, and for a date, whose label Slack
/// requires, `a date`.
fn special_mention(special: &str, label: Option<&str>) -> String {
    if let Some(label) = label {
        return label.to_owned();
    }
    match special.split('^').next().unwrap_or_default() {
        "subteam" => "@group".to_owned(),
        "date" => "a date".to_owned(),
        name => marked('@', name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_overrides_are_written_out_then_escaped() {
        assert_eq!(
            escape("pay at https://evil.example/\u{202E}moc.elpmaxe"),
            "pay at https://evil.example/&lt;U+202E&gt;moc.elpmaxe"
        );
    }

    #[test]
    fn escaping_neutralises_mentions_and_links() {
        assert_eq!(
            escape("<!channel> & <https://evil|x>"),
            "&lt;!channel&gt; &amp; &lt;https://evil|x&gt;"
        );
    }

    #[test]
    fn slack_markup_becomes_plain_text() {
        assert_eq!(
            to_plain("see <https://a.example/x|the docs> &amp; <mailto:a@b.c|a@b.c>"),
            "see the docs (https://a.example/x) & a@b.c"
        );
        assert_eq!(to_plain("hi <@U123> 1 &lt; 2"), "hi @U123 1 < 2");
        assert_eq!(to_plain("unclosed <tag"), "unclosed <tag");
    }

    #[test]
    fn mentions_are_named_when_their_names_are_known() {
        let text = "<@U1> and <@U2|old> ask <@U1>; <@U3> too, <@> <@U4";
        assert_eq!(unnamed_mentions(text), ["U1", "U3"]);
        let names = [("U1".to_owned(), "Ana".to_owned())];
        assert_eq!(
            to_plain_named(text, &names),
            "@Ana and @old ask @Ana; @U3 too, @ <@U4"
        );
        let many = "<@U0> <@U1> <@U2> <@U3> <@U4> <@U5> <@U6>";
        assert_eq!(unnamed_mentions(many).len(), NAMED_MENTIONS);
    }

    #[test]
    fn special_mentions_read_as_slack_shows_them() {
        let text = "A <!subteam^S1|@team> B <!subteam^S2> C <!here|@here> D \
                    <!date^1392734382^{date}|Feb 18, 2014> E <@U123|bob> F <#C1> G <!channel> \
                    <#C2|#general>";
        assert_eq!(
            to_plain(text),
            "A @team B @group C @here D Feb 18, 2014 E @bob F #C1 G @channel #general"
        );
    }

    #[test]
    fn escape_then_plain_round_trips() {
        let text = "a < b && c > d <script>";
        assert_eq!(to_plain(&escape(text)), text);
    }
}
