//! The website widget: the websocket protocol (docs/widget-protocol.md), visitor connections,
//! the brakes that protect each site, and the widget's assets and embed snippet.

mod attachments;
mod bad_frame;
pub mod brake;
mod compact;
mod connection;
mod endpoint;
mod identity;
mod locales;
mod panel_source;
mod protocol;
mod receipts;
mod self_service;
mod typing;
mod welcome_site;
mod wire;

pub use attachments::{
    download as download_attachment, thumbnail as attachment_thumbnail, upload as upload_attachment,
};
pub use endpoint::{panel_css, panel_js, snippet, upgrade};
pub use locales::locale;
pub use protocol::ErrorCode;
pub use self_service::{erase as erase_own_data, export as export_own_data, preflight};
