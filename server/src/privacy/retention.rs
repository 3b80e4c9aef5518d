//! The retention purge: every [`RETENTION_EVERY`], each site with a retention period loses the
//! conversations last active more than that many days ago, [`PURGE_CHUNK`] rows per writer
//! transaction, and the freed pages are given back to the file system in steps.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::store::{self, Deleted, Readers, Writer};

/// How often the purge looks for due conversations.
pub const RETENTION_EVERY: Duration = Duration::from_mins(1);
/// Rows deleted per writer transaction: small enough that a widget's message queued behind one
/// waits a few milliseconds, not seconds.
pub const PURGE_CHUNK: usize = 500;
/// Free pages given back per writer transaction (4 MiB with the default 4 KiB page).
const RECLAIM_STEP: u32 = 1024;
/// A day in milliseconds, as timestamps are kept.
const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Runs one purge as of `now` (Unix ms): for each site with a retention of N days, deletes the
/// conversations last active (last message, or closing if later) at or before `now` − N days,
/// with their messages, jobs, threads and visitors no longer referenced; then gives the freed
/// pages back. Returns what was deleted.
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
            let step = writer
                .write(move |c| store::purge_due_conversations(c, site, cutoff, PURGE_CHUNK))
                .await?;
            total.add(step);
            if step.rows() == 0 {
                break;
            }
        }
    }
    if total.rows() > 0 {
        reclaim(writer).await?;
    }
    Ok(total)
}

/// Gives free pages back in steps until none is left (or the file is not in incremental mode).
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
