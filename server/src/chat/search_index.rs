//! The search indexer: messages are not indexed when they are written (that cost 80 µs a
//! message on the widget's path, docs/capacity.md#search) but by this background task, in
//! batches after a watermark. Each batch is a deferred write, riding along in a batch the
//! writer commits anyway, and is followed by a pause [`PACE`] times as long as it took on the
//! writer thread, so a backlog (after a restart, an upgrade or a bulk import) takes at most a
//! quarter of the writer's time. With no backlog it looks every [`POLL`] (a read, no write),
//! so a new message is searchable within [`POLL`] plus one batch: the promise in
//! docs/admin.md#search.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::store::{self, IndexStep, Readers, Writer};

/// How often the indexer looks for new messages when it has caught up.
const POLL: Duration = Duration::from_millis(500);
/// Messages per batch: about 5 ms of the writer's time in a release build, small enough that
/// a widget message committed in the same batch barely waits.
const INDEX_BATCH: u32 = 100;
/// After a batch that took the writer `t`, the indexer waits `PACE × t` before the next one.
const PACE: u32 = 3;
/// The shortest pause between two batches.
const MIN_PAUSE: Duration = Duration::from_millis(1);
/// After a failed batch (a full disk, say), the indexer waits this long before trying again.
const RETRY: Duration = Duration::from_secs(5);

/// Indexes one batch as a deferred write, then pauses in proportion to the time it took on the
/// writer thread (not to the wait for its batch).
///
/// # Errors
/// A failed write; nothing of the batch is kept.
async fn index_batch(writer: &Writer, batch: u32) -> Result<IndexStep, store::Error> {
    let (step, took) = writer
        .write_deferred(move |c| {
            let started = Instant::now();
            let step = store::index_messages(c, batch)?;
            Ok((step, started.elapsed()))
        })
        .await?;
    tokio::time::sleep((took * PACE).max(MIN_PAUSE)).await;
    Ok(step)
}

/// Whether messages wait to be indexed: a read, so an idle server commits nothing.
async fn has_backlog(readers: &Arc<Readers>) -> Result<bool, store::Error> {
    Ok(readers.read(|c| store::count_unindexed(c, 1)).await? > 0)
}

/// Runs the indexer until shutdown: batches while there is a backlog, then a look every
/// [`POLL`].
pub fn spawn_search_indexer(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    shutdown: &CancellationToken,
) {
    let (writer, readers, shutdown) = (Arc::clone(writer), Arc::clone(readers), shutdown.clone());
    tokio::spawn(async move {
        loop {
            let wait = match has_backlog(&readers).await {
                Ok(false) => POLL,
                Ok(true) => match index_batch(&writer, INDEX_BATCH).await {
                    Ok(_) => Duration::ZERO,
                    Err(err) => {
                        tracing::warn!(error = %err, "search indexing failed");
                        RETRY
                    }
                },
                Err(err) => {
                    tracing::warn!(error = %err, "search indexer could not read its backlog");
                    RETRY
                }
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => break,
            }
        }
    });
}
