//! Slack: the Web API client, integration settings, text conversion, and the inbound side
//! (the Events API endpoint and the Socket Mode client) that turns thread replies into agent
//! messages.

mod api;
mod config;
mod events;
mod inbound;
mod setup;
mod signature;
mod socket;
mod text;
mod thread;

pub use api::{AuthInfo, CallError, DEFAULT_TIMEOUT, HistoryPage, SlackApi, SlackUser};
pub use config::{SlackConfig, SlackIntegration, SlackSecrets};
pub use events::receive as receive_events;
pub use inbound::{Handled, SlackInbound, handle_event_callback};
pub use setup::{SetupError, SlackSetup, connect_slack, update_slack};
pub use signature::{SignatureError, sign, verify};
pub use socket::spawn_socket_mode;
pub use text::{escape, to_plain};
pub use thread::{
    CLOCK_MARGIN, HEADER_EVENT_TYPE, HeaderSearch, find_headers, find_root, header_conversation,
    is_by_our_bot,
};
