//! What an agent asks of Porch from Slack, parsed from the two shapes Slack sends it in: a slash
//! command (`/porch close 42`; the same fields as a form over HTTP or as JSON over Socket Mode)
//! and an interactivity payload (a message shortcut on a thread's message, or the submitted note
//! modal). Parsing only; doing it is `actions.rs`'s.

use serde_json::{Value, json};

use crate::chat::MessageBody;
use crate::store::ConversationId;

use super::to_plain;

/// `callback_id`s of the message shortcuts (and of the note modal) the manifest declares.
pub const SHORTCUT_CLOSE: &str = "porch_close";
pub const SHORTCUT_REOPEN: &str = "porch_reopen";
pub const SHORTCUT_ASSIGN: &str = "porch_assign";
pub const SHORTCUT_NOTE: &str = "porch_note";
/// The note modal's input: its block and action ids.
const NOTE_BLOCK: &str = "note";
const NOTE_INPUT: &str = "text";

/// A change to a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Close,
    Reopen,
    /// Assign to the agent who asked.
    Assign,
    /// A private note with this text (plain, not yet checked for length).
    Note(String),
}

impl Action {
    /// The name the audit log and the answers use.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Close => "close",
            Self::Reopen => "reopen",
            Self::Assign => "assign",
            Self::Note(_) => "note",
        }
    }
}

/// Which conversation a request is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A thread in the integration's workspace: the conversation whose thread it is.
    Thread {
        channel_id: String,
        thread_ts: String,
    },
    /// A conversation by its number (slash commands, which Slack sends without any thread).
    Number(ConversationId),
}

/// What was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    Act(Target, Action),
    /// The note shortcut: show the note modal (with `trigger_id`, valid for 3 s) for the thread.
    OpenNote {
        target: Target,
        trigger_id: String,
    },
    Help,
    /// A slash command Porch does not understand; the text is echoed in the answer.
    Unknown(String),
}

/// One request from a Slack user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub team_id: String,
    /// The Slack user who asked (`U…`).
    pub user_id: String,
    /// Where the answer (an ephemeral message) goes: the channel and, for a shortcut, the thread.
    pub channel_id: String,
    pub thread_ts: Option<String>,
    pub ask: Ask,
}

/// A slash command's fields (a JSON object of strings: the HTTP form decoded, or a Socket Mode
/// `slash_commands` payload). `None` without the fields every command carries.
pub fn parse_command(fields: &Value) -> Option<Request> {
    let field = |key: &str| fields[key].as_str();
    let text = to_plain(field("text").unwrap_or_default());
    Some(Request {
        team_id: field("team_id")?.to_owned(),
        user_id: field("user_id")?.to_owned(),
        channel_id: field("channel_id")?.to_owned(),
        thread_ts: None,
        ask: parse_command_text(text.trim()),
    })
}

