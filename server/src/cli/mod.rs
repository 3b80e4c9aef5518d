//! The `porch` command line. `serve` runs the server; the other commands manage the database
//! directly (`site`, `user` and `token` also beside a running server; `migrate` only without
//! one, see `store::InstanceLock`); `secrets rotate` only without one; `check`, `backup` (beside
//! a server or not) and `health` are for operators and the Docker image.

mod accounts;
mod arguments;
mod backup;
mod check;
mod files;
pub(crate) mod health;
mod ids;
mod privacy;
mod secrets;
mod sites;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rusqlite::Connection;

use crate::config::{Config, DataConfig, LogFormat};
use crate::loadtest::ChannelLimit;
use crate::store;
use arguments::{parse_arguments, refuse_arguments};
use files::require_database;

/// Self-hosted live chat: a website widget, delivery to Slack, Discord, webhooks and email, and
/// an admin inbox, in one binary and one SQLite file.
#[derive(Debug, Parser)]
#[command(name = "porch", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub data: DataConfig,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once at start-up; boxing buys nothing
pub enum Command {
    /// Run the server.
    Serve(Config),
    /// Apply database migrations and exit (`serve` also applies them at start-up).
    Migrate,
    /// Manage sites (websites that embed the widget).
    #[command(subcommand)]
    Site(sites::SiteCommand),
    /// Manage agents and admins.
    #[command(subcommand)]
    User(accounts::UserCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(accounts::TokenCommand),
    /// Manage the key that seals integration secrets in the database.
    #[command(subcommand)]
    Secrets(secrets::SecretsCommand),
    /// Run a Slack Web API mock on loopback (for trying Porch out and for load tests).
    SlackMock {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9099")]
        listen: std::net::SocketAddr,
        /// Delay before each `chat.postMessage` answer.
        #[arg(long, default_value = "50ms", value_parser = crate::config::parse_duration)]
        delay: std::time::Duration,
        /// Answer posts beyond this rate per channel with HTTP 429 and `Retry-After`, as Slack
        /// does (`1/s`, `20/min`, `1/s+5` for a burst of 5 more); unlimited if not given.
        #[arg(long, value_name = "RATE/UNIT[+BURST]", value_parser = ChannelLimit::parse)]
        channel_limit: Option<ChannelLimit>,
    },
    /// Measure capacity: stairs of open-loop widget traffic against a scratch Porch (never the
    /// live database), with the bare websocket echo as baseline; saves JSON and Markdown.
    ///
    /// Exit status: 0 when the run finished and its results were saved, whether or not its
    /// stairs passed (each stair's `passed` in the JSON says; a stair search expects its upper
    /// stairs to fail); 1 when it could not run or save; 2 for a bad flag; 130 or 143 when SIGINT
    /// or SIGTERM stopped it, after stopping its scratch servers and removing their directories.
    Loadtest(crate::loadtest::LoadtestArgs),
    /// Measure search: seed a scratch database (never the live one) with synthetic messages
    /// through the store and time the search page's read over fixed queries (p50/p95/p99).
    LoadtestSearch(crate::loadtest::SearchBenchArgs),
    /// The bare websocket echo the load test compares against.
    #[command(hide = true)]
    LoadtestEcho(crate::loadtest::EchoArgs),
    /// After a restore, move the id counters past the ids the replaced copy handed out
    /// (`--past old/porch.db`, or `--by N`), so none is given twice. Only with the server
    /// stopped; never migrates. See docs/operations.md, "Rolling back".
    RaiseIds(ids::RaiseIdsArgs),
    /// Check a database file (integrity, foreign keys, schema version, row counts) without
    /// changing it; fails if anything is wrong. Use it on a restored backup before serving it.
    Check(check::CheckArgs),
    /// Write a consistent copy of the database to FILE (a new file), also beside a running
    /// server; never migrates. The sealing key is not in it. See docs/operations.md, "Backup".
    Backup(backup::BackupArgs),
    /// Export a person's data (`--email`, `--visitor`) as JSON, or every conversation (`--all`)
    /// as NDJSON, to standard output (see docs/privacy.md). Also beside a running server.
    Export(privacy::ExportArgs),
    /// Erase a person's data (`--email`, `--visitor`): shows what would go; `--yes` erases it.
    Erase(privacy::EraseArgs),
    /// Rewrite the database in incremental auto-vacuum mode, giving back all free space. Only
    /// with the server stopped; needed once for a database created before that mode was the
    /// default (see docs/privacy.md).
    Vacuum,
    /// Probe a running server over HTTP and fail unless it answers 200 (the Docker health check).
    Health(health::HealthArgs),
}

/// Runs the command line; the process exit code is the result: 2 for a setting that breaks a
/// rule (as clap does for one it cannot parse), 1 for a failure while running.
pub fn main() -> ExitCode {
    let mut cli = match parse_arguments() {
        Ok(cli) => cli,
        Err(err) => return refuse_arguments(&err),
    };
    let (filter, format, warnings) = match &mut cli.command {
        Command::Serve(config) => {
            // Before anything is opened or logged: a bad setting leaves no trace but one line.
            config.data_dir.clone_from(&cli.data.data_dir);
            match config.load_secret_files().and_then(|()| config.validate()) {
                Ok(warnings) => (config.log.clone(), config.log_format, warnings),
                Err(err) => {
                    let _ = writeln!(std::io::stderr(), "error: {err}");
                    return ExitCode::from(2);
                }
            }
        }
        // Every command that opens the data directory holds it to `serve`'s rule; these open
        // none (the load tests' scratch servers have directories of their own).
        Command::Health(_)
        | Command::SlackMock { .. }
        | Command::LoadtestEcho(_)
        | Command::LoadtestSearch(_) => ("warn".to_owned(), LogFormat::Text, Vec::new()),
        Command::Check(args) if !args.reads_the_data_dir() => {
            ("warn".to_owned(), LogFormat::Text, Vec::new())
        }
        _ => {
            let settings = crate::config::data_dir_rule(&cli.data.data_dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| match &cli.command {
                    Command::Secrets(command) => command.check_settings(),
                    _ => Ok(()),
                });
            if let Err(err) = settings {
                let _ = writeln!(std::io::stderr(), "error: {err:#}");
                return ExitCode::from(2);
            }
            ("warn".to_owned(), LogFormat::Text, Vec::new())
        }
    };
    init_tracing(&filter, format);
    keep_new_files_from_other_users();
    for warning in warnings {
        tracing::warn!("{warning}");
    }
    // `serve` says so itself, before its own context is added.
    let full_disk_said = matches!(cli.command, Command::Serve(_));
    let data_dir = cli.data.data_dir.clone();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader stopped reading (`porch export --all | head`): it has what it wanted, as
        // with any command-line tool, and the export was still recorded.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let err = if full_disk_said {
                err
            } else {
                store::explain_full_disk(err, &data_dir)
            };
            // With JSON logs the last line is JSON too: it is the one a log collector most needs.
            if matches!(format, LogFormat::Json) && tracing::enabled!(tracing::Level::ERROR) {
                tracing::error!(error = format!("{err:#}"), "porch stopped");
            } else {
                let _ = writeln!(std::io::stderr(), "error: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Whether `err` is standard output's reader having gone away.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Libraries whose debug and trace lines carry what must never be logged: websocket frames (a
/// visitor's token, message text), HTTP headers and bodies (tokens, webhook secrets), the SMTP
/// and IMAP conversations (passwords) and TLS. An operator found `PORCH_LOG=trace` writing
/// visitor tokens; these stay at `info` whatever `PORCH_LOG` says.
const QUIET_TARGETS: [&str; 10] = [
    "tungstenite",
    "tokio_tungstenite",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "lettre",
    "async_imap",
    "imap_proto",
    "rustls",
];

/// Installs the log subscriber; `filter` is `PORCH_LOG`, which `Config::validate` has parsed
/// (other commands pass a fixed filter), and [`QUIET_TARGETS`] are held at `info` beneath it.
fn init_tracing(filter: &str, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let quiet = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::TRACE)
        .with_targets(QUIET_TARGETS.map(|target| (target, tracing::Level::INFO)));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // Colour codes only for a terminal, not in `docker compose logs` or journald.
        LogFormat::Text => logs
            .with_ansi(std::io::stderr().is_terminal())
            .finish()
            .with(quiet)
            .init(),
        LogFormat::Json => logs.json().finish().with(quiet).init(),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(mut config) => {
            config.data_dir = cli.data.data_dir;
            serve(config)
        }
        Command::Migrate => {
            // Never under a running server: it holds the lock for as long as it runs.
            let _lock = crate::lock_data_dir(&cli.data.data_dir)?;
            let (conn, before) = open_and_migrate(&cli.data)?;
            let version = store::schema_version(&conn)?;
            let path = cli.data.database_path();
            write_out(&if before == version {
                format!(
                    "database {} is at schema version {version}: nothing to do",
                    path.display()
                )
            } else {
                format!(
                    "database {} migrated from schema version {before} to {version}",
                    path.display()
                )
            })
        }
        Command::RaiseIds(args) => ids::run(&cli.data, args),
        Command::Vacuum => {
            require_database(&cli.data)?;
            // Never under a running server: VACUUM rewrites the file it is writing to.
            let _lock = crate::lock_data_dir(&cli.data.data_dir)?;
            let conn = open_database(&cli.data)?;
            store::vacuum_into_incremental_mode(&conn)?;
            write_out(&format!(
                "database {} vacuumed; freed space is now given back after each purge",
                cli.data.database_path().display()
            ))
        }
        Command::Export(args) => {
            require_database(&cli.data)?;
            privacy::export(&mut open_for_management(&cli.data)?, &args)
        }
        Command::Erase(args) => {
            require_database(&cli.data)?;
            privacy::erase(&mut open_for_management(&cli.data)?, &args)
        }
        // Only `add` may start a new database; the others read or change what is stored.
        Command::Site(command) => {
            if !matches!(command, sites::SiteCommand::Add { .. }) {
                require_database(&cli.data)?;
            }
            sites::run(&open_for_management(&cli.data)?, command)
        }
        Command::User(command) => {
            if !matches!(command, accounts::UserCommand::Add { .. }) {
                require_database(&cli.data)?;
            }
            accounts::run_user(&open_for_management(&cli.data)?, command)
        }
        Command::Token(command) => {
            require_database(&cli.data)?;
            accounts::run_token(&open_for_management(&cli.data)?, command)
        }
        Command::Secrets(command) => {
            require_database(&cli.data)?;
            secrets::run(&cli.data, command)
        }
        Command::SlackMock {
            listen,
            delay,
            channel_limit,
        } => run_slack_mock(listen, delay, channel_limit),
        Command::Loadtest(args) => crate::loadtest::run(&args, &cli.data.data_dir),
        Command::LoadtestEcho(args) => crate::loadtest::run_echo(args.listen),
        Command::LoadtestSearch(args) => crate::loadtest::run_search_bench(&args),
        Command::Check(args) => check::run(&cli.data, args),
        Command::Backup(args) => backup::run(&cli.data, &args),
        Command::Health(args) => health::run(&args),
    }
}

/// Files Porch creates (the data directory, the database with its `-wal` and `-shm`, which hold
/// every transcript and upload, and `porch.lock`): no other user of the machine may read them. The group keeps read
/// access, for a backup user in it; the sealing key is tighter still (0600, `secrets::key`).
fn keep_new_files_from_other_users() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o027));
}

