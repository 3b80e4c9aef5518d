//! Starting and stopping the server: open the database, apply migrations, start the writer and
//! readers, serve, and on shutdown drain connections and flush the writer.

mod sealed_values;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::accounts::sso::Sso;
use crate::chat::{Chat, SiteDirectory, VisitorTokens};
use crate::config::{Config, KeySource, LoadedKey};
use crate::integrations::email::Mailer;
use crate::integrations::email::inbound::{ImapSettings, MailReader, MailboxSource, open_mailbox};
use crate::integrations::slack::{SlackApi, spawn_socket_mode};
use crate::integrations::{Destinations, HttpClients};
use crate::jobs::{Lane, Runner, RunnerConfig, SAFETY_POLL, WINDOW};
use crate::metrics::{
    Capacity, Sources, spawn_heartbeat, spawn_replication_scraper, spawn_sampler,
};
use crate::privacy::spawn_retention;
use crate::secrets::SecretKey;
use crate::state::{App, AppState};
use crate::store::{self, Readers, Writer};
use crate::widget::brake::{Brakes, IpLimits};

/// How often brake state that no longer limits anyone is forgotten.
const BRAKE_PRUNE_INTERVAL: Duration = Duration::from_mins(1);
/// File descriptors kept back from the connection budget (database, WAL, logs, outgoing).
const RESERVED_FDS: u64 = 256;
/// Concurrency of the lanes that have no setting yet (their destinations come later).
const WEBHOOK_CONCURRENCY: usize = 64;
const EMAIL_CONCURRENCY: usize = 8;
/// Name of the secret that signs visitor tokens, in the `settings` table.
const VISITOR_TOKEN_SECRET: &str = "visitor_token_secret";

/// A running server.
pub struct Server {
    /// The shared state, for tests and embedding.
    pub app: AppState,
    /// The address actually bound (useful with port 0).
    pub local_addr: SocketAddr,
    serve: JoinHandle<()>,
    /// The job runner's watcher (see [`watch_runner`]).
    runner: JoinHandle<()>,
    /// Cancelled if the job runner ended by a panic: `porch serve` then stops the process.
    pub runner_failed: CancellationToken,
    /// This process owns the data directory until the server has stopped.
    _lock: store::InstanceLock,
}

/// Raises the soft file-descriptor limit to the hard limit and derives the connection budget.
fn connection_budget(config: &Config) -> usize {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(err) => {
            tracing::warn!(error = %err, "could not raise the file-descriptor limit");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(1024, |(soft, _)| soft)
        }
    };
    let budget = usize::try_from(limit.saturating_sub(RESERVED_FDS).max(64)).unwrap_or(usize::MAX);
    let max = if config.max_connections == 0 {
        budget
    } else {
        config.max_connections.min(budget)
    };
    if max < config.max_connections {
        tracing::warn!(
            asked = config.max_connections,
            max_connections = max,
            fd_limit = limit,
            "PORCH_MAX_CONNECTIONS is more than the file-descriptor limit allows; raise the \
             limit (ulimit -n, or ulimits: nofile in the compose file) to serve that many"
        );
    }
    tracing::info!(fd_limit = limit, max_connections = max, "connection budget");
    max
}

