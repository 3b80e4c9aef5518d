//! The `porch` command line. `serve` runs the server; the other commands manage the database
//! directly (they work whether or not a server is running).

mod accounts;
mod sites;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rusqlite::Connection;

use crate::config::{Config, DataConfig};
use crate::store;

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
}

/// Runs the command line; the process exit code is the result.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match &cli.command {
        Command::Serve(config) => config.log.clone(),
        _ => "warn".to_owned(),
    };
    init_tracing(&filter);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!("{err:#}");
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(mut config) => {
            config.data_dir = cli.data.data_dir;
            serve(config)
        }
        Command::Migrate => {
            let conn = open_database(&cli.data)?;
            let version = store::schema_version(&conn)?;
            write_out(&format!(
                "database {} is at schema version {version}",
                cli.data.database_path().display()
            ))
        }
        Command::Site(command) => sites::run(&open_database(&cli.data)?, command),
        Command::User(command) => accounts::run_user(&open_database(&cli.data)?, command),
        Command::Token(command) => accounts::run_token(&open_database(&cli.data)?, command),
    }
}

fn serve(config: Config) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let listener = crate::http::bind(config.listen)
            .with_context(|| format!("listening on {} (PORCH_LISTEN)", config.listen))?;
        let server = crate::start(config, listener).await?;
        tracing::info!(
            "next: open {} to sign in (or, on a fresh install, to create the first admin)",
            server.app.public_url
        );
        shutdown_signal().await;
        server.stop().await;
        Ok(())
    })
}

/// Resolves on Ctrl-C or SIGTERM (what `docker stop` sends).
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// Opens (creating if needed) and migrates the database for a management command.
fn open_database(data: &DataConfig) -> anyhow::Result<Connection> {
    std::fs::create_dir_all(&data.data_dir)
        .with_context(|| format!("creating the data directory {}", data.data_dir.display()))?;
    let path = data.database_path();
    let mut conn = store::open_write_connection(&path, store::Synchronous::Full)
        .with_context(|| format!("opening {}", path.display()))?;
    store::apply_migrations(&mut conn)?;
    Ok(conn)
}

/// Prints a command's result: standard output is the command's interface.
fn write_out(text: &str) -> anyhow::Result<()> {
    writeln!(std::io::stdout().lock(), "{text}").context("writing to standard output")
}
