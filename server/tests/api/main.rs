//! Integration tests: the real server on 127.0.0.1:0 with a temporary SQLite file, driven over
//! real HTTP and websockets. One test binary, so it builds once.

// Everything in this binary is test code: a failed `expect` is a failed test. clippy.toml's
// allow-expect-in-tests covers `#[test]` functions only, not the shared helpers they call.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod account_tokens;
mod api_errors;
mod attachments;
mod attempts;
mod audit;
mod backlog;
mod brakes;
mod canned;
mod capacity_page;
mod config_doc;
mod config_validation;
mod connection_limits;
mod connections;
mod conversations_api;
mod cookie_tossing;
mod destinations;
mod discord;
mod email;
mod email_inbound;
mod escaping;
mod hardening;
mod health;
mod helpers;
mod identity;
mod imap_settings;
mod inbox;
mod inbox_list;
mod instance_lock;
mod integrity;
mod languages;
mod live_inbox;
mod loadtest;
mod metrics;
mod prechat_hours;
mod privacy;
mod process;
mod read_receipts;
mod replication_lag;
mod revocation;
mod sealed_secrets;
mod search;
mod shutdown;
mod site_add;
mod slack;
mod slack_files;
mod slack_inbox;
mod slack_threads;
mod slack_wire;
mod snippet;
mod throttle_race;
mod two_factor;
mod unread_counts;
mod visitor_context;
mod visitor_mail;
mod visitor_typing;
mod wal_ceiling;
mod webhooks;
mod widget_errors;
mod widget_messages;
mod widget_resume;
mod writer;