/// Opens the database, applies migrations and starts serving on `listener`. While the database
/// is opened and migrated, the listener already answers health probes (`/readyz` is 503
/// `migrating`), so a long migration is visible rather than a silent port.
///
/// # Errors
/// Fails if the data directory is in use by another process, or if it or the database cannot be
/// opened or migrated.
pub async fn start(mut config: Config, listener: TcpListener) -> anyhow::Result<Server> {
    config.load_secret_files()?;
    let data_dir = config.data_dir.clone();
    let full_disk = |err| store::explain_full_disk(err, &data_dir);
    // Before anything touches the database: a second server must not start at all.
    let lock = lock_data_dir(&config.data_dir).map_err(full_disk)?;
    warn_if_anyone_can_read(&config.data_dir);
    // The key file's error keeps only its words: a full disk is asked about whatever it says.
    let sealing =
        load_secret_key(&config).map_err(|err| store::explain_a_file_error(err, &data_dir))?;
    let config = Arc::new(config);
    let local_addr = listener.local_addr().context("reading the bound address")?;
    let booting = crate::http::serve_while_booting(listener, config.header_timeout);
    let path = config.data_dir.join(crate::config::DATABASE_FILE);
    let opened = open_database(&config, sealing.clone()).await;
    // Take the listener back before looking at the outcome, so a failed start closes it too.
    let listener = booting.finish().await?;
    let (conn, secret) = opened
        .map_err(|err| store::in_context(err, format!("opening the database {}", path.display())))
        .map_err(full_disk)?;

    let writer = Arc::new(Writer::start(
        conn,
        config.writer_queue,
        config.writer_batch,
        config.wal_limit,
    )?);
    let readers = Readers::open(&path, config.readers)?;
    let runner = Runner::default();
    let chat = Chat::new(Arc::clone(&writer), Arc::clone(&readers), runner.queue());
    let http = HttpClients::build(config.allow_private_networks)?;
    let mailer = match (&config.smtp_url, &config.mail_from) {
        (Some(url), Some(from)) => Some(Arc::new(Mailer::new(url.expose(), from)?)),
        _ => None,
    };
    let mail_reader =
        mail_reader(&config, mailer.as_deref(), &chat, &readers, &sealing.key).await?;
    let slack_api = SlackApi::new(http.known_hosts.clone(), &config.slack_api_url)
        .with_timeout(config.slack_timeout);
    let brakes = Brakes::new(IpLimits {
        per_hour: config.ip_conversations_per_hour,
        burst: config.ip_conversations_burst,
    });
    let public_url = config.public_url_or(local_addr);
    let sso = Sso::from_config(&config, &public_url, http.known_hosts.clone())?;
    let app: AppState = Arc::new(App::new(
        Arc::clone(&config),
        public_url,
        chat,
        SiteDirectory::new(Arc::clone(&readers)),
        brakes,
        VisitorTokens::new(secret),
        writer,
        readers,
        slack_api.clone(),
        runner.queue(),
        http,
        mailer,
        mail_reader,
        Arc::new(Capacity::new(config.sampler)),
        sso,
        Arc::new(sealing.key),
    ));

    app.accounts.prepare_first_run(&app.public_url).await?;
    let runner_failed = CancellationToken::new();
    let runner = watch_runner(
        start_runner(runner, &app, slack_api).await?,
        runner_failed.clone(),
    );
    spawn_background(&app, &path);
    let max_connections = connection_budget(&config);
    let router = crate::http::router(Arc::clone(&app));
    let serve = tokio::spawn(crate::http::serve(
        listener,
        router,
        Arc::clone(&app),
        max_connections,
    ));
    tracing::info!(
        "listening on http://{local_addr} (public URL {}), data in {}",
        app.public_url,
        path.display()
    );
    Ok(Server {
        app,
        local_addr,
        serve,
        runner,
        runner_failed,
        _lock: lock,
    })
}

/// Watches the job runner's task. Should it end by a panic (a bug), the widget would still take
/// messages and write their jobs, which nothing would send: so `failed` is cancelled, and
/// `porch serve` stops as if told to, with a failure exit status, for its supervisor (Docker's
/// `restart: unless-stopped`, systemd's `Restart=`) to start it again. The new runner requeues
/// what was running; nothing waiting is lost, as jobs are rows.
fn watch_runner(runner: JoinHandle<()>, failed: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        if runner.await.is_err() {
            tracing::error!(
                "the job runner panicked: stopping, to be restarted (deliveries wait in the database)"
            );
            failed.cancel();
        }
    })
}

