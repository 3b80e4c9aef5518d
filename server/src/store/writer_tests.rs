//! The writer's tests, kept apart so `writer.rs` reads as the writer.

use super::*;

fn writer() -> (tempfile::TempDir, Arc<Writer>) {
    writer_with_queue(16)
}

fn writer_with_queue(capacity: usize) -> (tempfile::TempDir, Arc<Writer>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let conn = crate::store::open_write_connection(
        &dir.path().join("w.db"),
        crate::store::Synchronous::Normal,
    )
    .expect("open");
    conn.execute_batch("CREATE TABLE t (x INTEGER)")
        .expect("schema");
    (
        dir,
        Arc::new(Writer::start(conn, capacity, 16, u64::MAX).expect("start")),
    )
}

fn insert(x: i64) -> impl FnOnce(&Connection) -> Result<(), Error> + Send + 'static {
    move |c| {
        c.execute("INSERT INTO t VALUES (?1)", [x])?;
        Ok(())
    }
}

#[tokio::test]
async fn a_deferred_write_alone_is_committed_after_the_limit() {
    let (_dir, writer) = writer();
    let started = Instant::now();
    writer.write_deferred(insert(1)).await.expect("write");
    assert!(started.elapsed() >= DEFER_LIMIT, "{:?}", started.elapsed());
    assert_eq!(writer.stats().batches.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_deferred_write_rides_along_with_the_next_write() {
    let (_dir, writer) = writer();
    let deferred = tokio::spawn({
        let writer = Arc::clone(&writer);
        async move { writer.write_deferred(insert(1)).await }
    });
    // The deferred write is held (still counted as queued) until company arrives; a write
    // that is not deferred would have been committed within these few milliseconds.
    while writer.stats().queue_depth.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(3)).await;
    assert!(
        !deferred.is_finished(),
        "a lone deferred write was committed at once"
    );
    writer.write(insert(2)).await.expect("write");
    deferred.await.expect("task").expect("deferred write");
    assert_eq!(writer.stats().batches.load(Ordering::SeqCst), 1);
    assert_eq!(writer.stats().writes.load(Ordering::SeqCst), 2);
    // In the batch the write someone waited for went first, the deferred one after it.
    let order = writer
        .write(|c| {
            let mut stmt = c.prepare("SELECT x FROM t ORDER BY rowid")?;
            let rows = stmt.query_map([], |r| r.get::<_, i64>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
        .expect("read back");
    assert_eq!(order, [2, 1]);
}

#[tokio::test]
async fn commit_hooks_run_in_commit_order() {
    // Room for every write at once, so they spread over many batches.
    let (_dir, writer) = writer_with_queue(256);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let inserts = (0..200).map(|_| {
        let (writer, seen) = (Arc::clone(&writer), Arc::clone(&seen));
        tokio::spawn(async move {
            writer
                .write_then(
                    |c| {
                        c.execute("INSERT INTO t VALUES (NULL)", [])?;
                        Ok(c.last_insert_rowid())
                    },
                    move |rowid| seen.lock().expect("lock").push(*rowid),
                )
                .await
        })
    });
    for insert in futures_util::future::join_all(inserts).await {
        insert.expect("task").expect("write");
    }
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 200);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
}

/// Keeps the writer busy in a batch of its own until the returned sender is used or dropped,
/// so that the writes queued meanwhile share the next batch.
async fn hold(writer: &Arc<Writer>) -> std::sync::mpsc::Sender<()> {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (started, is_started) = oneshot::channel();
    let writer = Arc::clone(writer);
    tokio::spawn(async move {
        writer
            .write(move |_| {
                let _ = started.send(());
                let _ = released.recv();
                Ok(())
            })
            .await
    });
    is_started.await.expect("the holding write started");
    release
}

/// Waits until `n` writes are queued behind the holding one.
async fn until_queued(writer: &Writer, n: usize) {
    while writer.stats().queue_depth.load(Ordering::SeqCst) < n {
        tokio::task::yield_now().await;
    }
}

/// A repeatable insert of `x` that counts its runs in `runs` and fails after writing when
/// `fails`; its commit hook records the row id in `seen`.
fn counted(
    writer: &Arc<Writer>,
    x: i64,
    fails: bool,
    runs: &Arc<AtomicUsize>,
    seen: &Arc<Mutex<Vec<i64>>>,
) -> tokio::task::JoinHandle<Result<i64, Error>> {
    let (writer, runs, seen) = (Arc::clone(writer), Arc::clone(runs), Arc::clone(seen));
    tokio::spawn(async move {
        writer
            .write_then_repeatable(
                move |c| {
                    runs.fetch_add(1, Ordering::SeqCst);
                    c.execute("INSERT INTO t VALUES (?1)", [x])?;
                    if fails {
                        return Err(Error::UnknownAttachment);
                    }
                    Ok(c.last_insert_rowid())
                },
                move |rowid| seen.lock().expect("lock").push(*rowid),
            )
            .await
    })
}

fn rows(conn_path: &std::path::Path) -> Vec<i64> {
    let conn = Connection::open(conn_path).expect("open");
    let mut stmt = conn
        .prepare("SELECT x FROM t ORDER BY rowid")
        .expect("prepare");
    stmt.query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[tokio::test]
async fn repeatable_writes_lead_their_batch_and_run_once() {
    let (dir, writer) = writer();
    let release = hold(&writer).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    // A write that runs once, queued first, then two repeatable ones.
    let once = {
        let (writer, seen) = (Arc::clone(&writer), Arc::clone(&seen));
        tokio::spawn(async move {
            writer
                .write_then(
                    |c| {
                        c.execute("INSERT INTO t VALUES (9)", [])?;
                        Ok(c.last_insert_rowid())
                    },
                    move |rowid| seen.lock().expect("lock").push(*rowid),
                )
                .await
        })
    };
    until_queued(&writer, 1).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let first = counted(&writer, 1, false, &runs, &seen);
    let second = counted(&writer, 2, false, &runs, &seen);
    until_queued(&writer, 3).await;
    release.send(()).expect("release");
    for write in [first, second, once] {
        write.await.expect("task").expect("write");
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "each repeatable write ran once"
    );
    assert_eq!(writer.stats().batches.load(Ordering::SeqCst), 2);
    assert_eq!(writer.stats().reruns.load(Ordering::SeqCst), 0);
    // The repeatable writes went first, and the hooks still ran in row id order.
    assert_eq!(rows(&dir.path().join("w.db")), [1, 2, 9]);
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(seen, [1, 2, 3]);
}

#[tokio::test]
async fn a_failing_repeatable_write_is_undone_alone() {
    let (dir, writer) = writer();
    let release = hold(&writer).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runs: Vec<_> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let before = counted(&writer, 1, false, &runs[0], &seen);
    let failing = counted(&writer, 2, true, &runs[1], &seen);
    let after = counted(&writer, 3, false, &runs[2], &seen);
    let deferred = tokio::spawn({
        let writer = Arc::clone(&writer);
        async move { writer.write_deferred(insert(4)).await }
    });
    until_queued(&writer, 4).await;
    release.send(()).expect("release");
    before
        .await
        .expect("task")
        .expect("write before the failing one");
    assert!(matches!(
        failing.await.expect("task"),
        Err(Error::UnknownAttachment)
    ));
    after
        .await
        .expect("task")
        .expect("write after the failing one");
    deferred.await.expect("task").expect("deferred write");
    // The failure undid the first pass; the second ran each write in its own savepoint.
    let runs: Vec<_> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(runs, [2, 2, 1]);
    assert_eq!(writer.stats().batches.load(Ordering::SeqCst), 2);
    assert_eq!(writer.stats().reruns.load(Ordering::SeqCst), 1);
    assert_eq!(rows(&dir.path().join("w.db")), [1, 3, 4]);
    // The hooks saw the row ids of the second pass.
    assert_eq!(*seen.lock().expect("lock"), [1, 2]);
}

/// A repeatable write refused before it changed a row (as a visitor message naming an upload
/// that is not theirs) leaves nothing to undo: the batch goes on without a second pass.
#[tokio::test]
async fn a_repeatable_write_refused_before_writing_costs_no_second_pass() {
    let (dir, writer) = writer();
    let release = hold(&writer).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let runs: Vec<_> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let before = counted(&writer, 1, false, &runs[0], &seen);
    let refused = {
        let (writer, runs) = (Arc::clone(&writer), Arc::clone(&runs[1]));
        tokio::spawn(async move {
            writer
                .write_then_repeatable(
                    move |c| {
                        runs.fetch_add(1, Ordering::SeqCst);
                        let taken: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))?;
                        if taken < 100 {
                            return Err(Error::UnknownAttachment);
                        }
                        Ok(taken)
                    },
                    |_| {},
                )
                .await
        })
    };
    let after = counted(&writer, 3, false, &runs[2], &seen);
    until_queued(&writer, 3).await;
    release.send(()).expect("release");
    before.await.expect("task").expect("write before");
    assert!(matches!(
        refused.await.expect("task"),
        Err(Error::UnknownAttachment)
    ));
    after.await.expect("task").expect("write after");
    let runs: Vec<_> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
    assert_eq!(runs, [1, 1, 1], "each ran once");
    assert_eq!(writer.stats().reruns.load(Ordering::SeqCst), 0);
    assert_eq!(rows(&dir.path().join("w.db")), [1, 3]);
    assert_eq!(*seen.lock().expect("lock"), [1, 2]);
}

#[tokio::test]
async fn writes_of_each_kind_keep_their_arrival_order_in_the_batch() {
    let (dir, writer) = writer();
    let release = hold(&writer).await;
    let (runs, seen) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(Vec::new())),
    );
    // Arrival: repeatable 1, once 10, deferred 20, repeatable 2, once 11.
    let mut queued_writes = Vec::new();
    for (queued, x) in [1, 10, 20, 2, 11].into_iter().enumerate() {
        let handle = match x {
            1 | 2 => counted(&writer, x, false, &runs, &seen),
            20 => {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { writer.write_deferred(insert(x)).await.map(|()| 0) })
            }
            _ => {
                let writer = Arc::clone(&writer);
                tokio::spawn(async move { writer.write(insert(x)).await.map(|()| 0) })
            }
        };
        queued_writes.push(handle);
        until_queued(&writer, queued + 1).await;
    }
    release.send(()).expect("release");
    for write in queued_writes {
        write.await.expect("task").expect("write");
    }
    assert_eq!(rows(&dir.path().join("w.db")), [1, 2, 10, 11, 20]);
}

