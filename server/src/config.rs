//! Configuration: every setting is a command-line flag and a `PORCH_*` environment variable, with
//! its default and meaning here, so `porch serve --help` is the reference. `docs/configuration.md`
//! lists the same variables (a test keeps the two in sync).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::store::Synchronous;

mod rules;
mod secret_key;
mod sso;
mod url_rules;

pub use rules::{ConfigError, Warning, data_dir_rule};
pub use secret_key::{KeySource, LoadedKey, SecretKeyConfig};
pub use sso::DomainList;
pub use url_rules::{public_url_arg, reaches_only_this_machine};

/// Where Porch keeps its data; shared by every command.
#[derive(Debug, Clone, Args)]
pub struct DataConfig {
    /// Directory holding the SQLite database (`porch.db`). `serve`, `migrate`, `site add` and
    /// `user add` create it if missing; the other commands refuse a directory without a database.
    #[arg(long, env = "PORCH_DATA_DIR", default_value = "./data", global = true)]
    pub data_dir: PathBuf,
}

/// Name of the database file inside the data directory.
pub const DATABASE_FILE: &str = "porch.db";

impl DataConfig {
    /// Path of the database file.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join(DATABASE_FILE)
    }
}

/// Settings of `porch serve`.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// The data directory, taken from the global `--data-dir` (see [`DataConfig`]).
    #[arg(skip = PathBuf::from("./data"))]
    pub data_dir: PathBuf,

    /// Address and port to listen on. Use 0.0.0.0:8080 to accept connections from other hosts.
    #[arg(long, env = "PORCH_LISTEN", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// URL at which browsers reach this server (used in the embed snippet and links). Defaults to
    /// http:// plus the listen address.
    #[arg(long, env = "PORCH_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// Durability of each commit: `full` survives power loss; `normal` survives a crash of Porch
    /// but may lose the last commits on power loss.
    #[arg(long, env = "PORCH_SYNCHRONOUS", value_enum, default_value = "full")]
    pub synchronous: Synchronous,

    /// Writes that may wait for the writer; beyond this, clients are told `busy`.
    #[arg(long, env = "PORCH_WRITER_QUEUE", default_value_t = 16_384)]
    pub writer_queue: usize,

    /// Most writes committed in one transaction.
    #[arg(long, env = "PORCH_WRITER_BATCH", default_value_t = 256)]
    pub writer_batch: usize,

    /// WAL size in bytes past which writes are refused until it can be checkpointed (a stuck
    /// Litestream pins it).
    #[arg(long, env = "PORCH_WAL_LIMIT", default_value_t = 1024 * 1024 * 1024)]
    pub wal_limit: u64,

    /// Read-only database connections for queries.
    #[arg(long, env = "PORCH_READERS", default_value_t = 4)]
    pub readers: usize,

    /// Close a connection that has not sent complete request headers within this time.
    #[arg(long, env = "PORCH_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// Answer 408 when an HTTP request (not a websocket) takes longer than this.
    #[arg(long, env = "PORCH_REQUEST_TIMEOUT", default_value = "15s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Largest HTTP request body accepted, in bytes.
    #[arg(long, env = "PORCH_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,

    /// Most simultaneous connections; 0 means derived from the file-descriptor limit.
    #[arg(long, env = "PORCH_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,

    /// Most simultaneous connections from one address (IPv6: one /64), websockets included; 0
    /// means no limit. Counted by TCP peer: trusted proxies are exempt (see docs/operations.md).
    #[arg(long, env = "PORCH_MAX_CONNECTIONS_PER_IP", default_value_t = 500)]
    pub max_connections_per_ip: usize,

    /// Interval between server pings on widget websockets.
    #[arg(long, env = "PORCH_WS_PING_INTERVAL", default_value = "25s", value_parser = parse_duration)]
    pub ws_ping_interval: Duration,

    /// Close a widget websocket after this long without a whole message, ping or pong from the
    /// client (fragments and partial frames do not count).
    #[arg(long, env = "PORCH_WS_IDLE_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub ws_idle_timeout: Duration,

    /// Largest widget websocket message, in bytes; larger ones close the connection (1009).
    #[arg(long, env = "PORCH_WS_MAX_MESSAGE", default_value_t = 64 * 1024)]
    pub ws_max_message: usize,

    /// New conversations one IP address may start per hour (sustained rate).
    #[arg(long, env = "PORCH_IP_CONVERSATIONS_PER_HOUR", default_value_t = 120)]
    pub ip_conversations_per_hour: u32,

    /// New conversations one IP address may start in a burst. Generous, so an office behind one
    /// NAT address is not held back in normal use.
    #[arg(long, env = "PORCH_IP_CONVERSATIONS_BURST", default_value_t = 20)]
    pub ip_conversations_burst: u32,

    /// How much of a visitor's IP address is stored with them: `full`, `masked` (an IPv4
    /// address's /24, an IPv6 one's /48) or `none`. The brakes count the whole address in memory
    /// either way.
    #[arg(long, env = "PORCH_VISITOR_IP", default_value = "full", value_enum)]
    pub visitor_ip: VisitorIp,

    /// Reverse proxies whose `X-Forwarded-For` header is believed (comma-separated IP addresses).
    /// Without this, the client address is the TCP peer.
    #[arg(long, env = "PORCH_TRUSTED_PROXIES", default_value = "", value_parser = parse_ip_list)]
    pub trusted_proxies: IpList,

    /// Deliveries to chat destinations (Slack) in flight at once. By Little's law, throughput =
    /// concurrency ÷ latency: 512 sustains about 10,000 posts a second against a destination
    /// that answers in 50 ms (see docs/jobs.md).
    #[arg(long, env = "PORCH_CHAT_CONCURRENCY", default_value_t = 512)]
    pub chat_concurrency: usize,

    /// Delivered jobs are deleted after this long (failed and blocked ones stay until retried or,
    /// failed ones, dismissed).
    #[arg(long, env = "PORCH_JOB_RETENTION", default_value = "24h", value_parser = parse_duration)]
    pub job_retention: Duration,

    /// Audit log events are deleted after this long (pruned once a minute, in chunks).
    #[arg(long, env = "PORCH_AUDIT_RETENTION", default_value = "365days", value_parser = parse_duration)]
    pub audit_retention: Duration,

    /// Base URL of the Slack Web API (change only to point Porch at a Slack mock).
    #[arg(
        long,
        env = "PORCH_SLACK_API_URL",
        default_value = "https://slack.com/api"
    )]
    pub slack_api_url: String,

    /// Bound on one Slack Web API call. A post that runs into it may still appear in Slack, so
    /// the retry first looks for it in the channel (see docs/integrations/slack.md).
    #[arg(
        long,
        env = "PORCH_SLACK_TIMEOUT",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub slack_timeout: Duration,

    /// Base URL of the Discord API: a Discord integration's webhook URL must start with
    /// `<this>/webhooks/` (change only to point Porch at a Discord mock).
    #[arg(
        long,
        env = "PORCH_DISCORD_API_URL",
        default_value = "https://discord.com/api"
    )]
    pub discord_api_url: String,

    /// Let outgoing webhooks, and the IMAP mailbox set on the email page, reach loopback,
    /// private, link-local and other special-purpose addresses. Off by default, so neither can be
    /// used to probe the network Porch runs in (SSRF); turn on for intranet endpoints.
    #[arg(long, env = "PORCH_ALLOW_PRIVATE_NETWORKS", default_value_t = false,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_private_networks: bool,

    /// Deliver no job (Slack, Discord, webhooks, email stay queued), and start neither Slack's
    /// Socket Mode nor the IMAP reader of mail replies. For a restored copy (the restore drill),
    /// which would otherwise deliver production's queued jobs a second time.
    #[arg(long, env = "PORCH_PAUSE_DELIVERIES", default_value_t = false,
          value_parser = clap::builder::BoolishValueParser::new())]
    pub pause_deliveries: bool,

    /// The SMTP server for email, as a URL: `smtps://user:pass@host` (implicit TLS, port 465),
    /// `smtp://user:pass@host:587?tls=required` (STARTTLS), `smtp://host:25` (unencrypted, for a
    /// local relay). Credentials are URL-encoded. Unset, Porch sends no email.
    #[arg(long, env = "PORCH_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<Secret>,

    /// A file holding the SMTP URL (for Docker secrets); read at start-up.
    #[arg(long, env = "PORCH_SMTP_URL_FILE", conflicts_with = "smtp_url")]
    pub smtp_url_file: Option<PathBuf>,

    /// The key that seals integration secrets in the database (see [`SecretKeyConfig`]).
    #[command(flatten)]
    pub sealing: SecretKeyConfig,

    /// The address email comes from, for example `Porch <chat@example.com>`.
    #[arg(long, env = "PORCH_MAIL_FROM")]
    pub mail_from: Option<String>,

    /// The IMAP mailbox visitors' mail replies arrive in (the `PORCH_MAIL_FROM` address's), as a
    /// URL: `imaps://user:pass@host[:993][/folder]` (implicit TLS) or
    /// `imap://user:pass@host[:143][/folder]` (in clear, for a server on the same host). User,
    /// password and folder are URL-encoded; the folder defaults to `INBOX`. Needs
    /// `PORCH_SMTP_URL` and `PORCH_MAIL_FROM`. Set, it wins over a mailbox set on the email page;
    /// unset, the page's mailbox (if any) is read.
    #[arg(long, env = "PORCH_IMAP_URL", hide_env_values = true)]
    pub imap_url: Option<Secret>,

    /// A file holding the IMAP URL (for Docker secrets); read at start-up.
    #[arg(long, env = "PORCH_IMAP_URL_FILE", conflicts_with = "imap_url")]
    pub imap_url_file: Option<PathBuf>,

    /// How long the IMAP reader waits between two looks at `PORCH_IMAP_URL`'s mailbox (1 s to
    /// 1 h; a mailbox set on the email page has its own interval).
    #[arg(long, env = "PORCH_IMAP_POLL", default_value = "60s", value_parser = parse_duration)]
    pub imap_poll: Duration,

    /// The OpenID Connect provider for single sign-on, as its issuer URL (for example
    /// `https://id.example.com/realms/staff`); its discovery document is read from
    /// `<issuer>/.well-known/openid-configuration`. Set together with the client id and secret;
    /// unset, the sign-in page offers passwords only (see docs/sso.md).
    #[arg(long, env = "PORCH_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// The client id Porch has at the OpenID Connect provider.
    #[arg(long, env = "PORCH_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// The client secret Porch has at the OpenID Connect provider.
    #[arg(long, env = "PORCH_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<Secret>,

    /// A file holding the OpenID Connect client secret (for Docker secrets); read at start-up.
    #[arg(
        long,
        env = "PORCH_OIDC_CLIENT_SECRET_FILE",
        conflicts_with = "oidc_client_secret"
    )]
    pub oidc_client_secret_file: Option<PathBuf>,

    /// The text of the single sign-on button on the sign-in page.
    #[arg(long, env = "PORCH_OIDC_LABEL", default_value = "Sign in with SSO")]
    pub oidc_label: String,

    /// Email domains (comma-separated, such as `example.com,example.org`) whose people may sign
    /// in through single sign-on without an account: one is created for them, as an agent, on
    /// their first sign-in. Empty: only existing and invited users may sign in.
    #[arg(
        long,
        env = "PORCH_OIDC_AUTO_PROVISION_DOMAINS",
        default_value = "",
        value_parser = sso::parse_domain_list
    )]
    pub oidc_auto_provision_domains: DomainList,

    /// After SIGTERM, how long to keep serving with `/readyz` at 503 `shutting_down`, so load
    /// balancers take this instance out before it stops accepting.
    #[arg(long, env = "PORCH_DRAIN", default_value = "5s", value_parser = parse_duration)]
    pub drain: Duration,

    /// How long each of shutdown's three waits after the drain (open requests, widget
    /// connections, running deliveries) lasts: a stop takes at most the drain + 3 × this.
    #[arg(long, env = "PORCH_SHUTDOWN_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// Log filter, for example `info` or `porch=debug,info`.
    #[arg(long, env = "PORCH_LOG", default_value = "info")]
    pub log: String,

    /// Log line format: `text` for people, `json` for log collectors (one JSON object a line
    /// with `timestamp`, `level`, `target`, `fields`).
    #[arg(long, env = "PORCH_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,

    /// Bearer token that `/metrics` requires (`Authorization: Bearer …`) from any address. Unset,
    /// `/metrics` answers only requests from loopback or private addresses that did not come
    /// through an untrusted proxy (see docs/operations.md).
    #[arg(long, env = "PORCH_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<Secret>,

    /// A file holding the `/metrics` token (for Docker secrets); read at start-up.
    #[arg(
        long,
        env = "PORCH_METRICS_TOKEN_FILE",
        conflicts_with = "metrics_token"
    )]
    pub metrics_token_file: Option<PathBuf>,

    /// Litestream's Prometheus endpoint (`addr:` in `litestream.yml`), such as
    /// `http://litestream:9090/metrics`. Set, the capacity page shows whether its syncs keep up.
    #[arg(long, env = "PORCH_LITESTREAM_METRICS_URL")]
    pub litestream_metrics_url: Option<String>,

    /// How often Litestream's metrics are scraped. Not a flag; tests shorten it.
    #[arg(skip = Duration::from_secs(10))]
    pub litestream_scrape_every: Duration,

    /// How often the capacity sampler samples and rolls up: every second and every minute. Not a
    /// flag; tests shorten it.
    #[arg(skip = crate::metrics::SamplerTiming::default())]
    pub sampler: crate::metrics::SamplerTiming,

    /// How often the retention purge looks for conversations past their site's retention (see
    /// docs/privacy.md). Not a flag; tests shorten it.
    #[arg(skip = crate::privacy::RETENTION_EVERY)]
    pub retention_every: Duration,
}