/// The server's background tasks (once the runner takes jobs): the resumes a stop interrupted
/// (and blocked email's, with SMTP configured), maintenance, the event-loop heartbeat,
/// integrity checks, the capacity sampler, Slack's Socket Mode, single sign-on discovery, the
/// IMAP reader of mail replies and the Litestream scraper.
fn spawn_background(app: &AppState, path: &std::path::Path) {
    crate::jobs::spawn_interrupted_resumes(
        Arc::clone(&app.writer),
        Arc::clone(&app.readers),
        app.jobs.clone(),
        app.mailer.is_some(),
    );
    spawn_maintenance(app);
    spawn_heartbeat(Arc::clone(&app.meters), app.shutdown.clone());
    let integrity = Arc::clone(&app.meters.integrity);
    store::spawn_integrity_checks(path.to_path_buf(), integrity, app.shutdown.clone());
    let sources = Sources {
        meters: Arc::clone(&app.meters),
        writer: Arc::clone(&app.writer),
        hub: Arc::clone(app.chat.hub()),
        audit_retention: app.config.audit_retention,
    };
    spawn_sampler(sources, Arc::clone(&app.capacity), app.shutdown.clone());
    if let Some(sso) = &app.sso {
        Arc::clone(sso).spawn_discovery(app.shutdown.clone());
    }
    if app.config.pause_deliveries {
        tracing::warn!(
            "deliveries are paused (PORCH_PAUSE_DELIVERIES): nothing is posted to Slack, Discord, \
             webhooks or email, and Slack's Socket Mode and the IMAP reader are not started"
        );
    } else {
        spawn_socket_mode(Arc::clone(&app.slack), app.shutdown.clone());
        if let Some(reader) = &app.mail_reader {
            Arc::clone(reader).spawn(app.shutdown.clone());
        }
    }
    spawn_replication_scraper(
        Arc::clone(&app.replication),
        app.http.known_hosts.clone(),
        app.config.litestream_scrape_every,
        crate::config::DATABASE_FILE,
        app.shutdown.clone(),
    );
}

/// Starts the job runner with the lanes sized from the configuration.
async fn start_runner(
    runner: Runner,
    app: &AppState,
    slack: SlackApi,
) -> anyhow::Result<JoinHandle<()>> {
    let config = &app.config;
    let destinations = Arc::new(Destinations {
        slack,
        http: app.http.clone(),
        allow_private_networks: config.allow_private_networks,
        mailer: app.mailer.clone(),
        hub: Arc::clone(app.chat.hub()),
        readers: Arc::clone(&app.readers),
        writer: Arc::clone(&app.writer),
        public_url: app.public_url.clone(),
        secret_key: Arc::clone(&app.secret_key),
    });
    // Paused, no lane has room: jobs are still written and wait, in order, for a start without it.
    let room = |lane: usize| if config.pause_deliveries { 0 } else { lane };
    let runner_config = RunnerConfig {
        concurrency: [
            (Lane::Chat, room(config.chat_concurrency.max(1))),
            (Lane::Webhook, room(WEBHOOK_CONCURRENCY)),
            (Lane::Email, room(EMAIL_CONCURRENCY)),
            (Lane::Maint, room(1)),
        ]
        .into_iter()
        .collect(),
        retention: config.job_retention,
        stats: Arc::clone(&app.meters.jobs),
        window: WINDOW,
        poll_every: SAFETY_POLL,
    };
    runner
        .start(
            runner_config,
            destinations,
            Arc::clone(&app.writer),
            Arc::clone(&app.readers),
            app.shutdown.clone(),
            config.shutdown_grace,
        )
        .await
        .context("starting the job runner")
}

/// Says so when every user of the machine can read the database, or others than its owner the
/// key in the data directory: Porch creates them without that (see
/// `cli::keep_new_files_from_other_users`), but one made by an older version, or copied in, can
/// have it. Not changed here: the permissions are the operator's.
fn warn_if_anyone_can_read(data_dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = data_dir.join(crate::config::DATABASE_FILE);
    if std::fs::metadata(&path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0) {
        tracing::warn!(
            "{} is readable by every user of this machine; `chmod o-rwx {dir} {dir}/porch.db*` \
             keeps them out (Porch creates its files without that access)",
            path.display(),
            dir = data_dir.display()
        );
    }
    // The sealing key opens every secret in the database: its owner alone should read it (a
    // restore's `cp` under umask 022 makes it 0644).
    let key = data_dir.join(crate::secrets::KEY_FILE);
    if std::fs::metadata(&key).is_ok_and(|m| m.permissions().mode() & 0o077 != 0) {
        tracing::warn!(
            "{} can be read by other users of this machine, and it opens every secret sealed in \
             the database; `chmod 600 {}` keeps them out",
            key.display(),
            key.display()
        );
    }
}

