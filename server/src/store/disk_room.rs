//! Whether the disk holding the database has room: the writer's probe while the disk is full,
//! and the start-up's explanation of a failure that a full disk caused. SQLite reports a full
//! disk in many ways (`SQLITE_FULL`, or a bare `disk I/O error` when it cannot size the `-shm`
//! file), so the disk itself is asked.

use std::io::Write;
use std::path::Path;

/// What must be writable and syncable beside the database for the disk to count as usable:
/// room for a few batches' WAL frames.
const PROBE_BYTES: usize = 256 * 1024;
/// The probe's scratch file, in the database's directory (removed straight away).
const PROBE_FILE: &str = ".porch-disk-probe";

/// Writes and syncs a scratch file of [`PROBE_BYTES`] in `dir`, then removes it.
///
/// # Errors
/// The write's error: `ErrorKind::StorageFull` when the disk is full.
pub fn has_room(dir: &Path) -> std::io::Result<()> {
    let path = dir.join(PROBE_FILE);
    let written = std::fs::File::create(&path).and_then(|mut file| {
        file.write_all(&vec![0; PROBE_BYTES])?;
        file.sync_all()
    });
    if let Err(err) = std::fs::remove_file(&path) {
        tracing::debug!(error = %err, "could not remove the disk probe file");
    }
    written
}

/// Room a widget upload must leave free on the disk holding the database: 1 GiB, or 5 % of a
/// disk smaller than 20 GiB. Visitors' files are the one thing strangers can store in bulk; a
/// disk they filled would refuse every message of every site, so they stop short of it.
pub const UPLOAD_RESERVE_BYTES: u64 = 1024 * 1024 * 1024;
const UPLOAD_RESERVE_PERCENT: u64 = 5;

/// Whether storing `bytes` more in `dir`'s file system leaves the room uploads must leave
/// ([`UPLOAD_RESERVE_BYTES`]). Asked of the file system (`statvfs`); when it cannot say, the
/// upload goes ahead and the writer's own full-disk handling applies.
pub fn upload_leaves_room(dir: &Path, bytes: u64) -> bool {
    let Ok(stats) = rustix::fs::statvfs(dir) else {
        return true;
    };
    let block = stats.f_frsize.max(1);
    let free = stats.f_bavail.saturating_mul(block);
    let total = stats.f_blocks.saturating_mul(block);
    let reserve = UPLOAD_RESERVE_BYTES.min(total / 100 * UPLOAD_RESERVE_PERCENT);
    free.saturating_sub(bytes) >= reserve
}

/// `err`, with the cause said first when it is a file or database error and the disk holding
/// `dir` is full: "disk I/O error" or "Error code 13" would otherwise send an operator after a
/// broken disk or wrong permissions. For `serve` and every other command.
pub fn explain_full_disk(err: anyhow::Error, dir: &Path) -> anyhow::Error {
    if may_come_from_the_disk(&err) {
        explain_a_file_error(err, dir)
    } else {
        err
    }
}

/// Like [`explain_full_disk`], for an error known to be about a file whose own error keeps only
/// the words (the sealing key file: "cannot be written").
pub fn explain_a_file_error(err: anyhow::Error, dir: &Path) -> anyhow::Error {
    match has_room(dir) {
        Err(full) if full.kind() == std::io::ErrorKind::StorageFull => err.context(format!(
            "the disk holding {} is full: free some space on it, then try again",
            dir.display()
        )),
        _ => err,
    }
}

/// Whether `err` is one a full disk can cause: an I/O error or one of SQLite's, somewhere in its
/// chain. "No user has the email …" on a full disk is not about the disk, and saying it is sent
/// an operator to free space for nothing.
fn may_come_from_the_disk(err: &anyhow::Error) -> bool {
    use super::Error;
    err.chain().any(|cause| {
        cause.is::<std::io::Error>()
            || cause.is::<rusqlite::Error>()
            // Transparent over SQLite's error, so the chain holds this one, not SQLite's.
            || cause.downcast_ref::<Error>().is_some_and(|e| {
                matches!(
                    e,
                    Error::Sqlite(_)
                        | Error::Io(_)
                        | Error::DiskFull
                        | Error::CommitFailed(_)
                        | Error::Migration { .. }
                )
            })
    })
}
