//! HTTP: the accept loop with its timeouts, the route table, errors, and request extractors.
//! Handlers parse and authenticate, call the domain, and map its errors; they hold no SQL.

mod api;
mod api_audit;
mod api_deliveries;
mod api_integration_state;
mod api_integrations;
mod api_privacy;
mod api_sites;
pub mod attachment;
pub mod auth;
mod boot;
mod client_ip;
mod error;
mod health;
mod listener;
mod metrics;
mod paging;
mod read_ahead;
mod refusals;
mod routes;
mod slack_actions;
mod slack_events;
mod strict_json;
mod strict_query;
mod unread_body;

pub use boot::{Booting, serve_while_booting};
pub use client_ip::{ClientIp, client_ip};
pub use error::{ApiError, Failure};
pub use listener::{ConnectionSlot, bind, serve};
pub use routes::router;
