//! One module per outside service Porch delivers to: each owns its settings and secrets, its
//! setup (what an admin enters, checked against the service) and its delivery (a job turned
//! into a request, sent, and classified as an `Attempt`). What the jobs are is decided in
//! `jobs::plan`; the runner calls the deliveries through [`Destinations`].

mod clients;
mod delivery;
mod destinations;
pub mod discord;
pub mod email;
mod health;
mod lifecycle;
mod sealing;
pub mod send_error;
mod settings;
mod setup_error;
pub mod slack;
pub mod ssrf;
pub mod webhook;

pub use clients::HttpClients;
pub use destinations::Destinations;
pub use health::Health;
pub use lifecycle::{
    CheckedSettings, EndpointChange, Sole, TURNED_OFF, add_integration, add_sole_integration,
    add_webhook_endpoint, delete_integration, fix_integration, fix_webhook_endpoint, is_turned_off,
    rotate_webhook_secret, settings_json, turn_off_integration, turn_on_integration,
};
pub use sealing::{
    SealingError, check_sealed_secrets, count_opening_secrets, open_secrets, open_secrets_as,
    reseal_secrets, seal_clear_secrets, store_secrets,
};
pub use settings::{insert_integration, replace_integration_settings};
pub use setup_error::SetupError;
