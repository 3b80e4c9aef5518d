//! The rules every `porch serve` setting must meet, checked once at start-up before anything is
//! opened: a value that would break at run time is a [`ConfigError`] naming the variable and the
//! flag; a legal but surprising one is a [`Warning`]. All bounds live here, in [`Config::validate`].

use std::net::IpAddr;
use std::time::Duration;

use reqwest::Url;

use super::Config;
use super::url_rules::{api_url, is_loopback_host, litestream_url, public_url};
use crate::store::Synchronous;

/// A setting that would break Porch at run time: which one, as the operator wrote it, and the
/// rule it breaks. Displays as one line, e.g.
/// `PORCH_WS_PING_INTERVAL (--ws-ping-interval) must be at least 1s (got 0s)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The environment variable, `PORCH_*`; the flag is derived from it.
    pub variable: &'static str,
    /// What the value must be, and what it was where that is not a secret.
    pub rule: String,
}

impl ConfigError {
    pub(super) fn new(variable: &'static str, rule: impl Into<String>) -> Self {
        Self {
            variable,
            rule: rule.into(),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every flag is its variable without `PORCH_`, in kebab case.
        let flag = self
            .variable
            .trim_start_matches("PORCH_")
            .to_ascii_lowercase()
            .replace('_', "-");
        // One line, whatever the rule says: the operator reads it in `docker logs`.
        let rule = self.rule.replace(['\n', '\r'], " ");
        write!(f, "{} (--{flag}) {rule}", self.variable)
    }
}

impl std::error::Error for ConfigError {}

/// A legal but surprising setting, logged at warn when the server starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning(pub String);

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_mins(1);
const HOUR: Duration = Duration::from_hours(1);
const DAY: Duration = Duration::from_hours(24);
/// A year as `humantime` reads `1year` (365.25 days), so the bound an error names is the
/// bound an operator can type.
const YEAR: Duration = Duration::from_hours(8766);
const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

impl Config {
    /// How long rows are kept: jobs and the audit log.
    fn validate_retention(&self) -> Result<(), ConfigError> {
        duration("PORCH_JOB_RETENTION", self.job_retention, MINUTE, YEAR)?;
        duration(
            "PORCH_AUDIT_RETENTION",
            self.audit_retention,
            DAY,
            10 * YEAR,
        )?;
        Ok(())
    }

