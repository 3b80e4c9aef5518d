//! Turning on email for a site: when the digest and the replies are due.

use serde::Deserialize;

use crate::jobs::EmailDelays;

/// What an admin provides, in seconds.
#[derive(Debug, Deserialize)]
pub struct EmailSetup {
    /// Agents get the digest when a new conversation has no reply after this long.
    #[serde(default = "default_unanswered_after")]
    pub unanswered_after_secs: u32,
    /// An agent reply is mailed to a visitor who left an address if they are still away this
    /// long after it.
    #[serde(default = "default_reply_delay")]
    pub reply_delay_secs: u32,
}

fn default_unanswered_after() -> u32 {
    secs(EmailDelays::DEFAULT.unanswered_after)
}

fn default_reply_delay() -> u32 {
    secs(EmailDelays::DEFAULT.reply_delay)
}

fn secs(duration: std::time::Duration) -> u32 {
    u32::try_from(duration.as_secs()).unwrap_or(u32::MAX)
}

/// The stored settings (in milliseconds, as `EmailDelays::from_config` reads them).
pub fn email_config(setup: &EmailSetup) -> serde_json::Value {
    serde_json::json!({
        "unanswered_after_ms": i64::from(setup.unanswered_after_secs) * 1000,
        "reply_delay_ms": i64::from(setup.reply_delay_secs) * 1000,
    })
}