fn serve(config: Config) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(async {
        // Before binding and migrating: a SIGTERM during start-up must not take the default
        // action and kill the process in the middle of a migration or the first run.
        let mut signals = Signals::install()?;
        tracing::debug!("signal handlers installed");
        let drain = config.drain;
        let starting = async {
            let listener = crate::http::bind(config.listen)
                .with_context(|| format!("listening on {} (PORCH_LISTEN)", config.listen))?;
            crate::start(config, listener).await
        };
        let server = tokio::select! {
            server = starting => server?,
            signal = signals.recv() => {
                tracing::info!(signal, "stop requested during start-up: abandoning it");
                return Ok(false);
            }
        };
        // The last line a first start prints, so the token is not lost among the migrations.
        match server.app.accounts.pending_setup_token() {
            Some(token) => tracing::info!(
                "next: open {}/setup and enter the setup token {token} to create the first admin",
                server.app.public_url
            ),
            None => tracing::info!("next: open {} to sign in", server.app.public_url),
        }
        let failed = server.runner_failed.clone();
        let signal = tokio::select! {
            signal = signals.recv() => signal,
            () = failed.cancelled() => "the job runner's failure",
        };
        tracing::info!(
            signal,
            drain = %humantime::format_duration(drain),
            "stop requested: draining (/readyz answers 503 shutting_down, all else is served)"
        );
        server.app.begin_drain();
        tokio::select! {
            () = tokio::time::sleep(drain) => {}
            signal = signals.recv() => tracing::info!(signal, "second stop request: drain cut short"),
        }
        server.stop().await;
        anyhow::ensure!(
            !failed.is_cancelled(),
            "stopped because the job runner panicked (see the log above); start Porch again"
        );
        Ok::<_, anyhow::Error>(true)
    });
    // Dropping the runtime waits for blocking work already running (migrations under way run
    // to the end), so an abandoned start-up still leaves the database between transactions.
    drop(runtime);
    if !outcome? {
        tracing::info!("stopped before serving");
    }
    Ok(())
}

