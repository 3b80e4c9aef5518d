//! The retention purge: every [`RETENTION_EVERY`], each site with a retention period loses the
//! conversations last active more than that many days ago, [`PURGE_CHUNK`] rows at a time, and
//! the freed pages are given back to the file system in steps. The purge is background work
//! that must not be felt by visitors: each step rides along in a batch the writer commits anyway
//! (a deferred write: no fsync of its own) and is followed by a pause [`PACE`] times as long as
//! the step took, so the purge takes at most a quarter of the writer's time however much is due.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::store::{self, Deleted, Readers, Writer};

/// How often the purge looks for due conversations.
pub const RETENTION_EVERY: Duration = Duration::from_mins(1);
/// Rows deleted per step (and per erasure transaction): small enough that a widget's message in
/// the same batch waits about a millisecond more, not tens of milliseconds.
pub const PURGE_CHUNK: usize = 100;
/// Free pages given back per step (1 MiB with the default 4 KiB page).
pub const RECLAIM_STEP: u32 = 256;
/// After a step that took the writer `t`, the purge waits `PACE × t` before the next one.
const PACE: u32 = 3;
/// The shortest pause between two steps.
const MIN_PAUSE: Duration = Duration::from_millis(1);
/// A day in milliseconds, as timestamps are kept.
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Runs one purge as of `now` (Unix ms): for each site with a retention of N days, deletes the
/// conversations last active (last message, or closing if later) at or before `now` − N days,
/// with their messages, jobs, threads and visitors no longer referenced; then gives the freed
/// pages back and empties the WAL of the deleted rows' older pages. Returns what was deleted.
///
/// # Errors
/// A failed read or write; what was committed before it stays deleted.
pub async fn purge_due(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    now: i64,
) -> Result<Deleted, store::Error> {
    let sites = readers.read(store::list_retention_sites).await?;
    let mut total = Deleted::default();
    for (site, days) in sites {
        let cutoff = now.saturating_sub(i64::from(days) * DAY_MS);
        loop {
            let step = paced_step(writer, move |c| {
                store::purge_due_conversations(c, site, cutoff, PURGE_CHUNK)
            })
            .await?;
            total.add(step);
            if step.rows() == 0 {
                break;
            }
        }
    }
    if total.rows() > 0 {
        let reclaimed = reclaim_paced(writer).await;
        // Past its retention, text must not stay readable in the WAL either, also when giving
        // the pages back failed.
        store::truncate_wal_after_deleting(writer).await;
        reclaimed?;
    }
    Ok(total)
}

/// Gives the freed pages back, a paced step at a time.
async fn reclaim_paced(writer: &Arc<Writer>) -> Result<(), store::Error> {
    while paced_step(writer, |c| store::reclaim_free_pages(c, RECLAIM_STEP)).await? > 0 {}
    Ok(())
}

/// Runs one step of the purge as a deferred write, then pauses in proportion to the time the
/// step took on the writer thread (not to the wait for its batch).
async fn paced_step<R: Send + 'static>(
    writer: &Arc<Writer>,
    step: impl FnOnce(&rusqlite::Connection) -> Result<R, store::Error> + Send + 'static,
) -> Result<R, store::Error> {
    let (result, took) = writer
        .write_deferred(move |c| {
            let started = Instant::now();
            let result = step(c)?;
            Ok((result, started.elapsed()))
        })
        .await?;
    tokio::time::sleep((took * PACE).max(MIN_PAUSE)).await;
    Ok(result)
}

/// Gives free pages back in steps until none is left (or the file is not in incremental mode),
/// each in a transaction of its own: after an erasure, which someone is waiting for.
///
/// # Errors
/// A failed write.
pub(super) async fn reclaim(writer: &Arc<Writer>) -> Result<(), store::Error> {
    while writer
        .write(|c| store::reclaim_free_pages(c, RECLAIM_STEP))
        .await?
        > 0
    {}
    Ok(())
}

/// Runs [`purge_due`] every `every` until shutdown. The first run waits a full period:
/// start-up has enough to do.
pub fn spawn_retention(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    every: Duration,
    shutdown: &CancellationToken,
) {
    let (writer, readers, shutdown) = (Arc::clone(writer), Arc::clone(readers), shutdown.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => break,
            }
            match purge_due(&writer, &readers, now_ms()).await {
                Ok(deleted) if deleted.rows() > 0 => tracing::info!(
                    messages = deleted.messages,
                    conversations = deleted.conversations,
                    visitors = deleted.visitors,
                    "retention purge deleted conversations"
                ),
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "retention purge failed"),
            }
        }
    });
}