    /// Checks every setting against its rule, in the order of the struct, and returns the
    /// warnings for the legal but surprising ones.
    ///
    /// # Errors
    /// The first setting that breaks a rule.
    pub fn validate(&self) -> Result<Vec<Warning>, ConfigError> {
        let mut warnings = Vec::new();
        data_dir_rule(&self.data_dir)?;
        self.validate_addresses(&mut warnings)?;
        self.sealing.validate()?;
        if self.synchronous == Synchronous::Normal {
            warnings.push(Warning(
                "PORCH_SYNCHRONOUS=normal: the last acknowledged messages may be lost on power \
                 loss"
                    .to_owned(),
            ));
        }
        // The writer: a queue of 0 answers `busy` forever; a batch of 0 commits nothing.
        count("PORCH_WRITER_QUEUE", self.writer_queue, 1, MIB)?;
        count("PORCH_WRITER_BATCH", self.writer_batch, 1, 65_536)?;
        // The WAL ceiling: below 128 MiB a healthy Litestream (which truncates at 64 MiB, checked
        // once a second) could be hit by a burst; 1 TiB is beyond any disk it protects.
        count("PORCH_WAL_LIMIT", self.wal_limit, 128 << 20, 1 << 40)?;
        // Without a reader no query is ever answered; past 256 SQLite gains nothing.
        count("PORCH_READERS", self.readers, 1, 256)?;
        duration(
            "PORCH_HEADER_TIMEOUT",
            self.header_timeout,
            SECOND,
            10 * MINUTE,
        )?;
        duration("PORCH_REQUEST_TIMEOUT", self.request_timeout, SECOND, HOUR)?;
        // Below 1 KiB no admin form fits; above 1 GiB one request could exhaust memory.
        count("PORCH_BODY_LIMIT", self.body_limit, KIB, 1024 * MIB)?;
        // 0 means derived from the file-descriptor limit.
        count("PORCH_MAX_CONNECTIONS", self.max_connections, 0, 16 * MIB)?;
        // 0 means no per-address limit (for a proxy Porch cannot list as trusted).
        count(
            "PORCH_MAX_CONNECTIONS_PER_IP",
            self.max_connections_per_ip,
            0,
            16 * MIB,
        )?;
        self.validate_websockets(&mut warnings)?;
        // 0 would refuse every new conversation; the load test sets 100,000,000.
        let per_ip = 1_000_000_000;
        count(
            "PORCH_IP_CONVERSATIONS_PER_HOUR",
            self.ip_conversations_per_hour,
            1,
            per_ip,
        )?;
        count(
            "PORCH_IP_CONVERSATIONS_BURST",
            self.ip_conversations_burst,
            1,
            per_ip,
        )?;
        if self.trusted_proxies.iter().any(IpAddr::is_unspecified) {
            return Err(ConfigError::new(
                "PORCH_TRUSTED_PROXIES",
                "must list proxies' addresses, not 0.0.0.0 or ::",
            ));
        }
        count("PORCH_CHAT_CONCURRENCY", self.chat_concurrency, 1, 65_536)?;
        self.validate_retention()?;
        api_url("PORCH_SLACK_API_URL", &self.slack_api_url)?;
        duration(
            "PORCH_SLACK_TIMEOUT",
            self.slack_timeout,
            Duration::from_millis(100),
            5 * MINUTE,
        )?;
        api_url("PORCH_DISCORD_API_URL", &self.discord_api_url)?;
        self.validate_mail(&mut warnings)?;
        self.validate_oidc(&mut warnings)?;
        // 0 stops at once (tests, no load balancer); beyond a minute no balancer needs it.
        duration("PORCH_DRAIN", self.drain, Duration::ZERO, MINUTE)?;
        duration(
            "PORCH_SHUTDOWN_GRACE",
            self.shutdown_grace,
            Duration::ZERO,
            10 * MINUTE,
        )?;
        if let Err(err) = tracing_subscriber::EnvFilter::try_new(&self.log) {
            return Err(ConfigError::new(
                "PORCH_LOG",
                format!("must be a log filter such as `info` or `porch=debug,info` ({err})"),
            ));
        }
        if let Some(token) = &self.metrics_token {
            let token = token.expose();
            // An empty or padded token would make every scrape fail with no hint why.
            if token.is_empty() || token.trim() != token {
                let variable = if self.metrics_token_file.is_some() {
                    "PORCH_METRICS_TOKEN_FILE"
                } else {
                    "PORCH_METRICS_TOKEN"
                };
                return Err(ConfigError::new(
                    variable,
                    "must not be empty or have leading or trailing spaces",
                ));
            }
            if token.len() < 16 {
                warnings.push(Warning(
                    "PORCH_METRICS_TOKEN is shorter than 16 characters: easy to guess".to_owned(),
                ));
            }
        }
        Ok(warnings)
    }

    fn validate_addresses(&self, warnings: &mut Vec<Warning>) -> Result<(), ConfigError> {
        if let Some(url) = &self.litestream_metrics_url {
            litestream_url(url)?;
        }
        if let Some(url) = &self.public_url {
            public_url(url)?;
            // Taken for the widget, but the admin UI's links and cookies are for the root.
            if Url::parse(url).is_ok_and(|u| !u.path().trim_end_matches('/').is_empty()) {
                warnings.push(Warning(format!(
                    "PORCH_PUBLIC_URL={url} has a path: the widget works under it behind a proxy \
                     that strips it, but the admin UI does not (its links and cookies are for the \
                     root); serve Porch at the root of its own host name"
                )));
            }
        } else if self.listen.ip().is_unspecified() {
            warnings.push(Warning(format!(
                "PORCH_LISTEN={} without PORCH_PUBLIC_URL: links and embed snippets use {}, which \
                 works only on this host; set PORCH_PUBLIC_URL to the URL browsers use",
                self.listen,
                self.public_url_or(self.listen)
            )));
        }
        Ok(())
    }

