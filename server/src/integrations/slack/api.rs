//! A small client for the Slack Web API methods Porch uses. It sends and parses; deciding what
//! an error means for a job is the caller's business.

use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use crate::integrations::send_error;

/// Bound on one Slack call unless configured (`PORCH_SLACK_TIMEOUT`); Slack normally answers in
/// well under a second.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Used when a 429 carries no (or an unreadable) `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// HTTP 429, or `ok: false` with `ratelimited`.
    RateLimited { retry_after: Duration },
    /// `ok: false` with Slack's error code (`invalid_auth`, `channel_not_found`, …).
    Slack { error: String, status: u16 },
    /// A non-2xx status that is not a rate limit.
    Http { status: u16 },
    /// No answer: connect, timeout or a broken body. The request may have had an effect.
    Network(String),
}

impl CallError {
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::RateLimited { .. } => Some(429),
            Self::Slack { status, .. } | Self::Http { status } => Some(*status),
            Self::Network(_) => None,
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RateLimited { retry_after } => write!(f, "rate limited for {retry_after:?}"),
            Self::Slack { error, .. } => write!(f, "Slack answered {error}"),
            Self::Http { status } => write!(f, "HTTP {status} from Slack"),
            Self::Network(e) => write!(f, "no answer from Slack: {e}"),
        }
    }
}

/// Who a bot token belongs to (`auth.test`).
#[derive(Debug, Clone, Deserialize)]
pub struct AuthInfo {
    pub team_id: String,
    pub user_id: String,
    #[serde(default)]
    pub bot_id: Option<String>,
}

/// A Slack user as far as Porch cares.
#[derive(Debug, Clone)]
pub struct SlackUser {
    pub display_name: String,
    pub email: Option<String>,
}

/// One page of `conversations.history`, newest message first.
#[derive(Debug, Clone, Default)]
pub struct HistoryPage {
    pub messages: Vec<Value>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// The Slack Web API at `base` (`https://slack.com/api`, or a mock in tests).
#[derive(Clone)]
pub struct SlackApi {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
    /// Bound on one call. A call that runs into it may still have had its effect at Slack.
    pub(super) timeout: Duration,
}

impl SlackApi {
    pub fn new(http: reqwest::Client, base: &str) -> Self {
        Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same client with another bound on each call.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Calls `method` with a JSON body and the token as a bearer; returns the `ok` body.
    async fn call(&self, method: &str, token: &str, body: &Value) -> Result<Value, CallError> {
        // Slack answers a bare `application/json` with a `missing_charset` warning.
        let request = self
            .http
            .post(format!("{}/{method}", self.base))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/json; charset=utf-8",
            )
            .body(body.to_string());
        self.send(request, token).await
    }

    /// Calls a read `method` with `GET` and its arguments in the query string: Slack's read
    /// methods (`users.info`, `conversations.history`) do not accept a JSON body.
    async fn read(
        &self,
        method: &str,
        token: &str,
        query: &[(&str, &str)],
    ) -> Result<Value, CallError> {
        let url = reqwest::Url::parse_with_params(&format!("{}/{method}", self.base), query)
            .map_err(|e| CallError::Network(e.to_string()))?;
        self.send(self.http.get(url), token).await
    }

