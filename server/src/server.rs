//! Starting and stopping the server: open the database, apply migrations, start the writer and
//! readers, serve, and on shutdown drain connections and flush the writer.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::chat::{Chat, SiteDirectory, VisitorTokens};
use crate::config::Config;
use crate::hub::Hub;
use crate::state::{App, AppState};
use crate::store::{self, Readers, Writer};
use crate::widget::brake::{Brakes, IpLimits};

/// How often brake state that no longer limits anyone is forgotten.
const BRAKE_PRUNE_INTERVAL: Duration = Duration::from_mins(1);
/// File descriptors kept back from the connection budget (database, WAL, logs, outgoing).
const RESERVED_FDS: u64 = 256;
/// Name of the secret that signs visitor tokens, in the `settings` table.
const VISITOR_TOKEN_SECRET: &str = "visitor_token_secret";

/// A running server.
pub struct Server {
    /// The shared state, for tests and embedding.
    pub app: AppState,
    /// The address actually bound (useful with port 0).
    pub local_addr: SocketAddr,
    serve: JoinHandle<()>,
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
    tracing::info!(fd_limit = limit, max_connections = max, "connection budget");
    max
}

/// Opens the database, applies migrations and starts serving on `listener`.
///
/// # Errors
/// Fails if the data directory or database cannot be opened or migrated.
pub async fn start(config: Config, listener: TcpListener) -> anyhow::Result<Server> {
    let config = Arc::new(config);
    let local_addr = listener.local_addr().context("reading the bound address")?;
    let data_dir = config.data_dir.clone();
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("creating the data directory {}", data_dir.display()))?;
    let path = data_dir.join(crate::config::DATABASE_FILE);
    let synchronous = config.synchronous;
    let open_path = path.clone();
    let (conn, secret) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let mut conn = store::open_write_connection(&open_path, synchronous)?;
        let version = store::apply_migrations(&mut conn)?;
        tracing::info!(version, "database schema is current");
        let secret = store::load_or_create_secret(&conn, VISITOR_TOKEN_SECRET)?;
        Ok((conn, secret))
    })
    .await?
    .with_context(|| format!("opening the database {}", path.display()))?;

    let writer = Arc::new(Writer::start(
        conn,
        config.writer_queue,
        config.writer_batch,
    )?);
    let readers = Readers::open(&path, config.readers)?;
    let hub = Arc::new(Hub::default());
    let chat = Chat::new(Arc::clone(&writer), Arc::clone(&readers), hub);
    let brakes = Brakes::new(IpLimits {
        per_hour: config.ip_conversations_per_hour,
        burst: config.ip_conversations_burst,
    });
    let public_url = match &config.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{local_addr}"),
    };
    let app: AppState = Arc::new(App::new(
        Arc::clone(&config),
        public_url,
        chat,
        SiteDirectory::new(Arc::clone(&readers)),
        brakes,
        VisitorTokens::new(secret),
        writer,
        readers,
    ));

    app.accounts.prepare_first_run(&app.public_url).await?;
    spawn_brake_pruning(Arc::clone(&app));
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
    })
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
    /// in-flight writes, and flushes the writer.
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
        let writer = Arc::clone(&self.app.writer);
        if tokio::task::spawn_blocking(move || writer.shutdown())
            .await
            .is_err()
        {
            tracing::error!("the writer did not shut down cleanly");
        }
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