    fn validate_websockets(&self, warnings: &mut Vec<Warning>) -> Result<(), ConfigError> {
        // A zero ping interval panics the connection task; a zero idle timeout closes every
        // widget at once.
        duration(
            "PORCH_WS_PING_INTERVAL",
            self.ws_ping_interval,
            SECOND,
            10 * MINUTE,
        )?;
        duration("PORCH_WS_IDLE_TIMEOUT", self.ws_idle_timeout, SECOND, HOUR)?;
        // The pings are what keep an idle but live widget from being closed.
        if self.ws_ping_interval >= self.ws_idle_timeout {
            return Err(ConfigError::new(
                "PORCH_WS_PING_INTERVAL",
                format!(
                    "must be shorter than PORCH_WS_IDLE_TIMEOUT ({}), got {}",
                    humantime::format_duration(self.ws_idle_timeout),
                    humantime::format_duration(self.ws_ping_interval)
                ),
            ));
        }
        if self.ws_ping_interval * 2 > self.ws_idle_timeout {
            warnings.push(Warning(
                "PORCH_WS_PING_INTERVAL is more than half of PORCH_WS_IDLE_TIMEOUT: one late pong \
                 closes a live widget"
                    .to_owned(),
            ));
        }
        // Below 1 KiB an ordinary message closes the connection.
        count("PORCH_WS_MAX_MESSAGE", self.ws_max_message, KIB, 16 * MIB)?;
        Ok(())
    }

