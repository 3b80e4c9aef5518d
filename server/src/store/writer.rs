//! The single writer: one thread owns the only write connection. It takes the first queued write,
//! drains whatever else is queued (up to a batch limit), runs them all in one
//! `BEGIN IMMEDIATE … COMMIT`, and answers each caller only after COMMIT returned. One fsync thus
//! covers the whole batch, which is what makes `synchronous=FULL` affordable.
//!
//! Writes nobody is waiting on in a hurry (the job runner's bookkeeping) can be queued as
//! *deferred*: they ride along with the next write that someone is waiting for, or are committed
//! on their own after [`DEFER_LIMIT`]. A commit costs far more than the rows in it (an fsync,
//! and on the test VM about 150 µs of kernel CPU), so the runner's writes stop costing a commit
//! of their own (docs/jobs.md has the measurement).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{
    Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError, sync_channel,
};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::Error;
use super::checkpoint::{WAL_BOUND, WalGuard};
use super::write_failures::Failures;
use crate::histogram::LogHistogram;

/// The longest a deferred write waits for company before it is committed alone.
pub const DEFER_LIMIT: Duration = Duration::from_millis(20);

/// A unit of work run inside the writer's transaction.
trait WriteOp: Send {
    /// Runs the work; its writes are kept only if it succeeds and the batch commits.
    fn apply(&mut self, conn: &Connection) -> Applied;
    /// Whether `apply` may run again after its writes were rolled back (see [`apply_all`]).
    fn is_repeatable(&self) -> bool;
    /// Delivers the outcome once the batch has committed (`None`) or failed (`Some`).
    fn finish(self: Box<Self>, batch_error: Option<Error>);
}

/// How one op went inside the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    Ok,
    /// The op failed; its writes are undone (see [`apply_all`]), the others go on.
    Failed,
    /// The disk is full: nothing of this batch can be committed.
    DiskFull,
}

/// The work of an op: runs once, or may run again.
trait Work<R>: Send {
    const IS_REPEATABLE: bool;
    fn run(&mut self, conn: &Connection) -> Result<R, Error>;
}

/// Work that runs at most once.
struct Once<F>(Option<F>);

impl<F, R> Work<R> for Once<F>
where
    F: FnOnce(&Connection) -> Result<R, Error> + Send,
{
    const IS_REPEATABLE: bool = false;

    fn run(&mut self, conn: &Connection) -> Result<R, Error> {
        self.0.take().map_or(Err(Error::Stopped), |work| work(conn))
    }
}

/// Work whose only effects are its writes, so it can run again after a rollback.
struct Repeatable<F>(F);

impl<F, R> Work<R> for Repeatable<F>
where
    F: FnMut(&Connection) -> Result<R, Error> + Send,
{
    const IS_REPEATABLE: bool = true;

    fn run(&mut self, conn: &Connection) -> Result<R, Error> {
        (self.0)(conn)
    }
}

struct Op<W, R, P> {
    work: W,
    result: Option<Result<R, Error>>,
    /// Runs on the writer thread once the batch committed, before the caller is answered.
    on_commit: P,
    reply: oneshot::Sender<Result<R, Error>>,
}

impl<W, R, P> WriteOp for Op<W, R, P>
where
    W: Work<R>,
    R: Send,
    P: FnOnce(&R) + Send,
{
    fn apply(&mut self, conn: &Connection) -> Applied {
        let result = self.work.run(conn);
        let applied = match &result {
            Ok(_) => Applied::Ok,
            Err(Error::DiskFull) => Applied::DiskFull,
            Err(_) => Applied::Failed,
        };
        self.result = Some(result);
        applied
    }

    fn is_repeatable(&self) -> bool {
        W::IS_REPEATABLE
    }

    fn finish(self: Box<Self>, batch_error: Option<Error>) {
        let outcome = match batch_error {
            Some(err) => Err(err),
            None => self.result.unwrap_or(Err(Error::Stopped)),
        };
        if let Ok(value) = &outcome {
            (self.on_commit)(value);
        }
        // The caller may have gone away (closed socket); its write is committed all the same.
        let _ = self.reply.send(outcome);
    }
}

