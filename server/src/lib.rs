//! Porch: a self-hosted live-chat appliance in one binary and one SQLite file.
//!
//! Module map:
//! - [`config`]: every setting, as flags and `PORCH_*` variables.
//! - [`cli`]: the `porch` command line (serve, migrate, site, user, token).
//! - [`http`]: our own accept loop, the route table, API handlers, errors.
//! - [`widget`]: the widget websocket protocol, visitor connections, brakes, assets.
//! - [`chat`]: the domain: sites, visitors, conversations, messages; use-case functions.
//! - [`values`]: validated values (message bodies, origins, site limits) shared by every layer.
//! - [`hub`]: live fan-out of events to open connections.
//! - [`histogram`]: the lock-free latency histogram (a leaf: imports nothing from the crate).
//! - [`secrets`]: sealing secrets at rest: the key and the cipher's envelope (a leaf).
//! - [`store`]: SQLite: the group-commit writer, the reader pool, one file per table.
//! - [`accounts`]: admin UI accounts: passwords, setup token, sign-in throttling, sessions, team.
//! - [`audit`]: the audit log: action codes, who and from where, recorded with each change.
//! - [`admin`]: the admin UI's pages and live inbox stream (server-rendered, `porch-app`).
//! - [`jobs`]: job planning (which deliveries a change implies) and the job runner.
//! - [`integrations`]: one module per outside service (Slack, Discord, webhooks, email):
//!   settings, setup and delivery.
//! - [`series`]: the capacity figures sampled each second and their rollups (a leaf).
//! - [`log_limit`]: log lines that may repeat hundreds of times a second, written at most
//!   once per interval (a leaf).
//! - [`metrics`]: capacity figures: hot-path counters, the per-second sampler, `/metrics`.
//! - [`attachments`]: files on messages: type sniffing, metadata stripping, chunked storing,
//!   the sweep of uploads no message took.
//! - [`privacy`]: retention per site, finding, exporting and erasing a person's data.
//! - [`loadtest`]: `porch loadtest`, its echo baseline and the mocks of outside services.
//!
//! The layer rules between these (docs/architecture.md) are checked by a test that reads the
//! source: `architecture_rules.rs`.

pub mod accounts;
mod admin;
#[cfg(test)]
mod architecture_rules;
pub mod attachments;
pub mod audit;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod config;
pub mod histogram;
pub mod http;
pub mod hub;
pub mod integrations;
pub mod jobs;
pub mod loadtest;
mod log_limit;
pub mod metrics;
pub mod privacy;
mod refusal_log;
pub mod secrets;
pub mod series;
mod server;
pub mod state;
pub mod store;
pub mod values;
pub mod widget;

pub use server::{Server, lock_data_dir, run, start};