/// Refuses a database (or its `-wal` or `-shm`) that this user may not write, naming owner and
/// fix: SQLite would open it read-only and fail at the first write ("attempt to write a readonly
/// database", Error code 8), naming neither.
fn check_database_writable(data_dir: &std::path::Path) -> anyhow::Result<()> {
    // SQLite creates its `-wal` and `-shm` beside the file: files that are ours in a directory
    // that is not (root's, after a copy) failed with "attempt to write a readonly database".
    if let Err(rustix::io::Errno::ACCESS) = rustix::fs::access(
        data_dir,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    ) {
        anyhow::bail!(store::not_writable(data_dir));
    }
    for suffix in ["", "-wal", "-shm"] {
        let path = data_dir.join(format!("{}{suffix}", crate::config::DATABASE_FILE));
        match std::fs::OpenOptions::new().write(true).open(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                anyhow::bail!(store::not_writable(&path));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Creates the data directory if needed and takes its lock (and, when `porch.db` is a symbolic
/// link, the lock of the directory it points into).
///
/// # Errors
/// Fails if the directory cannot be created (on a read-only file system, saying so), another
/// process holds the lock, or this user may not write the database or its `-wal` or `-shm`.
pub fn lock_data_dir(data_dir: &std::path::Path) -> anyhow::Result<store::InstanceLock> {
    if let Err(err) = std::fs::create_dir_all(data_dir) {
        if err.kind() == std::io::ErrorKind::ReadOnlyFilesystem {
            let dir = data_dir.to_path_buf();
            return Err(store::LockError::ReadOnly { dir }.into());
        }
        return Err(err)
            .with_context(|| format!("creating the data directory {}", data_dir.display()));
    }
    let lock = store::InstanceLock::acquire_for(data_dir, crate::config::DATABASE_FILE)?;
    // Every holder of the lock writes the database: say whose file refuses it before SQLite does.
    check_database_writable(data_dir)?;
    Ok(lock)
}

/// The reader of replies by email. With SMTP there is always one: its mailbox is
/// `PORCH_IMAP_URL`'s (which wins), the one saved on the email page, or none until an admin saves
/// one.
async fn mail_reader(
    config: &Config,
    mailer: Option<&Mailer>,
    chat: &Chat,
    readers: &Arc<Readers>,
    key: &SecretKey,
) -> anyhow::Result<Option<Arc<MailReader>>> {
    let Some(mailer) = mailer else {
        return Ok(None);
    };
    let (settings, source) = match &config.imap_url {
        Some(url) => {
            let settings = ImapSettings::parse(url.expose(), config.imap_poll)
                .map_err(|reason| anyhow::anyhow!("PORCH_IMAP_URL: {reason}"))?;
            (Some(settings), MailboxSource::Environment)
        }
        None => {
            let saved = readers.read(store::find_imap_mailbox).await?;
            let settings = saved.and_then(|row| open_mailbox(key, &row));
            (settings, MailboxSource::Page)
        }
    };
    let reader = MailReader::new(
        settings,
        source,
        config.allow_private_networks,
        (chat.clone(), Arc::clone(readers)),
        mailer,
    );
    Ok(Some(Arc::new(reader)))
}

/// The key that seals integration secrets, from the configuration or the data directory
/// (generated there at the first start, with a warning about backups).
fn load_secret_key(config: &Config) -> anyhow::Result<LoadedKey> {
    let loaded = config.sealing.load(&config.data_dir)?;
    if let KeySource::DataDir {
        path,
        created: true,
    } = &loaded.source
    {
        tracing::warn!(
            "generated the key that seals integration secrets into {} (PORCH_SECRET_KEY is \
             unset): a backup or Litestream replica of the database is only useful together \
             with this key, which is not in it; keep a copy somewhere safe",
            path.display()
        );
    }
    tracing::info!(key = loaded.key.id(), source = %loaded.source.describe(), "sealing key");
    Ok(loaded)
}

/// Opens the write connection, applies migrations, seals integration and two-factor secrets
/// left in clear text (checking that the sealed ones, and the sites' identity secrets, open with
/// this key) and loads the visitor-token secret, off the async threads.
async fn open_database(
    config: &Config,
    sealing: LoadedKey,
) -> anyhow::Result<(rusqlite::Connection, Vec<u8>)> {
    let data_dir = config.data_dir.clone();
    let path = data_dir.join(crate::config::DATABASE_FILE);
    let synchronous = config.synchronous;
    // A start-up that is abandoned (a stop signal) drops this future, and with it the guard: the
    // blocking work, which runs on, then stops before its next migration.
    let abandoned = Arc::new(AtomicBool::new(false));
    let _guard = SetOnDrop(Arc::clone(&abandoned));
    tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let go_on = || !abandoned.load(Ordering::Relaxed);
        // Only the open is asked whether SQLite could read the file at all: damage a migration
        // meets deeper in it keeps the migration's own words.
        let opened = store::open_porch_database(&path, synchronous).and_then(|mut conn| {
            let version = store::apply_migrations_while(&mut conn, &go_on)?;
            Ok((conn, version))
        });
        // Read once: a stop landing between two reads would abandon the start but keep the key.
        let going_on = go_on();
        if opened.is_err() || !going_on {
            // A file that does not open, a newer schema, a failed migration or a stop: nothing
            // was sealed with the key.
            sealed_values::forget_generated_key(&sealing);
        }
        let (conn, version) = opened?;
        anyhow::ensure!(going_on, "start-up abandoned at schema version {version}");
        tracing::info!(version, "database schema is current");
        sealed_values::check_then_seal(&conn, &sealing, &data_dir)?;
        let secret = store::load_or_create_secret(&conn, VISITOR_TOKEN_SECRET)?;
        Ok((conn, secret))
    })
    .await?
}

/// Sets its flag when dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The periodic housekeeping: brake pruning, the refusals' log summaries, the retention purge
/// (docs/privacy.md), the sweep of uploads no message took (docs/widget.md, "Attachments") and
/// the search indexer (docs/admin.md#search).
fn spawn_maintenance(app: &AppState) {
    spawn_brake_pruning(Arc::clone(app));
    crate::refusal_log::spawn_summaries(app.shutdown.clone());
    spawn_retention(
        &app.writer,
        &app.readers,
        app.config.retention_every,
        &app.shutdown,
    );
    crate::attachments::spawn_sweep(&app.writer, app.config.retention_every, &app.shutdown);
    crate::chat::spawn_search_indexer(&app.writer, &app.readers, &app.shutdown);
    app.chat.spawn_snooze_alarm(&app.shutdown);
}

fn spawn_brake_pruning(app: AppState) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(BRAKE_PRUNE_INTERVAL);
        loop {
            tokio::select! {
                _ = tick.tick() => app.brakes.prune(std::time::Instant::now()),
                () = app.shutdown.cancelled() => break,
            }
        }
    });
}

