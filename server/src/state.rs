//! The services every request handler and connection shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::accounts::Accounts;
use crate::accounts::sso::Sso;
use crate::chat::{Chat, SiteDirectory, VisitorTokens};
use crate::clock::WallClock;
use crate::config::Config;
use crate::integrations::HttpClients;
use crate::integrations::email::Mailer;
use crate::integrations::email::inbound::MailReader;
use crate::integrations::slack::{SlackApi, SlackInbound};
use crate::jobs::JobQueue;
use crate::metrics::{Capacity, Meters, Replication};
use crate::secrets::SecretKey;
use crate::store::{Readers, Writer};
use crate::widget::brake::Brakes;

/// Shared application state; handlers receive it as `State<AppState>`.
pub type AppState = Arc<App>;

/// Everything the running server holds.
pub struct App {
    pub config: Arc<Config>,
    /// Base URL browsers use, without a trailing slash (from config, or the bound address).
    pub public_url: String,
    /// The use cases of the widget, the API, integrations and the admin inbox.
    pub chat: Chat,
    pub sites: SiteDirectory,
    pub brakes: Brakes,
    pub tokens: VisitorTokens,
    pub writer: Arc<Writer>,
    pub readers: Arc<Readers>,
    /// Slack's side: API client, user cache, inbound events, setup.
    pub slack: Arc<SlackInbound>,
    /// Hands jobs queued again (retries, fixed integrations) to the runner.
    pub jobs: JobQueue,
    /// The outgoing HTTP clients, shared by deliveries and setup checks.
    pub http: HttpClients,
    /// SMTP, when `PORCH_SMTP_URL` and `PORCH_MAIL_FROM` are set.
    pub mailer: Option<Arc<Mailer>>,
    /// Reads visitors' mail replies, when `PORCH_IMAP_URL` is set.
    pub mail_reader: Option<Arc<MailReader>>,
    /// Seals integration secrets for storing and opens them where one is needed.
    pub secret_key: Arc<SecretKey>,
    /// The admin UI's accounts: setup, sign-in, sessions, team.
    pub accounts: Accounts,
    /// Single sign-on, when `PORCH_OIDC_ISSUER` and its client settings are set.
    pub sso: Option<Arc<Sso>>,
    /// Counters the hot paths bump (acks, connections, heartbeat, job outcomes).
    pub meters: Arc<Meters>,
    /// The sampler's last hour, for the capacity page.
    pub capacity: Arc<Capacity>,
    /// Litestream's replication as last scraped, for the capacity page.
    pub replication: Arc<Replication>,
    /// Cancelled when shutdown starts: connections say goodbye and stop taking work.
    pub shutdown: CancellationToken,
    /// Websocket connections, so shutdown can wait for their in-flight writes.
    pub connections: TaskTracker,
    /// The clock business hours are judged by; tests fix it at a boundary.
    pub wall_clock: WallClock,
    is_shutting_down: AtomicBool,
}

impl App {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: Arc<Config>,
        public_url: String,
        chat: Chat,
        sites: SiteDirectory,
        brakes: Brakes,
        tokens: VisitorTokens,
        writer: Arc<Writer>,
        readers: Arc<Readers>,
        slack_api: SlackApi,
        jobs: JobQueue,
        http: HttpClients,
        mailer: Option<Arc<Mailer>>,
        mail_reader: Option<Arc<MailReader>>,
        capacity: Arc<Capacity>,
        sso: Option<Arc<Sso>>,
        secret_key: Arc<SecretKey>,
    ) -> Self {
        let replication = Arc::new(Replication::new(config.litestream_metrics_url.clone()));
        let accounts = Accounts::new(
            Arc::clone(&writer),
            Arc::clone(&readers),
            Arc::clone(&secret_key),
        );
        let meters: Arc<Meters> = Arc::default();
        let slack = Arc::new(SlackInbound::new(
            slack_api,
            chat.clone(),
            Arc::clone(&readers),
            Arc::clone(&writer),
            jobs.clone(),
            Arc::clone(&meters),
            Arc::clone(&secret_key),
        ));
        Self {
            accounts,
            sso,
            config,
            public_url,
            chat,
            sites,
            brakes,
            tokens,
            writer,
            readers,
            slack,
            jobs,
            http,
            mailer,
            mail_reader,
            secret_key,
            meters,
            capacity,
            replication,
            shutdown: CancellationToken::new(),
            connections: TaskTracker::new(),
            wall_clock: WallClock::default(),
            is_shutting_down: AtomicBool::new(false),
        }
    }

    /// Turns readiness false (`shutting_down`) while everything else keeps serving: the drain
    /// before [`App::begin_shutdown`], so load balancers stop sending traffic first.
    pub fn begin_drain(&self) {
        self.is_shutting_down.store(true, Ordering::SeqCst);
    }

    /// Marks the server as stopping (readiness turns false) and tells connections to close.
    pub fn begin_shutdown(&self) {
        self.is_shutting_down.store(true, Ordering::SeqCst);
        self.shutdown.cancel();
    }

    /// Why the server should not get new traffic, if it should not.
    pub fn not_ready_reason(&self) -> Option<&'static str> {
        if self.is_shutting_down.load(Ordering::SeqCst) {
            Some("shutting_down")
        } else if self.writer.stats().is_disk_full.load(Ordering::Relaxed) {
            Some("disk_full")
        } else {
            None
        }
    }
}
