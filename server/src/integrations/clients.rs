//! The two HTTP clients every integration shares, built once at start-up: one for services at
//! known hosts (Slack, Discord), one for admin-supplied webhook URLs behind the SSRF guard.

use std::time::Duration;

use anyhow::Context;

use super::ssrf;

/// Bound on establishing a connection to any destination.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How Porch names itself to Slack and Discord (Discord asks API clients to; Slack logs it).
pub const USER_AGENT: &str = concat!("Porch/", env!("CARGO_PKG_VERSION"));
/// Bound on a whole webhook request: an endpoint that takes longer is retried later.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(15);

/// The shared clients (cheap to clone: each is a handle to one connection pool).
#[derive(Clone)]
pub struct HttpClients {
    /// For services at fixed, known hosts (Slack's and Discord's APIs). Rustls with the ring
    /// provider (no C toolchain needed) and the system's CA certificates; no redirects (a
    /// destination that redirects is misconfigured, and following could leak tokens).
    pub known_hosts: reqwest::Client,
    /// For admin-supplied webhook URLs: resolves through the SSRF guard, uses no proxy from the
    /// environment (it would bypass the guard), follows no redirects (Standard Webhooks counts
    /// a 3xx as a failure, and a redirect could point anywhere), and bounds every request.
    pub webhooks: reqwest::Client,
}

impl HttpClients {
    /// Builds both; `allow_private_networks` is `PORCH_ALLOW_PRIVATE_NETWORKS`.
    ///
    /// # Errors
    /// Fails if the TLS backend cannot be set up.
    pub fn build(allow_private_networks: bool) -> anyhow::Result<Self> {
        // Ignored when already installed (tests start several servers in one process).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let known_hosts = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(USER_AGENT)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(1024)
            .build()
            .context("building the HTTP client")?;
        let webhooks = reqwest::Client::builder()
            .dns_resolver(ssrf::GuardedResolver {
                allow_private: allow_private_networks,
            })
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(WEBHOOK_TIMEOUT)
            .user_agent(concat!("Porch-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building the webhook HTTP client")?;
        Ok(Self {
            known_hosts,
            webhooks,
        })
    }
}
