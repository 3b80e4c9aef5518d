//! Files through the Slack Web API: sharing a file into a thread with the external upload flow
//! (`files.getUploadURLExternal`, the bytes to the upload URL, `files.completeUploadExternal`)
//! and downloading an agent's file from `url_private_download`. Only Slack's file host (or the
//! mock's, when `PORCH_SLACK_API_URL` points at one) is ever contacted with the bot token.

use reqwest::{StatusCode, Url};
use serde_json::{Value, json};

use super::api::retry_after;
use super::{CallError, SlackApi};
use crate::integrations::send_error;

/// Slack's API host; any other base is a mock (or a proxy) whose own host serves the files.
const SLACK_API_HOST: &str = "slack.com";
/// The only host Slack serves `url_private` files and upload URLs from.
const SLACK_FILE_HOST: &str = "files.slack.com";

/// Why a file could not be downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DownloadError {
    /// The URL is not on Slack's file host: it was not fetched.
    Refused,
    /// Larger than the limit: the download was stopped there.
    TooLarge,
    /// Slack did not hand it over (status, network, timeout).
    Failed(String),
}

impl SlackApi {
    /// The URL, if it is on Slack's file host: `https://files.slack.com`, or the configured base
    /// URL's scheme, host and port when that is not Slack's (the mock). Anything else is refused,
    /// so a crafted event cannot make Porch send its bot token, or a request, elsewhere.
    pub fn file_url(&self, raw: &str) -> Option<Url> {
        let url = Url::parse(raw).ok()?;
        // User info would replace the bot token with the event's own credentials.
        if !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        let is_slack = url.scheme() == "https"
            && url.host_str() == Some(SLACK_FILE_HOST)
            && url.port().is_none();
        let base = Url::parse(&self.base).ok()?;
        let is_mock = base.host_str() != Some(SLACK_API_HOST) && url.origin() == base.origin();
        (is_slack || is_mock).then_some(url)
    }

    /// Calls `method` with form-encoded arguments (the files methods take no JSON bodies).
    async fn call_form(
        &self,
        method: &str,
        token: &str,
        form: &[(&str, String)],
    ) -> Result<Value, CallError> {
        let body =
            serde_urlencoded::to_string(form).map_err(|e| CallError::Network(e.to_string()))?;
        let request = self
            .http
            .post(format!("{}/{method}", self.base))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        self.send(request, token).await
    }

    /// Shares `data` as `name` into `thread_ts` of `channel`: an upload URL, the bytes, and the
    /// completion (which is what makes the file appear). Returns Slack's file id.
    ///
    /// # Errors
    /// The first step's failure. A failure of the completion may have had its effect.
    pub async fn share_file(
        &self,
        token: &str,
        channel: &str,
        thread_ts: &str,
        name: &str,
        data: Vec<u8>,
    ) -> Result<String, CallError> {
        let form = [
            ("filename", name.to_owned()),
            ("length", data.len().to_string()),
        ];
        let answer = self
            .call_form("files.getUploadURLExternal", token, &form)
            .await?;
        let missing = |what: &str| CallError::Slack {
            error: format!("missing_{what}"),
            status: 200,
        };
        let file_id = answer["file_id"]
            .as_str()
            .ok_or_else(|| missing("file_id"))?;
        let upload_url = answer["upload_url"]
            .as_str()
            .and_then(|u| self.file_url(u))
            .ok_or_else(|| missing("upload_url"))?;
        self.upload(upload_url, data).await?;
        let files = json!([{"id": file_id, "title": name}]).to_string();
        let form = [
            ("files", files),
            ("channel_id", channel.to_owned()),
            ("thread_ts", thread_ts.to_owned()),
        ];
        self.call_form("files.completeUploadExternal", token, &form)
            .await?;
        Ok(file_id.to_owned())
    }

    /// Posts the bytes to an upload URL Slack handed out (it needs no token).
    async fn upload(&self, url: Url, data: Vec<u8>) -> Result<(), CallError> {
        let response = self
            .http
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(data)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| CallError::Network(send_error::describe(e)))?;
        match response.status() {
            StatusCode::TOO_MANY_REQUESTS => Err(CallError::RateLimited {
                retry_after: retry_after(&response),
            }),
            status if status.is_success() => Ok(()),
            status => Err(CallError::Http {
                status: status.as_u16(),
            }),
        }
    }

    /// Downloads a file from `url_private_download` with the bot token, stopping past `limit`
    /// bytes.
    ///
    /// # Errors
    /// [`DownloadError::Refused`] for a URL off Slack's file host (nothing is sent),
    /// [`DownloadError::TooLarge`] past `limit`, else [`DownloadError::Failed`].
    pub async fn download_file(
        &self,
        token: &str,
        raw_url: &str,
        limit: u64,
    ) -> Result<Vec<u8>, DownloadError> {
        let url = self.file_url(raw_url).ok_or(DownloadError::Refused)?;
        let failed = |e: reqwest::Error| DownloadError::Failed(send_error::describe(e));
        let mut response = self
            .http
            .get(url)
            .bearer_auth(token)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(failed)?;
        if !response.status().is_success() {
            return Err(DownloadError::Failed(format!(
                "HTTP {} from Slack",
                response.status().as_u16()
            )));
        }
        if response.content_length().is_some_and(|n| n > limit) {
            return Err(DownloadError::TooLarge);
        }
        let mut data = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            data.extend_from_slice(&chunk);
            if data.len() as u64 > limit {
                return Err(DownloadError::TooLarge);
            }
        }
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(base: &str) -> SlackApi {
        // As at start-up (`HttpClients::build`); ignored when another test installed it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        SlackApi::new(reqwest::Client::new(), base)
    }

    #[test]
    fn only_slack_file_host_is_fetched_from() {
        let slack = api("https://slack.com/api");
        assert!(
            slack
                .file_url("https://files.slack.com/files-pri/T1-F1/a.png")
                .is_some()
        );
        for url in [
            "http://files.slack.com/files-pri/T1-F1/a.png",
            "https://files.slack.com:8443/a.png",
            "https://files.slack.com.evil.example/a.png",
            "https://user@files.slack.com/a.png",
            "https://169.254.169.254/latest/meta-data",
            "https://slack.com/api/auth.test",
            "file:///etc/passwd",
            "not a url",
        ] {
            assert!(slack.file_url(url).is_none(), "{url}");
        }
    }

    #[test]
    fn a_mock_base_serves_its_own_files_only() {
        let mock = api("http://127.0.0.1:4000/api");
        assert!(mock.file_url("http://127.0.0.1:4000/files/F1").is_some());
        assert!(mock.file_url("https://files.slack.com/a.png").is_some());
        assert!(mock.file_url("http://127.0.0.1:4001/files/F1").is_none());
        assert!(mock.file_url("http://localhost:4000/files/F1").is_none());
        assert!(
            mock.file_url("http://user:pw@127.0.0.1:4000/files/F1")
                .is_none()
        );
    }
}