    fn validate_imap(&self, warnings: &mut Vec<Warning>) -> Result<(), ConfigError> {
        duration(
            "PORCH_IMAP_POLL",
            self.imap_poll,
            Duration::from_secs(1),
            Duration::from_hours(1),
        )?;
        let Some(imap) = &self.imap_url else {
            return Ok(());
        };
        // The setting the operator wrote: the file's, when the URL came from one.
        let variable = if self.imap_url_file.is_some() {
            "PORCH_IMAP_URL_FILE"
        } else {
            "PORCH_IMAP_URL"
        };
        if self.smtp_url.is_none() || self.mail_from.is_none() {
            return Err(ConfigError::new(
                variable,
                "needs PORCH_SMTP_URL and PORCH_MAIL_FROM (replies answer Porch's mails)",
            ));
        }
        // The reason never quotes the value: it carries the password.
        let settings =
            crate::integrations::email::inbound::ImapSettings::parse(imap.expose(), self.imap_poll)
                .map_err(|reason| {
                    ConfigError::new(variable, format!("{reason} (value not shown: a secret)"))
                })?;
        let is_local = Url::parse(imap.expose()).is_ok_and(|url| is_loopback_host(&url));
        if !settings.tls && !is_local {
            warnings.push(Warning(
                "PORCH_IMAP_URL is unencrypted imap:// to another host: mail and the password \
                 cross the network in clear (use imaps://)"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    fn validate_mail(&self, warnings: &mut Vec<Warning>) -> Result<(), ConfigError> {
        match (&self.smtp_url, &self.mail_from) {
            (Some(_), None) => {
                return Err(ConfigError::new(
                    "PORCH_MAIL_FROM",
                    "must be set when PORCH_SMTP_URL is (the address mail comes from)",
                ));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(
                    "PORCH_SMTP_URL",
                    "must be set when PORCH_MAIL_FROM is (without it no mail is sent)",
                ));
            }
            _ => {}
        }
        if let Some(smtp) = &self.smtp_url {
            let variable = if self.smtp_url_file.is_some() {
                "PORCH_SMTP_URL_FILE"
            } else {
                "PORCH_SMTP_URL"
            };
            // Never print the value: it carries the credentials.
            let rule = "must be an smtp:// or smtps:// URL with a host (value not shown: a secret)";
            let url = Url::parse(smtp.expose()).map_err(|_| ConfigError::new(variable, rule))?;
            if !matches!(url.scheme(), "smtp" | "smtps") || url.host_str().is_none() {
                return Err(ConfigError::new(variable, rule));
            }
            let tls = url.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v);
            if !matches!(tls.as_deref(), None | Some("required" | "opportunistic")) {
                return Err(ConfigError::new(
                    variable,
                    "must leave out its `tls` parameter or set it to `required` (STARTTLS) or `opportunistic` \
                     (value not shown: a secret)",
                ));
            }
            if lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(smtp.expose())
                .is_err()
            {
                return Err(ConfigError::new(
                    variable,
                    format!("{rule}; URL-encode the user and the password"),
                ));
            }
            let is_local = is_loopback_host(&url);
            let is_encrypted = url.scheme() == "smtps"
                || url
                    .query_pairs()
                    .any(|(k, v)| k == "tls" && v == "required");
            if !is_encrypted && !is_local {
                warnings.push(Warning(
                    "PORCH_SMTP_URL is unencrypted smtp:// to another host: mail and credentials \
                     cross the network in clear (use smtps:// or ?tls=required)"
                        .to_owned(),
                ));
            }
        }
        if let Some(Err(err)) = self
            .mail_from
            .as_ref()
            .map(|from| from.parse::<lettre::message::Mailbox>())
        {
            return Err(ConfigError::new(
                "PORCH_MAIL_FROM",
                format!("must be an address such as `Porch <chat@example.com>` ({err})"),
            ));
        }
        self.validate_imap(warnings)
    }
}

/// `PORCH_DATA_DIR`'s rule, for `serve` and every other command that opens the data directory:
/// if it exists, a directory (a regular file there sent `user list` to say there was no
/// database, and `site add` to fail creating the directory).
///
/// # Errors
/// When something other than a directory is there.
pub fn data_dir_rule(data_dir: &std::path::Path) -> Result<(), ConfigError> {
    if data_dir.exists() && !data_dir.is_dir() {
        return Err(ConfigError::new(
            "PORCH_DATA_DIR",
            format!("must be a directory ({} is not)", data_dir.display()),
        ));
    }
    Ok(())
}

/// A duration as a refusal shows it: in days past a day, never in humantime's months and years
/// (a year is 365.25 days there, so `366days` came back as "got 1year 18h", a value nobody typed).
fn show(value: Duration) -> String {
    const DAY: u64 = 86_400;
    let secs = value.as_secs();
    if secs < DAY || value.subsec_nanos() != 0 {
        return humantime::format_duration(value).to_string();
    }
    let days = secs / DAY;
    let unit = if days == 1 { "day" } else { "days" };
    match Duration::from_secs(secs % DAY) {
        rest if rest.is_zero() => format!("{days}{unit}"),
        rest => format!("{days}{unit} {}", humantime::format_duration(rest)),
    }
}

fn duration(
    variable: &'static str,
    value: Duration,
    min: Duration,
    max: Duration,
) -> Result<(), ConfigError> {
    if value < min {
        Err(ConfigError::new(
            variable,
            format!("must be at least {} (got {})", show(min), show(value)),
        ))
    } else if value > max {
        Err(ConfigError::new(
            variable,
            format!("must be at most {} (got {})", show(max), show(value)),
        ))
    } else {
        Ok(())
    }
}

fn count<T: PartialOrd + std::fmt::Display + Copy>(
    variable: &'static str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ConfigError> {
    if value < min {
        Err(ConfigError::new(
            variable,
            format!("must be at least {min} (got {value})"),
        ))
    } else if value > max {
        Err(ConfigError::new(
            variable,
            format!("must be at most {max} (got {value})"),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn an_error_names_the_variable_and_the_flag_on_one_line() {
        let err = ConfigError::new("PORCH_WS_PING_INTERVAL", "must be at least 1s\n(got 0s)");
        assert_eq!(
            err.to_string(),
            "PORCH_WS_PING_INTERVAL (--ws-ping-interval) must be at least 1s (got 0s)"
        );
    }

    #[test]
    fn a_year_bound_is_the_year_an_operator_types() {
        let year = humantime::parse_duration("1year").expect("a duration");
        assert_eq!(YEAR, year);
        assert!(duration("PORCH_JOB_RETENTION", year, MINUTE, YEAR).is_ok());
        let days = humantime::parse_duration("365days").expect("a duration");
        assert!(duration("PORCH_JOB_RETENTION", days, MINUTE, YEAR).is_ok());
        let ten = humantime::parse_duration("10years").expect("a duration");
        assert!(duration("PORCH_AUDIT_RETENTION", ten, DAY, 10 * YEAR).is_ok());
        let over = humantime::parse_duration("366days").expect("a duration");
        let refused = duration("PORCH_JOB_RETENTION", over, MINUTE, YEAR).expect_err("over");
        // In days, as typed: humantime's own words were "at most 1year (got 1year 18h)".
        assert!(
            refused
                .to_string()
                .ends_with("must be at most 365days 6h (got 366days)"),
            "{refused}"
        );
        let day = Duration::from_hours(24);
        assert_eq!(show(day), "1day");
        assert_eq!(show(day + Duration::from_secs(90)), "1day 1m 30s");
        assert_eq!(show(Duration::from_secs(90)), "1m 30s");
    }

    #[test]
    fn a_wildcard_listen_address_falls_back_to_loopback() {
        assert_eq!(
            super::super::reachable("0.0.0.0:8080".parse().unwrap()),
            "127.0.0.1:8080".parse::<SocketAddr>().unwrap()
        );
        assert_eq!(
            super::super::reachable("[::]:8080".parse().unwrap()),
            "[::1]:8080".parse::<SocketAddr>().unwrap()
        );
    }
}