fn run_slack_mock(
    listen: std::net::SocketAddr,
    delay: std::time::Duration,
    channel_limit: Option<ChannelLimit>,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        let mut signals = Signals::install()?;
        let mock = crate::loadtest::SlackMock::start(listen, delay)
            .await
            .context("starting the Slack mock")?;
        mock.set_channel_limit(channel_limit);
        write_out(&format!(
            "Slack mock on {} (use --slack-api-url {}); Ctrl-C stops it",
            mock.addr,
            mock.api_url()
        ))?;
        signals.recv().await;
        Ok(())
    })
}

/// Ctrl-C and SIGTERM (what `docker stop` sends), caught from the moment this is created: a
/// signal that arrives before anyone waits is kept for the next [`Signals::recv`].
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    /// Replaces the default action (terminate) of both signals. Call inside the runtime.
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate()).context("catching SIGTERM")?,
                interrupt: signal(SignalKind::interrupt()).context("catching SIGINT")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Resolves with the signal's name at the next (or an already pending) signal.
    async fn recv(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => "SIGTERM",
                _ = self.interrupt.recv() => "SIGINT",
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            "Ctrl-C"
        }
    }
}

/// Opens the database for a management command (`site`, `user`, `token`), which may run beside
/// a server. Without a server it migrates the database first; with one it leaves the schema to
/// the server and refuses a schema other than this binary's.
fn open_for_management(data: &DataConfig) -> anyhow::Result<Connection> {
    match crate::lock_data_dir(&data.data_dir) {
        Ok(_lock) => open_database(data),
        Err(err) if is_held(&err) => {
            let conn = open_file(data)?;
            let version = store::schema_version(&conn)?;
            // Older: the server may be migrating it now (its /readyz says so); newer: it is.
            anyhow::ensure!(
                version == store::LATEST_SCHEMA,
                "the database is at schema version {version} and this porch expects {}: if the \
                 server is starting (migrating), retry once its /readyz answers 200; otherwise \
                 run this command with the server's own binary",
                store::LATEST_SCHEMA
            );
            Ok(conn)
        }
        Err(err) => Err(err),
    }
}

