//! Durable delivery of messages to outside services. Jobs are rows written in the same
//! transaction as the message; the runner keeps the ready set in memory, runs deliveries in
//! lanes, and records outcomes. One module per destination builds the request from the stored
//! message, sends it and classifies the outcome.

mod destinations;
pub mod discord;
pub mod email;
mod index;
mod outcome;
mod policy;
mod retry;
mod runner;
mod slack;
pub mod ssrf;
mod stats;
pub mod webhook;

pub use destinations::Destinations;
pub use index::Lane;
pub use outcome::{Attempt, Outcome};
pub use retry::retry_jobs;
pub use runner::{JobQueue, Runner, RunnerConfig};
pub use stats::{Counted, JobStats};

/// The HTTP client for admin-supplied webhook URLs: resolves through the SSRF guard, uses no
/// proxy from the environment (it would bypass the guard), follows no redirects (Standard
/// Webhooks counts a 3xx as a failure, and a redirect could point anywhere), and bounds every
/// request.
pub fn webhook_client(allow_private_networks: bool) -> anyhow::Result<reqwest::Client> {
    use anyhow::Context;
    // Ignored when already installed (tests start several servers in one process).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .dns_resolver(ssrf::GuardedResolver {
            allow_private: allow_private_networks,
        })
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(15))
        .user_agent(concat!("Porch-Webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the webhook HTTP client")
}
