//! The files of an agent's reply in a Slack thread: each is downloaded from Slack's file host
//! with the bot token, checked as a widget upload is (the site's size limit, the type sniffed
//! from the bytes, image metadata stripped) and stored as an upload the reply takes. A file that
//! is not passed on becomes a short line of the reply naming it, never a silent loss.

use serde_json::Value;

use crate::attachments::{self, HARD_CAP_BYTES, MAX_PER_MESSAGE};
use crate::chat;
use crate::chat::attachment_megabytes;
use crate::store::{self, SiteId, Uploader};

use super::{DownloadError, SlackInbound, SlackIntegration};

/// What became of an event's files.
#[derive(Debug, Default)]
pub(super) struct Received {
    /// Public ids of the stored uploads, in the event's order.
    pub ids: Vec<String>,
    /// One line for each file not passed on, naming it and saying why.
    pub notes: Vec<String>,
}

impl Received {
    /// The reply's text with a line for each file not passed on.
    pub(super) fn text_with_notes(&self, text: &str) -> String {
        std::iter::once(text.trim())
            .chain(self.notes.iter().map(String::as_str))
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Downloads, checks and stores the files of `event` for the reply of `uploader` on `site`
/// (none for a note: each is named instead).
///
/// # Errors
/// Storage errors only; every failure of a file becomes a note.
pub(super) async fn receive_files(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    site: SiteId,
    uploader: Uploader,
    event: &Value,
    is_note: bool,
) -> Result<Received, chat::Error> {
    let mut received = Received::default();
    let Some(files) = event["files"].as_array().filter(|f| !f.is_empty()) else {
        return Ok(received);
    };
    let limit = inbound
        .readers
        .read(move |c| store::find_attachment_limit(c, site))
        .await?
        .min(HARD_CAP_BYTES);
    for (n, file) in files.iter().enumerate() {
        let name = file_name(file);
        let taken = if is_note {
            // As in the inbox: a note carries no files.
            Taken::Refused("a private note carries no files".to_owned())
        } else if n >= MAX_PER_MESSAGE {
            Taken::Refused(format!("more than {MAX_PER_MESSAGE} files in one message"))
        } else {
            receive_file(inbound, slack, site, uploader, file, &name, limit).await?
        };
        match taken {
            Taken::Stored(id) => received.ids.push(id),
            Taken::Refused(why) => received
                .notes
                .push(format!("[file {name} not passed on: {why}]")),
        }
    }
    Ok(received)
}

/// What became of one file.
enum Taken {
    /// Stored as the upload with this public id.
    Stored(String),
    /// Not passed on, for this reason.
    Refused(String),
}

/// Downloads, checks and stores one file.
async fn receive_file(
    inbound: &SlackInbound,
    slack: &SlackIntegration,
    site: SiteId,
    uploader: Uploader,
    file: &Value,
    name: &str,
    limit: u64,
) -> Result<Taken, chat::Error> {
    let too_large = || {
        if limit == 0 {
            "this site does not accept files".to_owned()
        } else {
            format!(
                "larger than this site's {} MB limit",
                attachment_megabytes(limit)
            )
        }
    };
    if limit == 0 || file["size"].as_u64().is_some_and(|size| size > limit) {
        return Ok(Taken::Refused(too_large()));
    }
    let Some(url) = file["url_private_download"]
        .as_str()
        .or_else(|| file["url_private"].as_str())
    else {
        return Ok(Taken::Refused("Slack did not make it available".to_owned()));
    };
    let token = &slack.secrets.bot_token;
    let data = match inbound.api.download_file(token, url, limit).await {
        Ok(data) => data,
        Err(DownloadError::TooLarge) => return Ok(Taken::Refused(too_large())),
        Err(DownloadError::Refused) => {
            tracing::warn!(
                url,
                "refused to download a Slack file from a host other than Slack's file host"
            );
            return Ok(Taken::Refused("it is not on Slack's file host".to_owned()));
        }
        Err(DownloadError::Failed(why)) => {
            tracing::warn!(error = why, "could not download a file from Slack");
            return Ok(Taken::Refused(
                "it could not be downloaded from Slack".to_owned(),
            ));
        }
    };
    match attachments::store_upload(&inbound.writer, site, uploader, name, data).await {
        Ok(meta) => Ok(Taken::Stored(meta.id)),
        Err(attachments::Error::Store(err)) => Err(err.into()),
        Err(err) => Ok(Taken::Refused(err.to_string())),
    }
}

/// The file's name as Slack gives it (its title, else a generic name).
fn file_name(file: &Value) -> String {
    ["name", "title"]
        .iter()
        .find_map(|key| file[*key].as_str().filter(|s| !s.trim().is_empty()))
        .unwrap_or("file")
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '[' | ']'))
        .take(120)
        .collect()
}
