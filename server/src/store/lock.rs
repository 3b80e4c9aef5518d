//! One server per data directory. `porch serve` and `porch migrate` hold an exclusive lock on
//! `porch.lock` beside the database for as long as they run; a second one fails at once, naming
//! the holder's PID. Two servers on one file would each re-queue the other's running jobs at
//! start-up and never see each other's live events, so this is refused, not tolerated.
//!
//! The lock is `flock(2)` (through `File::try_lock`): the kernel drops it when the process dies,
//! even by `kill -9`, so a crash never leaves a stale lock behind. It does not work across
//! machines on a network file system, which SQLite's WAL mode does not support either.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Name of the lock file inside the data directory.
pub const LOCK_FILE: &str = "porch.lock";

/// Why the data directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "the data directory {} is in use by another porch process (PID {pid}): a server, or a \
         command that needs the database to itself (migrate, vacuum, raise-ids, a backup while no \
         server runs); stop it, or let it finish, first",
        dir.display()
    )]
    Held { dir: PathBuf, pid: String },
    // The cause is not repeated here: it is the error's source, printed after it.
    #[error("could not lock {}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Most often a restore done as root, with the `chown` forgotten.
    #[error("{}", not_writable(path))]
    NotWritable { path: PathBuf },
    /// A volume mounted read-only (`:ro`), or a backup medium.
    #[error(
        "the data directory {} is on a read-only file system: Porch writes there (its lock and \
         the database), so mount it read-write (in compose, without `:ro`); to read a database \
         on read-only media, use `porch check --db FILE` or `porch backup FILE`",
        dir.display()
    )]
    ReadOnly { dir: PathBuf },
}

/// Says who may not write `path` and who owns it, and what fixes it. A file not made yet (the
/// lock file of a new directory) is not named: its directory refused it, so that is.
pub fn not_writable(path: &Path) -> String {
    refused(path, "written", "write")
}

/// The same for a file a command only reads, whose directory does not let it in: "there is no
/// database" would send the operator looking for a restore that did not fail.
pub fn not_readable(path: &Path) -> String {
    refused(path, "read", "read")
}

/// `path` (or its directory, when `path` cannot be looked at) cannot be `done` (written, read):
/// by whom, its owner and mode, and the fix, which gives the owner `access`.
fn refused(path: &Path, done: &str, access: &str) -> String {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::getuid().as_raw();
    let (path, meta) = match std::fs::metadata(path) {
        Ok(meta) => (path, Some(meta)),
        Err(_) => {
            let dir = path.parent().unwrap_or(path);
            (dir, std::fs::metadata(dir).ok())
        }
    };
    let Some(meta) = meta else {
        return format!(
            "{} cannot be {done} by uid {me} (unknown owner): {CHOWN_FIX}",
            path.display()
        );
    };
    let mode = meta.mode() & 0o7777;
    if meta.uid() == me {
        // Porch's already: the mode is what refuses it, and a chown would change nothing.
        let (what, fix) = if meta.is_dir() {
            ("directory", "u+rwx")
        } else {
            ("file", "u+rw")
        };
        return format!(
            "{} cannot be {done} by uid {me}, its owner (mode {mode:o}): give the owner {access} \
             access (chmod {fix} on this {what})",
            path.display()
        );
    }
    format!(
        "{} cannot be {done} by uid {me} (uid {}, mode {mode:o}): {CHOWN_FIX}",
        path.display(),
        meta.uid()
    )
}

/// The fix for files of another user, most often a restore done as root.
const CHOWN_FIX: &str = "the data directory and every file in it must belong to the user porch \
                         runs as (the image runs as uid 10001: chown -R 10001:10001 on the volume)";

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct InstanceLock {
    /// Kept open: closing the file releases the lock.
    _file: File,
    /// The lock of the directory the database file really is in, when `porch.db` is a symbolic
    /// link to another one: a server there, or one reaching the file through another link, holds
    /// that one too.
    real: Option<Box<InstanceLock>>,
}

impl InstanceLock {
    /// Takes the lock of `data_dir` (which must exist) and records this process's PID in it.
    ///
    /// # Errors
    /// [`LockError::Held`] if another process holds it; [`LockError::ReadOnly`] on a read-only
    /// file system, [`LockError::NotWritable`] for a directory or file this user may not write,
    /// [`LockError::Io`] if the lock file cannot be opened or written otherwise.
    pub fn acquire(data_dir: &Path) -> Result<Self, LockError> {
        let path = data_dir.join(LOCK_FILE);
        let io = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::PermissionDenied => LockError::NotWritable { path: path.clone() },
            std::io::ErrorKind::ReadOnlyFilesystem => LockError::ReadOnly {
                dir: data_dir.to_path_buf(),
            },
            _ => LockError::Io {
                path: path.clone(),
                source,
            },
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                // The holder writes its PID right after locking; an empty read is that instant.
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(LockError::Held {
                    dir: data_dir.to_path_buf(),
                    pid: if pid.is_empty() { "unknown" } else { pid }.to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self {
            _file: file,
            real: None,
        })
    }

    /// Like [`InstanceLock::acquire`], and when `data_dir`'s `database` file is a symbolic link
    /// into another directory, that directory's lock too: one server per database file, however
    /// it is reached.
    ///
    /// # Errors
    /// As [`InstanceLock::acquire`], for either directory.
    pub fn acquire_for(data_dir: &Path, database: &str) -> Result<Self, LockError> {
        let mut lock = Self::acquire(data_dir)?;
        let real_dir = std::fs::canonicalize(data_dir.join(database))
            .ok()
            .and_then(|real| real.parent().map(Path::to_path_buf));
        if let Some(real_dir) = real_dir
            && std::fs::canonicalize(data_dir).ok().as_ref() != Some(&real_dir)
        {
            lock.real = Some(Box::new(Self::acquire(&real_dir)?));
        }
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_reached_through_a_symbolic_link_is_locked_where_it_is() {
        let (real, other) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        std::fs::write(real.path().join("porch.db"), b"").expect("file");
        std::os::unix::fs::symlink(real.path().join("porch.db"), other.path().join("porch.db"))
            .expect("link");
        let first = InstanceLock::acquire_for(real.path(), "porch.db").expect("first");
        let second = InstanceLock::acquire_for(other.path(), "porch.db");
        assert!(matches!(second, Err(LockError::Held { .. })), "{second:?}");
        drop(first);
        let through_link = InstanceLock::acquire_for(other.path(), "porch.db").expect("free");
        let direct = InstanceLock::acquire_for(real.path(), "porch.db");
        assert!(matches!(direct, Err(LockError::Held { .. })), "{direct:?}");
        drop(through_link);
    }

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let first = InstanceLock::acquire(dir.path()).expect("first lock");
        let err = InstanceLock::acquire(dir.path()).expect_err("second lock refused");
        let text = err.to_string();
        assert!(
            text.contains(&format!("PID {}", std::process::id())),
            "{text}"
        );
        drop(first);
        InstanceLock::acquire(dir.path()).expect("free again once dropped");
    }
}
