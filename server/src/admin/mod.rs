//! The admin UI: server-rendered pages (components from `porch-app`), plain form posts with
//! redirects, and live inbox updates over Server-Sent Events. Handlers authenticate through the
//! extractors in `session`, call `accounts` or `chat`, and render; they hold no SQL.
//! Every URL is listed in `http/routes.rs`.

pub mod account_links;
pub mod account_name;
pub mod actions;
pub mod assets;
pub mod attachments;
pub mod audit;
pub mod auth;
pub mod bulk;
pub mod canned;
pub mod capacity;
mod checkbox;
pub mod deliveries;
pub mod destinations;
pub mod discord;
pub mod docs;
pub mod email;
pub mod email_inbound;
pub mod error_pages;
pub mod forgot_password;
pub mod inbox;
mod inbox_query;
pub mod integrations;
pub mod live;
mod page;
pub mod privacy;
pub mod read_mark;
pub mod search;
pub mod session;
pub mod site_hours;
pub mod site_identity;
pub mod site_prechat;
pub mod sites;
pub mod snooze;
mod sse;
pub mod sso;
mod tally;
pub mod team;
pub mod tokens;
pub mod two_factor;
pub mod typing;
mod views;
pub mod visitor_contact;
pub mod visitor_mail;
pub mod webhooks;

pub use page::{not_found_page, refused_page, strict_transport};
