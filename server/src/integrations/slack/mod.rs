//! Slack: the Web API client, integration settings and setup, text conversion, delivery (one
//! thread per conversation), and the inbound side (events from the Events API endpoint in
//! `http` or the Socket Mode client) that turns thread replies into agent messages.

mod api;
mod config;
mod deliver;
mod inbound;
mod setup;
mod signature;
mod socket;
mod text;
mod thread;

pub use api::{AuthInfo, CallError, DEFAULT_TIMEOUT, HistoryPage, SlackApi, SlackUser};
pub use config::{SlackConfig, SlackIntegration, SlackSecrets};
pub use deliver::deliver_post;
pub use inbound::{Handled, SlackInbound, handle_event_callback};
pub use setup::{SlackSetup, connect_slack, update_slack};
pub use signature::{SignatureError, sign, verify};
pub use socket::spawn_socket_mode;
pub use text::{escape, to_plain};
pub use thread::{
    CLOCK_MARGIN, HEADER_EVENT_TYPE, HeaderSearch, find_headers, find_root, header_conversation,
    is_by_our_bot,
};
