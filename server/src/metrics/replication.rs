//! Litestream's replication as the capacity page shows it. When `PORCH_LITESTREAM_METRICS_URL` is
//! set, a task scrapes the sidecar's Prometheus endpoint (`addr:` in `litestream.yml`) every 10 s
//! and keeps what it read, with the time it last saw Litestream complete a sync.
//!
//! What Litestream 0.5 exposes, per database (label `db`, the path it replicates), and so what the
//! page can say honestly:
//! - `litestream_txid`: the newest transaction Litestream has captured into its LTX files;
//! - `litestream_sync_count`, `litestream_sync_error_count`: sync attempts and failed ones (it
//!   syncs once a second even without writes, so their difference stops rising when syncing
//!   stops succeeding);
//! - `litestream_disk_full`: 1 while replication is paused because the local disk is full.
//!
//! There is no metric of the replica's own position: an upload failing after a successful local
//! sync leaves every counter unchanged (the sidecar's `litestream sync -wait` healthcheck catches
//! that). So the lag shown is "seconds since a successful sync was last seen", accurate to one
//! scrape, and the page says what it does not cover.

use std::sync::Mutex;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;

/// The metric names parsed (observed from Litestream 0.5.17; `tests/ops` checks they exist).
pub const TXID: &str = "litestream_txid";
pub const SYNC_COUNT: &str = "litestream_sync_count";
pub const SYNC_ERROR_COUNT: &str = "litestream_sync_error_count";
pub const DISK_FULL: &str = "litestream_disk_full";

/// Seconds without a sync seen past which the page warns (six scrapes at the default interval).
pub const STALE_AFTER_SECS: u64 = 60;
/// Most a scrape may take: the sidecar is on the same host or network.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(3);

/// One scrape's figures for Porch's database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    pub txid: Option<u64>,
    pub syncs: Option<u64>,
    pub sync_errors: Option<u64>,
    pub disk_full: bool,
}

impl Reading {
    /// Syncs that succeeded, when both counters were present.
    fn successful_syncs(self) -> Option<u64> {
        Some(self.syncs?.saturating_sub(self.sync_errors?))
    }
}

/// Parses the Prometheus text for the series whose `db` label ends with `database_file`
/// (Litestream's path differs from Porch's when each runs in its own container).
pub fn parse(text: &str, database_file: &str) -> Reading {
    let mut reading = Reading::default();
    let wanted = format!("/{database_file}\"");
    for line in text.lines() {
        if line.starts_with('#') || !line.contains(&wanted) {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let name = series.split('{').next().unwrap_or_default();
        let Ok(value) = value.trim().parse::<f64>() else {
            continue;
        };
        if !value.is_finite() || value < 0.0 {
            continue;
        }
        // Counters and txids are integers carried as floats; below 2^53 the cast is exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = value as u64;
        match name {
            TXID => reading.txid = Some(whole),
            SYNC_COUNT => reading.syncs = Some(whole),
            SYNC_ERROR_COUNT => reading.sync_errors = Some(whole),
            DISK_FULL => reading.disk_full = whole > 0,
            _ => {}
        }
    }
    reading
}

/// What the page shows, read at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// When the last scrape finished, successful or not.
    pub scraped_at: Option<i64>,
    /// Why the last scrape failed; `None` after a successful one.
    pub error: Option<String>,
    /// The last successful scrape's figures.
    pub reading: Reading,
    /// When a successful sync was last seen: the scrape at which the count of successful syncs
    /// rose, or the first successful scrape (so a sync loop stuck from the start still ages).
    pub synced_seen_at: Option<i64>,
}

/// The sidecar's replication, as last scraped; `None` URL when no sidecar is configured.
#[derive(Debug, Default)]
pub struct Replication {
    url: Option<String>,
    status: Mutex<Status>,
}

impl Replication {
    pub fn new(url: Option<String>) -> Self {
        Self {
            url,
            status: Mutex::default(),
        }
    }