    /// Sends a prepared request with the token and the timeout; returns the `ok` body.
    pub(super) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        token: &str,
    ) -> Result<Value, CallError> {
        let response = request
            .bearer_auth(token)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| CallError::Network(send_error::describe(e)))?;
        let status = response.status();
        // Read before the body takes the response: a `ratelimited` error in a 200 carries it too.
        let wait = retry_after(&response);
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::RateLimited { retry_after: wait });
        }
        if !status.is_success() {
            return Err(CallError::Http {
                status: status.as_u16(),
            });
        }
        let value: Value = response
            .json()
            .await
            .map_err(|e| CallError::Network(send_error::describe(e)))?;
        if value.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(value);
        }
        let error = value
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("unknown_error")
            .to_owned();
        if error == "ratelimited" || error == "rate_limited" {
            return Err(CallError::RateLimited { retry_after: wait });
        }
        Err(CallError::Slack {
            error,
            status: status.as_u16(),
        })
    }

    /// `chat.postMessage`; returns the new message's `ts`.
    pub async fn post_message(&self, token: &str, message: &Value) -> Result<String, CallError> {
        let answer = self.call("chat.postMessage", token, message).await?;
        answer
            .get("ts")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| CallError::Slack {
                error: "missing_ts".into(),
                status: 200,
            })
    }

    /// `conversations.history` of `channel` from `oldest` up to `latest` (Slack timestamps, both
    /// inclusive when given), with message metadata. Needs `channels:history` (`groups:history` for
    /// private channels).
    pub async fn history(
        &self,
        token: &str,
        channel: &str,
        oldest: &str,
        latest: Option<&str>,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<HistoryPage, CallError> {
        let limit = limit.to_string();
        let mut query = vec![
            ("channel", channel),
            ("oldest", oldest),
            ("inclusive", "true"),
            ("include_all_metadata", "true"),
            ("limit", limit.as_str()),
        ];
        if let Some(latest) = latest {
            query.push(("latest", latest));
        }
        if let Some(cursor) = cursor.filter(|c| !c.is_empty()) {
            query.push(("cursor", cursor));
        }
        let mut answer = self.read("conversations.history", token, &query).await?;
        let messages = match answer.get_mut("messages").map(Value::take) {
            Some(Value::Array(messages)) => messages,
            _ => Vec::new(),
        };
        let next_cursor = answer["response_metadata"]["next_cursor"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .filter(|_| answer["has_more"].as_bool() != Some(false));
        Ok(HistoryPage {
            messages,
            next_cursor,
        })
    }

    /// `chat.update`: replaces the text (and blocks) of a message the bot posted.
    pub async fn update_message(&self, token: &str, message: &Value) -> Result<(), CallError> {
        self.call("chat.update", token, message).await.map(|_| ())
    }

    /// `chat.postEphemeral`: a message only `user` sees, in `channel` (in a thread if
    /// `thread_ts` is given).
    pub async fn post_ephemeral(
        &self,
        token: &str,
        channel: &str,
        user: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> Result<(), CallError> {
        let mut body = serde_json::json!({"channel": channel, "user": user, "text": text});
        if let Some(thread_ts) = thread_ts {
            body["thread_ts"] = Value::from(thread_ts);
        }
        self.call("chat.postEphemeral", token, &body)
            .await
            .map(|_| ())
    }

    /// `views.open`: shows a modal to the user whose action gave `trigger_id` (valid 3 s).
    pub async fn open_view(
        &self,
        token: &str,
        trigger_id: &str,
        view: &Value,
    ) -> Result<(), CallError> {
        let body = serde_json::json!({"trigger_id": trigger_id, "view": view});
        self.call("views.open", token, &body).await.map(|_| ())
    }

    /// `auth.test`: checks a bot token and says whose it is.
    pub async fn auth_test(&self, token: &str) -> Result<AuthInfo, CallError> {
        let answer = self
            .call("auth.test", token, &Value::Object(serde_json::Map::new()))
            .await?;
        serde_json::from_value(answer).map_err(|e| CallError::Network(e.to_string()))
    }

    /// `users.info`: the display name and (with `users:read.email`) the email of a user.
    pub async fn user_info(&self, token: &str, user: &str) -> Result<SlackUser, CallError> {
        let answer = self.read("users.info", token, &[("user", user)]).await?;
        let profile = &answer["user"]["profile"];
        let pick = |key: &str| {
            profile[key]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Ok(SlackUser {
            display_name: pick("display_name")
                .or_else(|| pick("real_name"))
                .or_else(|| answer["user"]["name"].as_str().map(str::to_owned))
                .unwrap_or_else(|| user.to_owned()),
            email: pick("email"),
        })
    }

    /// `apps.connections.open` with an app-level token: a Socket Mode websocket URL.
    pub async fn open_connection(&self, app_token: &str) -> Result<String, CallError> {
        let answer = self
            .call(
                "apps.connections.open",
                app_token,
                &Value::Object(serde_json::Map::new()),
            )
            .await?;
        answer
            .get("url")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| CallError::Slack {
                error: "missing_url".into(),
                status: 200,
            })
    }
}

pub(super) fn retry_after(response: &reqwest::Response) -> Duration {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_RETRY_AFTER, Duration::from_secs)
}