fn is_held(err: &anyhow::Error) -> bool {
    matches!(
        err.downcast_ref::<store::LockError>(),
        Some(store::LockError::Held { .. })
    )
}

/// Opens (creating if needed) and migrates the database; the caller holds the lock.
fn open_database(data: &DataConfig) -> anyhow::Result<Connection> {
    Ok(open_and_migrate(data)?.0)
}

/// [`open_database`], with the schema version the file had before (0 for a new one).
fn open_and_migrate(data: &DataConfig) -> anyhow::Result<(Connection, u32)> {
    std::fs::create_dir_all(&data.data_dir)
        .with_context(|| format!("creating the data directory {}", data.data_dir.display()))?;
    let mut conn = open_file(data)?;
    let before = store::schema_version(&conn)?;
    store::apply_migrations(&mut conn)?;
    Ok((conn, before))
}

/// Opens the database file, refusing one that is not Porch's (`store::open_porch_database`).
fn open_file(data: &DataConfig) -> anyhow::Result<Connection> {
    let path = data.database_path();
    store::open_porch_database(&path, store::Synchronous::Full)
        .map_err(|err| store::in_context(err, format!("opening {}", path.display())))
}

/// Prints a command's result: standard output is the command's interface.
fn write_out(text: &str) -> anyhow::Result<()> {
    writeln!(std::io::stdout().lock(), "{text}").context("writing to standard output")
}