impl Config {
    /// Reads each `*_FILE` secret (`PORCH_METRICS_TOKEN_FILE`, `PORCH_SMTP_URL_FILE`,
    /// `PORCH_IMAP_URL_FILE`, `PORCH_OIDC_CLIENT_SECRET_FILE`) into its setting, trimmed of white space (files usually end with a newline).
    ///
    /// # Errors
    /// Fails, naming the variable, if a file cannot be read or is empty.
    pub fn load_secret_files(&mut self) -> Result<(), ConfigError> {
        if let Some(path) = &self.metrics_token_file {
            self.metrics_token = Some(read_secret_file("PORCH_METRICS_TOKEN_FILE", path)?);
        }
        if let Some(path) = &self.smtp_url_file {
            self.smtp_url = Some(read_secret_file("PORCH_SMTP_URL_FILE", path)?);
        }
        if let Some(path) = &self.imap_url_file {
            self.imap_url = Some(read_secret_file("PORCH_IMAP_URL_FILE", path)?);
        }
        if let Some(path) = &self.oidc_client_secret_file {
            self.oidc_client_secret =
                Some(read_secret_file("PORCH_OIDC_CLIENT_SECRET_FILE", path)?);
        }
        Ok(())
    }

    /// The public URL: `PORCH_PUBLIC_URL` normalised (scheme and host in lower case, without its
    /// trailing slash: [`url_rules::normalized_public_url`]), else `http://` plus the
    /// bound address, with a wildcard address replaced by loopback (a browser cannot open
    /// `http://0.0.0.0:…`; start-up warns that the URL only works on this host).
    pub fn public_url_or(&self, local_addr: SocketAddr) -> String {
        match &self.public_url {
            Some(url) => url_rules::normalized_public_url(url),
            None => format!("http://{}", reachable(local_addr)),
        }
    }
}