/// `help`, `close 42`, `reopen 42`, `assign 42`, `note 42 text…` (`#42` works too).
fn parse_command_text(text: &str) -> Ask {
    let (verb, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let verb = verb.to_ascii_lowercase();
    if verb.is_empty() || verb == "help" {
        return Ask::Help;
    }
    let rest = rest.trim_start();
    let (number, note) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let Some(id) = number
        .trim_start_matches('#')
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
    else {
        return Ask::Unknown(text.to_owned());
    };
    let action = match verb.as_str() {
        "close" => Action::Close,
        "reopen" => Action::Reopen,
        "assign" => Action::Assign,
        "note" => Action::Note(note.trim().to_owned()),
        _ => return Ask::Unknown(text.to_owned()),
    };
    Ask::Act(Target::Number(ConversationId(id)), action)
}

/// An interactivity payload (HTTP `payload=` or a Socket Mode `interactive` envelope's payload):
/// a message shortcut or the note modal's submission. `None` for anything else (other
/// interactions are acknowledged and ignored).
pub fn parse_interaction(payload: &Value) -> Option<Request> {
    let team_id = payload["team"]["id"].as_str()?.to_owned();
    let user_id = payload["user"]["id"].as_str()?.to_owned();
    match payload["type"].as_str()? {
        "message_action" => {
            let channel_id = payload["channel"]["id"].as_str()?.to_owned();
            let message = &payload["message"];
            // A reply names its thread; a thread's first message (the header) is the thread.
            let thread_ts = message["thread_ts"]
                .as_str()
                .or_else(|| message["ts"].as_str())?
                .to_owned();
            let target = Target::Thread {
                channel_id: channel_id.clone(),
                thread_ts: thread_ts.clone(),
            };
            let ask = match payload["callback_id"].as_str()? {
                SHORTCUT_CLOSE => Ask::Act(target, Action::Close),
                SHORTCUT_REOPEN => Ask::Act(target, Action::Reopen),
                SHORTCUT_ASSIGN => Ask::Act(target, Action::Assign),
                SHORTCUT_NOTE => Ask::OpenNote {
                    target,
                    trigger_id: payload["trigger_id"].as_str()?.to_owned(),
                },
                _ => return None,
            };
            Some(Request {
                team_id,
                user_id,
                channel_id,
                thread_ts: Some(thread_ts),
                ask,
            })
        }
        "view_submission" if payload["view"]["callback_id"].as_str() == Some(SHORTCUT_NOTE) => {
            let view = &payload["view"];
            let thread: Value = serde_json::from_str(view["private_metadata"].as_str()?).ok()?;
            let channel_id = thread["channel"].as_str()?.to_owned();
            let thread_ts = thread["thread_ts"].as_str()?.to_owned();
            let text = submitted_note(view).to_owned();
            Some(Request {
                team_id,
                user_id,
                channel_id: channel_id.clone(),
                thread_ts: Some(thread_ts.clone()),
                ask: Ask::Act(
                    Target::Thread {
                        channel_id,
                        thread_ts,
                    },
                    Action::Note(text),
                ),
            })
        }
        _ => None,
    }
}

/// The acknowledgement that keeps the note modal open with the reason under its field when the
/// submitted note could never be stored (nothing visible in it, a control character): the agent
/// fixes it where it was typed, instead of the modal closing on a note that is then refused in
/// an ephemeral message. `None` for anything else, which is acknowledged empty and done after
/// (a submission from another workspace than `team_id`, the integration's, is then ignored).
pub fn refused_submission(payload: &Value, team_id: &str) -> Option<Value> {
    let view = &payload["view"];
    if payload["type"] != "view_submission"
        || view["callback_id"] != SHORTCUT_NOTE
        || payload["team"]["id"] != team_id
    {
        return None;
    }
    let invalid = MessageBody::parse(submitted_note(view)).err()?;
    // A message's rules, said of the note the modal holds.
    let reason = invalid.to_string().replacen("The message", "The note", 1);
    Some(json!({"response_action": "errors", "errors": {NOTE_BLOCK: reason}}))
}

/// The text typed into the note modal.
fn submitted_note(view: &Value) -> &str {
    view["state"]["values"][NOTE_BLOCK][NOTE_INPUT]["value"]
        .as_str()
        .unwrap_or_default()
}

/// The note modal for a thread; the thread rides in `private_metadata` to the submission.
pub fn note_view(channel_id: &str, thread_ts: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": SHORTCUT_NOTE,
        "private_metadata": json!({"channel": channel_id, "thread_ts": thread_ts}).to_string(),
        "title": {"type": "plain_text", "text": "Private note"},
        "submit": {"type": "plain_text", "text": "Add note"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [{
            "type": "input",
            "block_id": NOTE_BLOCK,
            "label": {"type": "plain_text", "text": "Only agents see this note; the visitor never does."},
            "element": {"type": "plain_text_input", "action_id": NOTE_INPUT, "multiline": true,
                        "max_length": crate::chat::MAX_BODY_CHARS},
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_texts_name_an_action_and_a_conversation() {
        let ask = |text: &str| parse_command_text(text);
        assert_eq!(ask(""), Ask::Help);
        assert_eq!(ask("HELP"), Ask::Help);
        assert_eq!(
            ask("close 42"),
            Ask::Act(Target::Number(ConversationId(42)), Action::Close)
        );
        assert_eq!(
            ask("reopen #7"),
            Ask::Act(Target::Number(ConversationId(7)), Action::Reopen)
        );
        assert_eq!(
            ask("note 3   call them back  "),
            Ask::Act(
                Target::Number(ConversationId(3)),
                Action::Note("call them back".into())
            )
        );
        assert_eq!(ask("close"), Ask::Unknown("close".into()));
        assert_eq!(ask("close -1"), Ask::Unknown("close -1".into()));
        assert_eq!(ask("archive 4"), Ask::Unknown("archive 4".into()));
    }

    #[test]
    fn a_shortcut_on_a_reply_targets_its_thread_and_on_the_header_the_header() {
        let shortcut = |message: Value| {
            json!({"type": "message_action", "callback_id": SHORTCUT_CLOSE, "trigger_id": "t",
                   "team": {"id": "T1"}, "user": {"id": "U1"}, "channel": {"id": "C1"},
                   "message": message})
        };
        let on_reply = parse_interaction(&shortcut(json!({"ts": "2.0", "thread_ts": "1.0"})));
        let on_header = parse_interaction(&shortcut(json!({"ts": "1.0"})));
        for request in [on_reply, on_header] {
            let request = request.expect("parsed");
            assert_eq!(
                request.ask,
                Ask::Act(
                    Target::Thread {
                        channel_id: "C1".into(),
                        thread_ts: "1.0".into()
                    },
                    Action::Close
                )
            );
        }
    }
}