enum Request {
    Write {
        op: Box<dyn WriteOp>,
        /// May wait up to [`DEFER_LIMIT`] for a write that is not deferred.
        is_deferred: bool,
    },
    /// Commit what is queued, then stop the thread.
    Stop,
}

/// Counters the capacity sampler and `/metrics` read.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Writes waiting in the queue right now.
    pub queue_depth: AtomicUsize,
    /// Batches committed since start.
    pub batches: AtomicU64,
    /// Writes committed since start (sum of batch sizes).
    pub writes: AtomicU64,
    /// Total time spent in BEGIN…COMMIT, in microseconds.
    pub commit_micros: AtomicU64,
    /// Time in BEGIN…COMMIT per committed batch, in microseconds (percentiles and max).
    pub commit_latency: LogHistogram,
    /// Writes per committed batch (how well group commit is grouping).
    pub batch_sizes: LogHistogram,
    /// Writes refused because the queue was full.
    pub refused_busy: AtomicU64,
    /// Set when a commit fails for lack of disk space; cleared only by a probe that finds room
    /// again (after each later commit, and about once a second while idle).
    pub is_disk_full: AtomicBool,
    /// Writes refused because the WAL was past `PORCH_WAL_LIMIT` (see `checkpoint.rs`).
    pub refused_wal_limit: AtomicU64,
    /// Batches whose repeatable writes ran a second time, each in a savepoint, because one of
    /// them failed (see `apply_all`).
    pub reruns: AtomicU64,
    /// Batches rolled back because they failed to commit (a full disk, a locked database).
    pub failed_batches: AtomicU64,
    /// Set after personal data was deleted (an erasure, a purge): truncate the WAL after the next batch (`checkpoint.rs`).
    pub wal_truncate_asked: AtomicBool,
}

/// Handle to the writer thread. Cheap to share behind an `Arc`.
pub struct Writer {
    queue: SyncSender<Request>,
    thread: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    ///
    /// `queue_capacity` bounds the writes waiting (beyond it callers get [`Error::Busy`]);
    /// `max_batch` bounds how many writes share one transaction; past `wal_limit` bytes of WAL
    /// that cannot be checkpointed, batches are refused.
    pub fn start(
        conn: Connection,
        queue_capacity: usize,
        max_batch: usize,
        wal_limit: u64,
    ) -> std::io::Result<Self> {
        let (queue, rx) = sync_channel(queue_capacity);
        let stats = Arc::new(WriterStats::default());
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("porch-writer".into())
            .spawn(move || {
                let wal = WalGuard::new(&conn, WAL_BOUND, wal_limit);
                run(&conn, &rx, max_batch.max(1), &thread_stats, wal);
            })?;
        Ok(Self {
            queue,
            thread: Mutex::new(Some(thread)),
            stats,
        })
    }

    /// Runs `work` in the next batch and resolves after that batch committed.
    ///
    /// # Errors
    /// [`Error::Busy`] at once if the queue is full; [`Error::Stopped`] after shutdown; the
    /// work's own error; or the batch's commit error (then nothing of `work` was stored).
    pub async fn write<F, R>(&self, work: F) -> Result<R, Error>
    where
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
        R: Send + 'static,
    {
        self.submit(Once(Some(work)), |_: &R| {}, false).await
    }

    /// Like [`Writer::write`], and once the batch has committed, runs `on_commit` with the
    /// result on the writer thread before the next batch starts. Hooks therefore run in commit
    /// order, which is id order: live streams that publish from here are seen in the order of
    /// the ids, so a client resuming from "the highest id I received" never skips one. Keep
    /// hooks short and non-blocking (a queue push, no I/O).
    ///
    /// # Errors
    /// As [`Writer::write`]; `on_commit` runs only for a write that succeeded and committed.
    pub async fn write_then<F, R, P>(&self, work: F, on_commit: P) -> Result<R, Error>
    where
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
        R: Send + 'static,
        P: FnOnce(&R) + Send + 'static,
    {
        self.submit(Once(Some(work)), on_commit, false).await
    }