/// A secret from a file, without surrounding white space.
fn read_secret_file(variable: &'static str, path: &std::path::Path) -> Result<Secret, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        ConfigError::new(
            variable,
            format!("cannot be read ({}: {err})", path.display()),
        )
    })?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(ConfigError::new(
            variable,
            format!("must not be empty ({})", path.display()),
        ));
    }
    Ok(Secret(secret.to_owned()))
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// How much of a visitor's address is stored (`PORCH_VISITOR_IP`, docs/privacy.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VisitorIp {
    Full,
    /// The network, as analytics tools anonymise: enough to tell a country or a provider, not a
    /// household. Stored as a prefix (`203.0.113.0/24`), so no one reads it as an address.
    Masked,
    None,
}

impl VisitorIp {
    /// What is stored of `ip`.
    pub fn stored(self, ip: IpAddr) -> Option<String> {
        match (self, ip.to_canonical()) {
            (Self::Full, ip) => Some(ip.to_string()),
            (Self::Masked, IpAddr::V4(v4)) => {
                let [a, b, c, _] = v4.octets();
                Some(format!("{a}.{b}.{c}.0/24"))
            }
            (Self::Masked, IpAddr::V6(v6)) => {
                let [a, b, c, ..] = v6.segments();
                Some(format!(
                    "{}/48",
                    std::net::Ipv6Addr::new(a, b, c, 0, 0, 0, 0, 0)
                ))
            }
            (Self::None, _) => None,
        }
    }
}