impl Server {
    /// Stops accepting, tells widget connections to reconnect elsewhere, waits for their
    /// in-flight writes, and flushes the writer. The drain before it (readiness false, all else
    /// served, see [`crate::state::App::begin_drain`]) is the caller's: `porch serve` does it.
    pub async fn stop(self) {
        tracing::info!("shutting down");
        self.app.begin_shutdown();
        if self.serve.await.is_err() {
            tracing::error!("the accept loop panicked");
        }
        self.app.connections.close();
        let grace = self.app.config.shutdown_grace;
        if tokio::time::timeout(grace, self.app.connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("some widget connections did not close within the grace period");
        }
        // The runner lets running deliveries finish and records them before the writer stops
        // (the watcher ends with it, and reports a panic itself).
        let _ = self.runner.await;
        let writer = Arc::clone(&self.app.writer);
        if tokio::task::spawn_blocking(move || writer.shutdown())
            .await
            .is_err()
        {
            tracing::error!("the writer did not shut down cleanly");
        }
        crate::refusal_log::at_stop();
        tracing::info!("stopped");
    }
}

/// Serves until `shutdown` resolves, then stops gracefully.
///
/// # Errors
/// Fails if the server cannot start.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let server = start(config, listener).await?;
    shutdown.await;
    server.stop().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_runner_that_panics_asks_for_a_stop_and_one_that_ends_does_not() {
        let failed = CancellationToken::new();
        let panics = tokio::spawn(async { panic!("a bug in the runner") });
        watch_runner(panics, failed.clone()).await.expect("watched");
        assert!(failed.is_cancelled());

        let stopped = CancellationToken::new();
        watch_runner(tokio::spawn(async {}), stopped.clone())
            .await
            .expect("watched");
        assert!(!stopped.is_cancelled(), "a shutdown is not a failure");
    }
}