    /// Like [`Writer::write_then`] for work that may run more than once: its only effects are
    /// its writes, a rerun after they were rolled back does the same, and it returns at its
    /// first error. Such writes share their batch without a savepoint each, which saves copying
    /// every page they touch (about 5 % of the writer's CPU per write, docs/capacity.md "Twenty
    /// thousand a second"); the hot path's visitor messages go this way.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn write_then_repeatable<F, R, P>(&self, work: F, on_commit: P) -> Result<R, Error>
    where
        F: FnMut(&Connection) -> Result<R, Error> + Send + 'static,
        R: Send + 'static,
        P: FnOnce(&R) + Send + 'static,
    {
        self.submit(Repeatable(work), on_commit, false).await
    }

    /// Like [`Writer::write`], but the batch may wait up to [`DEFER_LIMIT`] for a write that is
    /// not deferred, so this one needs no commit of its own.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn write_deferred<F, R>(&self, work: F) -> Result<R, Error>
    where
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
        R: Send + 'static,
    {
        self.submit(Once(Some(work)), |_: &R| {}, true).await
    }

    async fn submit<W, R, P>(&self, work: W, on_commit: P, is_deferred: bool) -> Result<R, Error>
    where
        W: Work<R> + 'static,
        R: Send + 'static,
        P: FnOnce(&R) + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let op = Box::new(Op {
            work,
            result: None,
            on_commit,
            reply,
        });
        self.stats.queue_depth.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(Request::Write { op, is_deferred }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.stats.queue_depth.fetch_sub(1, Ordering::Relaxed);
                self.stats.refused_busy.fetch_add(1, Ordering::Relaxed);
                return Err(Error::Busy);
            }
            Err(TrySendError::Disconnected(_)) => {
                self.stats.queue_depth.fetch_sub(1, Ordering::Relaxed);
                return Err(Error::Stopped);
            }
        }
        answer.await.unwrap_or(Err(Error::Stopped))
    }

    /// The writer's counters.
    pub fn stats(&self) -> &Arc<WriterStats> {
        &self.stats
    }

    /// Commits everything already queued, then stops the thread and waits for it. Writes
    /// submitted afterwards fail with [`Error::Stopped`]. Blocks: call from a blocking context.
    pub fn shutdown(&self) {
        let Ok(mut guard) = self.thread.lock() else {
            return;
        };
        let Some(thread) = guard.take() else { return };
        // A blocking send: the stop request must not be refused because the queue is full.
        if self.queue.send(Request::Stop).is_ok() && thread.join().is_err() {
            tracing::error!("the writer thread panicked");
        }
    }
}

/// The writes gathered for the next transaction, in the order they will run: the writes someone
/// waits for first, deferred ones after them. The search indexer's writes are deferred, and once
/// a batch has written to an FTS5 table SQLite flushes that table at every later savepoint:
/// indexing last costs one flush, not one per visitor message after it (docs/capacity.md,
/// "Agents watching, round three"). Among the first, repeatable writes lead, as `apply_all`
/// needs them. Within each kind the order is arrival; across kinds none is owed, as none of
/// these writes waited for another.
struct Batch {
    ops: Vec<Box<dyn WriteOp>>,
    /// How many repeatable writes lead `ops`.
    repeatable: usize,
    /// How many writes that are not deferred lead `ops` (the repeatable ones included).
    urgent: usize,
}

impl Batch {
    fn new(capacity: usize) -> Self {
        Self {
            ops: Vec::with_capacity(capacity),
            repeatable: 0,
            urgent: 0,
        }
    }

    fn push(&mut self, op: Box<dyn WriteOp>, is_deferred: bool) {
        if is_deferred {
            self.ops.push(op);
            return;
        }
        let at = if op.is_repeatable() {
            self.repeatable += 1;
            self.repeatable - 1
        } else {
            self.urgent
        };
        self.ops.insert(at, op);
        self.urgent += 1;
    }

    /// Commits the gathered writes (see [`commit_guarded`]) and starts an empty batch.
    fn commit(
        &mut self,
        conn: &Connection,
        stats: &WriterStats,
        wal: &mut WalGuard,
        failures: &mut Failures,
    ) {
        commit_guarded(conn, &mut self.ops, stats, wal, failures);
        self.repeatable = 0;
        self.urgent = 0;
    }
}