    /// The configured metrics URL.
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Records one scrape's outcome at `at`.
    pub fn record(&self, at: i64, outcome: Result<Reading, String>) {
        let mut status = self
            .status
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        status.scraped_at = Some(at);
        match outcome {
            Ok(reading) => {
                let rose = match (
                    status.reading.successful_syncs(),
                    reading.successful_syncs(),
                ) {
                    (Some(before), Some(now)) => now > before,
                    _ => false,
                };
                if rose || status.synced_seen_at.is_none() {
                    status.synced_seen_at = Some(at);
                }
                status.reading = reading;
                status.error = None;
            }
            Err(error) => status.error = Some(error),
        }
    }
}

/// Scrapes `replication`'s URL every `every` until `shutdown`, with `client`. Does nothing when
/// no URL is configured.
pub fn spawn_replication_scraper(
    replication: std::sync::Arc<Replication>,
    client: reqwest::Client,
    every: Duration,
    database_file: &'static str,
    shutdown: CancellationToken,
) {
    let Some(url) = replication.url().map(str::to_owned) else {
        return;
    };
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Said once when scraping starts failing (a wrong URL showed only on an admin page), and
        // once when it works again; each failure in between at debug level.
        let mut failing = false;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let outcome = scrape(&client, &url, database_file).await;
            match &outcome {
                Err(error) if !failing => {
                    tracing::warn!(%error, "Litestream's metrics cannot be scraped (PORCH_LITESTREAM_METRICS_URL): the capacity page cannot tell whether replication keeps up");
                }
                Err(error) => tracing::debug!(%error, "Litestream metrics scrape failed"),
                Ok(_) if failing => tracing::info!("Litestream's metrics are scraped again"),
                Ok(_) => {}
            }
            failing = outcome.is_err();
            replication.record(now_ms(), outcome);
        }
    });
}

async fn scrape(
    client: &reqwest::Client,
    url: &str,
    database_file: &str,
) -> Result<Reading, String> {
    let response = client
        .get(url)
        .timeout(SCRAPE_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", without_url(&e)))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let text = response
        .text()
        .await
        .map_err(|e| format!("reading {url}: {}", without_url(&e)))?;
    let reading = parse(&text, database_file);
    if reading.txid.is_none() && reading.syncs.is_none() {
        return Err(format!(
            "{url} has no {TXID} or {SYNC_COUNT} for a database named {database_file}"
        ));
    }
    Ok(reading)
}

/// The error's kind without reqwest's repetition of the URL.
fn without_url(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    }
}

/// Seconds from `since` to `now`, never negative.
pub fn age_secs(now: i64, since: i64) -> u64 {
    u64::try_from((now - since).max(0) / 1000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
# HELP litestream_txid The current transaction ID
# TYPE litestream_txid gauge
litestream_txid{db=\"/data/porch.db\"} 42
litestream_sync_count{db=\"/data/porch.db\"} 9
litestream_sync_error_count{db=\"/data/porch.db\"} 2
litestream_disk_full{db=\"/data/porch.db\"} 0
litestream_txid{db=\"/data/other.db\"} 7
";

    #[test]
    fn parses_the_series_of_porchs_database() {
        assert_eq!(
            parse(TEXT, "porch.db"),
            Reading {
                txid: Some(42),
                syncs: Some(9),
                sync_errors: Some(2),
                disk_full: false,
            }
        );
        assert_eq!(parse(TEXT, "none.db"), Reading::default());
    }

    #[test]
    fn a_sync_is_seen_when_successful_syncs_rise() {
        let replication = Replication::new(Some("http://127.0.0.1:9090/metrics".to_owned()));
        let reading = |syncs, sync_errors| Reading {
            txid: Some(1),
            syncs: Some(syncs),
            sync_errors: Some(sync_errors),
            disk_full: false,
        };
        replication.record(1_000, Ok(reading(5, 0)));
        assert_eq!(replication.status().synced_seen_at, Some(1_000));
        // Only failures: not a sync.
        replication.record(2_000, Ok(reading(7, 2)));
        assert_eq!(replication.status().synced_seen_at, Some(1_000));
        replication.record(3_000, Err("down".to_owned()));
        let status = replication.status();
        assert_eq!(status.error.as_deref(), Some("down"));
        assert_eq!(status.scraped_at, Some(3_000));
        replication.record(4_000, Ok(reading(8, 2)));
        let status = replication.status();
        assert_eq!(status.synced_seen_at, Some(4_000));
        assert_eq!(status.error, None);
    }
}