#[tokio::test]
async fn a_transaction_sqlite_rolled_back_under_a_repeatable_write_is_run_again() {
    let (dir, writer) = writer();
    let release = hold(&writer).await;
    let (runs, seen) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(Vec::new())),
    );
    let first = counted(&writer, 1, false, &runs, &seen);
    // Ends the transaction under the batch on its first run, as SQLite does after an I/O error,
    // and reports success.
    let rolled_back = tokio::spawn({
        let writer = Arc::clone(&writer);
        let mut is_first_run = true;
        async move {
            writer
                .write_then_repeatable(
                    move |c| {
                        c.execute("INSERT INTO t VALUES (2)", [])?;
                        if std::mem::take(&mut is_first_run) {
                            c.execute_batch("ROLLBACK")?;
                        }
                        Ok(())
                    },
                    |()| {},
                )
                .await
        }
    });
    let after = counted(&writer, 3, false, &runs, &seen);
    until_queued(&writer, 3).await;
    release.send(()).expect("release");
    first.await.expect("task").expect("first write");
    rolled_back
        .await
        .expect("task")
        .expect("the write under the rollback");
    after.await.expect("task").expect("the write after it");
    assert_eq!(writer.stats().reruns.load(Ordering::SeqCst), 1);
    // Each row once: nothing ran outside the transaction, nothing was lost with it.
    assert_eq!(rows(&dir.path().join("w.db")), [1, 2, 3]);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the first ran twice, the last once"
    );
}
