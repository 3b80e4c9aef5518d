//! A visitor message with attachments in Slack: its text (which names the files) as a reply in
//! the thread, then each file shared into the thread with the external upload flow. Each part
//! is recorded once Slack confirmed it, so a retry of the same job (a 429 or 5xx, a crash, a
//! blocked integration resumed) goes on where the last attempt stopped and never shares twice.

use std::collections::HashMap;

use serde_json::Value;

use crate::clock::now_ms;
use crate::integrations::Destinations;
use crate::integrations::delivery::retry;
use crate::jobs::{Attempt, Outcome};
use crate::store::{self, IntegrationId, MessageFile, MessageId, SLACK_TEXT_PART};

use super::deliver::classify;
use super::{CallError, SlackIntegration};

/// What the post of one message is, and how far earlier attempts got.
pub(super) struct FilePost<'a> {
    pub integration: IntegrationId,
    pub message: MessageId,
    pub slack: &'a SlackIntegration,
    pub thread_ts: &'a str,
    /// The `chat.postMessage` body of the text reply.
    pub reply: &'a Value,
    pub files: Vec<MessageFile>,
    /// Parts already done: `text` or an attachment's public id, to Slack's reference.
    pub done: HashMap<String, String>,
}

/// Posts what is not done yet of a message with files; delivered once every part is.
pub(super) async fn post_with_files(
    destinations: &Destinations,
    post: FilePost<'_>,
) -> Result<Attempt, Attempt> {
    let api = &destinations.slack;
    let token = &post.slack.secrets.bot_token;
    let failed = |err: &CallError| Attempt::new(classify(err), err.http_status());
    let text_ts = match post.done.get(SLACK_TEXT_PART) {
        Some(ts) => ts.clone(),
        None => {
            let ts = api
                .post_message(token, post.reply)
                .await
                .map_err(|e| failed(&e))?;
            record(destinations, &post, SLACK_TEXT_PART, &ts).await?;
            ts
        }
    };
    for file in post
        .files
        .iter()
        .filter(|f| !post.done.contains_key(&f.public_id))
    {
        let row = file.row;
        let data = destinations
            .readers
            .read(move |c| store::read_attachment_data(c, row))
            .await
            .map_err(|err| retry(format!("could not read the file: {err}")))?;
        let channel = &post.slack.config.channel_id;
        match api
            .share_file(token, channel, post.thread_ts, &file.name, data)
            .await
        {
            Ok(file_id) => record(destinations, &post, &file.public_id, &file_id).await?,
            Err(err) => return Err(file_failure(&err, &file.name)),
        }
    }
    Ok(Attempt::new(
        Outcome::Delivered {
            external_ref: Some(text_ts),
        },
        Some(200),
    ))
}

/// A file that could not be shared: as any Slack failure, but a refusal says which scope, or
/// which file, and that the text (which names the files) reached the thread. The file's name,
/// the visitor's words, comes after the first `": "`, so the log never carries it
/// (`jobs::runner::loggable`); a blocked integration's error, logged whole, does not name it,
/// as the missing scope is the cause.
fn file_failure(err: &CallError, name: &str) -> Attempt {
    let outcome = match classify(err) {
        Outcome::Blocked { .. } => Outcome::Blocked {
            error: format!(
                "Slack refused to share the message's files: {err} (the app needs the \
                 files:write scope); the message's text, naming its files, was posted"
            ),
        },
        Outcome::Failed { .. } => Outcome::Failed {
            error: format!(
                "Slack refused to share a file: {name}: {err}; the message's text, naming its \
                 files, was posted"
            ),
        },
        passing => passing,
    };
    Attempt::new(outcome, err.http_status())
}

/// Records a part as done. Should this write fail after Slack confirmed, the retry repeats the
/// part: at least once, as every delivery.
async fn record(
    destinations: &Destinations,
    post: &FilePost<'_>,
    part: &str,
    slack_ref: &str,
) -> Result<(), Attempt> {
    let (integration, message) = (post.integration, post.message);
    let (part, slack_ref) = (part.to_owned(), slack_ref.to_owned());
    destinations
        .writer
        .write(move |c| {
            store::insert_slack_share(c, integration, message, &part, &slack_ref, now_ms())
        })
        .await
        .map_err(|err| retry(format!("could not record what was shared: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::loggable;

    /// A file's name is the visitor's words: the deliveries list shows it, the log never does,
    /// whether the refusal fails the job or blocks the integration (logged whole).
    #[test]
    fn a_refused_file_is_named_to_the_admin_and_never_in_the_log() {
        let name = "passport-Gus-1970-01-01.txt";
        let failed = file_failure(
            &CallError::Slack {
                error: "invalid_name".into(),
                status: 200,
            },
            name,
        );
        let Outcome::Failed { error } = &failed.outcome else {
            panic!("{:?}", failed.outcome);
        };
        assert!(error.contains(name), "{error}");
        assert_eq!(loggable(error), "Slack refused to share a file");
        let blocked = file_failure(
            &CallError::Slack {
                error: "missing_scope".into(),
                status: 200,
            },
            name,
        );
        let Outcome::Blocked { error } = &blocked.outcome else {
            panic!("{:?}", blocked.outcome);
        };
        assert!(
            !error.contains(name) && error.contains("files:write"),
            "{error}"
        );
    }
}