/// `addr` with a wildcard IP (`0.0.0.0`, `::`) replaced by loopback of the same family.
fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            (std::net::Ipv4Addr::LOCALHOST, addr.port()).into()
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            (std::net::Ipv6Addr::LOCALHOST, addr.port()).into()
        }
        _ => addr,
    }
}

/// A setting that holds a credential: usable, never printed (`Debug` shows `<redacted>`), so a
/// debug print of the configuration cannot leak it into a log.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

/// A comma-separated list of IP addresses; empty means none (so an empty variable in a compose
/// file is not an error).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpList(pub Vec<IpAddr>);

impl std::ops::Deref for IpList {
    type Target = [IpAddr];

    fn deref(&self) -> &[IpAddr] {
        &self.0
    }
}

/// A duration as `humantime` reads it, with an example beside its refusal ("expected number at
/// 0" alone did not say what is wanted).
///
/// # Errors
/// What is wrong, and what a duration looks like.
pub fn parse_duration(raw: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(raw)
        .map_err(|err| format!("{err}: write a duration such as 90s, 15m, 24h or 30days"))
}

/// The listen address: an IP address and a port (a host name is not resolved).
///
/// # Errors
/// What is wanted, with examples: a host name, a URL or a missing port is not taken.
pub fn parse_listen(raw: &str) -> Result<SocketAddr, String> {
    raw.trim().parse().map_err(|_| {
        "must be an IP address and a port, such as 127.0.0.1:8080, 0.0.0.0:8080 or [::]:8080 \
         (no host name, no scheme, and the port is needed)"
            .to_owned()
    })
}

