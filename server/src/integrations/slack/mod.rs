//! Slack: the Web API client, integration settings and setup, text conversion, delivery (one
//! thread per conversation, its header showing the conversation's state), and the inbound side
//! (events, slash commands and shortcuts from the endpoints in `http` or the Socket Mode client)
//! that turns thread replies into agent messages and agents' requests into inbox actions.

mod access;
mod actions;
mod api;
mod config;
mod deliver;
mod files;
mod header;
mod inbound;
mod inbound_files;
mod request;
mod setup;
mod share;
mod signature;
mod socket;
mod text;
mod thread;

pub use actions::handle_request;
pub use api::{AuthInfo, CallError, DEFAULT_TIMEOUT, HistoryPage, SlackApi, SlackUser};
pub use config::{SlackConfig, SlackIntegration, SlackSecrets};
pub use deliver::deliver_post;
pub use files::DownloadError;
pub use header::deliver_header_update;
pub use inbound::{Handled, SlackInbound, handle_event_callback};
pub use request::{Request, parse_command, parse_interaction, refused_submission};
pub use setup::{SlackSetup, connect_slack, update_slack};
pub use signature::{SignatureError, sign, verify};
pub use socket::spawn_socket_mode;
pub use text::{escape, to_plain, to_plain_named, unnamed_mentions};
pub use thread::{
    CLOCK_MARGIN, HEADER_EVENT_TYPE, HeaderSearch, find_headers, find_root, header_conversation,
    is_by_our_bot,
};