fn run(
    conn: &Connection,
    rx: &Receiver<Request>,
    max_batch: usize,
    stats: &WriterStats,
    mut wal: WalGuard,
) {
    let mut batch = Batch::new(max_batch);
    let mut failures = Failures::at_start(conn, &stats.is_disk_full);
    let mut stopping = false;
    // Set while `batch` holds only deferred writes: when the first of them arrived.
    let mut deferred_since: Option<Instant> = None;
    while !stopping {
        // Commit now unless everything gathered may still wait.
        let mut is_due = false;
        let next = match (deferred_since, failures.next_probe) {
            (None, None) => rx.recv().ok(),
            // Nothing gathered (so nothing to commit) and the disk was full: probe when idle.
            (None, Some(at)) => match rx.recv_timeout(at.saturating_duration_since(Instant::now()))
            {
                Ok(request) => Some(request),
                Err(RecvTimeoutError::Timeout) => {
                    if failures.probe(conn) {
                        stats.is_disk_full.store(false, Ordering::Relaxed);
                    }
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => None,
            },
            (Some(since), _) => {
                match rx.recv_timeout(DEFER_LIMIT.saturating_sub(since.elapsed())) {
                    Ok(request) => Some(request),
                    Err(RecvTimeoutError::Timeout) => {
                        is_due = true;
                        None
                    }
                    Err(RecvTimeoutError::Disconnected) => None,
                }
            }
        };
        let mut take = |request: Option<Request>, batch: &mut Batch| match request {
            Some(Request::Write { op, is_deferred }) => {
                batch.push(op, is_deferred);
                !is_deferred
            }
            Some(Request::Stop) | None => {
                stopping = true;
                true
            }
        };
        if !is_due {
            is_due = take(next, &mut batch);
        }
        while batch.ops.len() < max_batch {
            match rx.try_recv() {
                Ok(request) => is_due |= take(Some(request), &mut batch),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        if batch.ops.is_empty() {
            continue;
        }
        if !is_due && batch.ops.len() < max_batch {
            deferred_since.get_or_insert_with(Instant::now);
            continue;
        }
        deferred_since = None;
        stats
            .queue_depth
            .fetch_sub(batch.ops.len(), Ordering::Relaxed);
        batch.commit(conn, stats, &mut wal, &mut failures);
        // Between batches, after every caller has been answered: a forced checkpoint here delays
        // the next batch, never an acknowledgement already owed.
        wal.after_commit(conn, stats);
        if stopping {
            // Writes that raced with the stop request still get their turn.
            while let Ok(Request::Write { op, is_deferred }) = rx.try_recv() {
                stats.queue_depth.fetch_sub(1, Ordering::Relaxed);
                batch.push(op, is_deferred);
                if batch.ops.len() == max_batch {
                    batch.commit(conn, stats, &mut wal, &mut failures);
                }
            }
            if !batch.ops.is_empty() {
                batch.commit(conn, stats, &mut wal, &mut failures);
            }
        }
    }
    tracing::debug!("writer stopped");
}

/// Commits `batch` unless the WAL is past its ceiling; then every op fails with a transient
/// error (visitors are told `unavailable`, jobs retry) and nothing is written.
fn commit_guarded(
    conn: &Connection,
    batch: &mut Vec<Box<dyn WriteOp>>,
    stats: &WriterStats,
    wal: &mut WalGuard,
    failures: &mut Failures,
) {
    if wal.admit(conn) {
        commit_batch(conn, batch, stats, failures);
        return;
    }
    stats
        .refused_wal_limit
        .fetch_add(batch.len() as u64, Ordering::Relaxed);
    for op in batch.drain(..) {
        op.finish(Some(Error::CommitFailed(
            "the WAL is past PORCH_WAL_LIMIT and cannot be checkpointed".to_owned(),
        )));
    }
}

/// Runs every op of `batch` in one transaction (see [`apply_all`]), in which one failing op leaves
/// no partial writes and does not spoil the others, then answers them all.
fn commit_batch(
    conn: &Connection,
    batch: &mut Vec<Box<dyn WriteOp>>,
    stats: &WriterStats,
    failures: &mut Failures,
) {
    let started = Instant::now();
    let outcome = run_transaction(conn, batch, stats);
    let size = batch.len() as u64;
    match &outcome {
        Ok(()) => {
            // A small commit can fit in space the WAL file already holds while the disk is still
            // full: only the probe's room clears the flag, so readiness does not flap back.
            let is_still_full = stats.is_disk_full.load(Ordering::Relaxed) && !failures.probe(conn);
            if !is_still_full {
                stats.is_disk_full.store(false, Ordering::Relaxed);
                failures.committed();
            }
            stats.batches.fetch_add(1, Ordering::Relaxed);
            stats.writes.fetch_add(size, Ordering::Relaxed);
            let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            stats.commit_micros.fetch_add(micros, Ordering::Relaxed);
            stats.commit_latency.record_value(micros);
            stats.batch_sizes.record_value(size);
        }
        Err(err) => failures.failed(err, size, stats),
    }
    for op in batch.drain(..) {
        let batch_error = match &outcome {
            Ok(()) => None,
            Err(Error::DiskFull) => Some(Error::DiskFull),
            Err(err) => Some(Error::CommitFailed(err.to_string())),
        };
        op.finish(batch_error);
    }
}

fn run_transaction(
    conn: &Connection,
    batch: &mut [Box<dyn WriteOp>],
    stats: &WriterStats,
) -> Result<(), Error> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let result = apply_all(conn, batch, stats).and_then(|()| {
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(())
    });
    if result.is_err()
        && !conn.is_autocommit()
        && let Err(err) = conn.execute_batch("ROLLBACK")
    {
        tracing::error!(error = %err, "rollback failed");
    }
    result
}

/// Applies the batch inside the open transaction. The repeatable ops at its front run one after
/// the other with no savepoint: a savepoint copies each page an op touches before changing it,
/// which was 5 % of the server's CPU at 15,000 visitor messages a second. Should one of them
/// fail, its partial writes cannot be undone alone: the transaction starts over and they run
/// again, each in its own savepoint, which is exactly what the others would have got. So a
/// visitor message that fails after it wrote costs its batch a second pass, counted in
/// `reruns`; one refused before it changed a row (an upload id that is not the visitor's:
/// `insert_visitor_message` checks those first) costs nothing. The other ops run in
/// savepoints, as their work runs only once.
fn apply_all(
    conn: &Connection,
    batch: &mut [Box<dyn WriteOp>],
    stats: &WriterStats,
) -> Result<(), Error> {
    let repeatable = batch.iter().take_while(|op| op.is_repeatable()).count();
    let (fast, rest) = batch.split_at_mut(repeatable);
    for op in fast.iter_mut() {
        let changes = conn.total_changes();
        match op.apply(conn) {
            // SQLite rolls a transaction back by itself after some errors (I/O, out of memory);
            // the ops after one that went on regardless must not run outside a transaction.
            // (Its own statements after the error were already committed one by one, which is
            // why repeatable work must return at its first error.)
            Applied::Ok if !conn.is_autocommit() => continue,
            Applied::DiskFull => return Err(Error::DiskFull),
            // Refused before it changed a row (a visitor message's checks come first): there is
            // nothing to undo, and the batch goes on without a second pass.
            Applied::Failed if !conn.is_autocommit() && conn.total_changes() == changes => {
                continue;
            }
            Applied::Ok | Applied::Failed => {}
        }
        if !conn.is_autocommit() {
            conn.prepare_cached("ROLLBACK")?.execute([])?;
        }
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        stats.reruns.fetch_add(1, Ordering::Relaxed);
        fast.iter_mut()
            .try_for_each(|op| apply_in_savepoint(conn, op.as_mut()))?;
        break;
    }
    rest.iter_mut()
        .try_for_each(|op| apply_in_savepoint(conn, op.as_mut()))
}

fn apply_in_savepoint(conn: &Connection, op: &mut dyn WriteOp) -> Result<(), Error> {
    conn.prepare_cached("SAVEPOINT op")?.execute([])?;
    match op.apply(conn) {
        Applied::Ok => {
            conn.prepare_cached("RELEASE op")?.execute([])?;
        }
        Applied::Failed => {
            conn.prepare_cached("ROLLBACK TO op")?.execute([])?;
            conn.prepare_cached("RELEASE op")?.execute([])?;
        }
        // The whole batch is rolled back and every write in it answered `DiskFull`.
        Applied::DiskFull => return Err(Error::DiskFull),
    }
    Ok(())
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