fn parse_ip_list(raw: &str) -> Result<IpList, String> {
    raw.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            part.parse()
                .map_err(|_| format!("{part} is not an IP address"))
        })
        .collect::<Result<_, _>>()
        .map(IpList)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitors_address_is_stored_whole_as_its_network_or_not_at_all() {
        let v4: IpAddr = "203.0.113.9".parse().expect("ip");
        let v6: IpAddr = "2001:db8:1234:5678::9".parse().expect("ip");
        let mapped: IpAddr = "::ffff:203.0.113.9".parse().expect("ip");
        assert_eq!(VisitorIp::Full.stored(v4).as_deref(), Some("203.0.113.9"));
        assert_eq!(
            VisitorIp::Full.stored(mapped).as_deref(),
            Some("203.0.113.9")
        );
        assert_eq!(
            VisitorIp::Masked.stored(v4).as_deref(),
            Some("203.0.113.0/24")
        );
        assert_eq!(
            VisitorIp::Masked.stored(mapped).as_deref(),
            Some("203.0.113.0/24")
        );
        assert_eq!(
            VisitorIp::Masked.stored(v6).as_deref(),
            Some("2001:db8:1234::/48")
        );
        assert_eq!(VisitorIp::None.stored(v4), None);
    }

    #[test]
    fn secrets_are_not_printed() {
        let secret: Secret = "smtps://user:hunter2@mail.example"
            .parse()
            .unwrap_or_else(|e| match e {});
        assert_eq!(format!("{secret:?}"), "<redacted>");
        assert_eq!(secret.expose(), "smtps://user:hunter2@mail.example");
    }

    #[test]
    fn an_empty_proxy_list_means_none() {
        assert_eq!(parse_ip_list(""), Ok(IpList::default()));
        assert_eq!(parse_ip_list(" 10.0.0.2, ::1 ").map(|l| l.len()), Ok(2));
        assert!(parse_ip_list("10.0.0.2,nope").is_err());
    }
}
