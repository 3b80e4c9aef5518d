//! `porch backup FILE`: a consistent copy of the database at one transaction boundary, taken
//! beside a running server or without one, for an operator to keep or move. It never takes the
//! instance lock, never migrates, and never writes to the live database; FILE is either whole or
//! absent, never half written.

use std::fs::{File, Permissions};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use rusqlite::Connection;

use crate::config::{DATABASE_FILE, DataConfig};
use crate::store;

use super::{require_database, write_out};

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The copy to write: a new file (an existing one is refused) in an existing directory.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

/// The mode of Porch's own database (docs/operations.md, "File permissions"): the copy holds the
/// same transcripts, so it is no more readable than the original.
const COPY_MODE: u32 = 0o640;

pub fn run(data: &DataConfig, args: &BackupArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    require_database(data)?;
    let target = Target::parse(&args.file)?;
    let source = data.database_path();
    let (conn, lock) = open_source(data)?;
    let partial = copy_into_partial(&conn, &target)
        .with_context(|| format!("copying {} to {}", source.display(), target.path.display()))
        .map_err(|err| store::explain_a_file_error(err, &target.dir))?;
    drop((conn, lock));
    let version = schema_version_of(partial.path())?;
    let size =
        persist(partial, &target).map_err(|err| store::explain_a_file_error(err, &target.dir))?;
    write_out(&format!(
        "{}: {}, schema version {version}, copied in {:.2} s. The sealing key is not in it: a \
         restore needs the same PORCH_SECRET_KEY (or PORCH_SECRET_KEY_FILE, or the data \
         directory's secret.key) too",
        target.path.display(),
        megabytes(size),
        started.elapsed().as_secs_f64(),
    ))
}

/// Where the copy goes: a new name in a directory that exists.
struct Target {
    /// The destination's directory, absolute: the partial file is made there, so the final
    /// rename stays within one file system and is atomic.
    dir: PathBuf,
    /// `dir` joined with the name asked for.
    path: PathBuf,
}

impl Target {
    /// Refuses a path that exists (a backup never replaces a file) or whose directory does not
    /// (a mistyped path is not created).
    fn parse(file: &Path) -> anyhow::Result<Self> {
        let shown = file.display();
        let name = file.file_name().with_context(|| {
            format!("{shown} does not name a file: give the path of a new file")
        })?;
        anyhow::ensure!(
            std::fs::symlink_metadata(file).is_err(),
            "{shown} already exists: porch backup writes a new file and never replaces one; give \
             another name, or move the existing file away first"
        );
        let parent = match file.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        // Absolute, so SQLite never reads the path as a `file:` URI.
        let dir = std::fs::canonicalize(parent).with_context(|| {
            format!(
                "the directory {} does not exist: create it first, or write the copy elsewhere",
                parent.display()
            )
        })?;
        anyhow::ensure!(dir.is_dir(), "{} is not a directory", parent.display());
        let path = dir.join(name);
        Ok(Self { dir, path })
    }
}

/// The database to read the copy from, and the data directory's lock when no server held it.
/// Holding the lock keeps a server from starting and writing during the copy, so the file is read
/// as it lies, creating nothing beside it; beside a running server (the lock is its) the file is
/// read through the server's WAL under SQLite's locks. Both are `store::open_existing_read_only`'s
/// choice: it never writes or checkpoints the database. On a read-only file system, or in a
/// directory this user may not write, no server can be writing there either.
fn open_source(data: &DataConfig) -> anyhow::Result<(Connection, Option<store::InstanceLock>)> {
    let path = data.database_path();
    store::refuse_misplaced_files(&path)?;
    let lock = match store::InstanceLock::acquire_for(&data.data_dir, DATABASE_FILE) {
        Ok(lock) => Some(lock),
        Err(
            store::LockError::Held { .. }
            | store::LockError::ReadOnly { .. }
            | store::LockError::NotWritable { .. },
        ) => None,
        Err(err) => return Err(err.into()),
    };
    let conn = store::open_existing_read_only(&path)
        .map_err(|err| store::explain_damage(err.into(), &path))?;
    store::refuse_other_database(&conn, &path)?;
    Ok((conn, lock))
}

/// Copies the database into a new partial file beside the target, which is removed again if
/// anything fails (or when it is dropped without being persisted).
///
/// `VACUUM INTO` rather than the online backup API: it reads the whole database in one read
/// transaction, so the copy is one transaction boundary, and in WAL mode a reader never blocks
/// the server's writer. The backup API copies in steps and starts over whenever another
/// connection commits between two of them, so beside a busy server it might never finish (and
/// in one step it holds the same read transaction anyway); rusqlite exposes it only behind a
/// feature this crate does not enable. `VACUUM INTO` also writes a compact file, without free
/// pages, in a rollback-journal mode that `porch check` opens without creating files beside it.
fn copy_into_partial(
    conn: &Connection,
    target: &Target,
) -> anyhow::Result<tempfile::NamedTempFile> {
    let mut name = std::ffi::OsString::from(".");
    name.push(target.path.file_name().unwrap_or_default());
    name.push(".");
    // Made by us with the database's mode, empty: `VACUUM INTO` writes into an empty file.
    let partial = tempfile::Builder::new()
        .prefix(&name)
        .suffix(".partial")
        .permissions(Permissions::from_mode(COPY_MODE))
        .tempfile_in(&target.dir)
        .with_context(|| format!("creating a file in {}", target.dir.display()))?;
    let into = partial
        .path()
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", partial.path().display()))?;
    let copied = store::copy_database_into(conn, into);
    if copied.is_err() {
        // SQLite writes the copy through a rollback journal beside it, which an error (a full
        // disk) leaves behind; the partial file itself goes when it is dropped.
        let _ = std::fs::remove_file(format!("{into}-journal"));
    }
    copied?;
    // SQLite wrote through its own handle; this one reaches the same file's data for the fsync.
    partial
        .as_file()
        .sync_all()
        .with_context(|| format!("writing {} to disk", partial.path().display()))?;
    Ok(partial)
}

/// The copy's own schema version: what a restore of it starts from, whatever the live database
/// has moved on to since.
fn schema_version_of(path: &Path) -> anyhow::Result<u32> {
    let conn = store::open_existing_read_only(path)
        .with_context(|| format!("opening the copy {}", path.display()))?;
    Ok(store::schema_version(&conn)?)
}

/// Gives the partial file its final name, refusing (as the check before the copy did) a file
/// created there meanwhile, and makes the rename durable. Returns the copy's size in bytes.
fn persist(partial: tempfile::NamedTempFile, target: &Target) -> anyhow::Result<u64> {
    let file = partial
        .persist_noclobber(&target.path)
        .map_err(|err| err.error)
        .with_context(|| format!("naming the copy {}", target.path.display()))?;
    // Until the directory is synced, a crash may forget the rename (never half of the file).
    File::open(&target.dir)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("syncing the directory {}", target.dir.display()))?;
    Ok(file.metadata()?.len())
}

/// A size for people, in MB (powers of 1,000, as file managers show them).
fn megabytes(bytes: u64) -> String {
    format!("{}.{} MB", bytes / 1_000_000, bytes % 1_000_000 / 100_000)
}
