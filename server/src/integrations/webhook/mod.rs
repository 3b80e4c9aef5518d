//! Outgoing webhooks: events sent to admins' endpoints, signed per Standard Webhooks v1, with a
//! delivery log and replays.

mod deliver;
mod setup;
mod signing;

pub use deliver::{BODY_CAP, deliver};
pub use setup::{WebhookSetup, check_webhook};
pub use signing::{
    ROTATION_OVERLAP_MS, WebhookConfig, WebhookSecrets, new_secret, sign, signature_header,
};
