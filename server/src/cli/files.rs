//! Whether the files a command reads are there for it: the database in the data directory, or a
//! file named on the command line. A directory this user may not enter is said as such, with its
//! owner, mode and fix, rather than as a missing file (which sends an operator after a restore
//! that did not fail).

use crate::config::DataConfig;
use crate::store;

/// Fails unless the database exists: a command that reads or changes what is stored must not
/// answer from a new empty database because the data directory was mistyped ("nobody found"
/// for an erasure request would be wrong, not empty).
pub(super) fn require_database(data: &DataConfig) -> anyhow::Result<()> {
    let path = data.database_path();
    look_at(&path).map_err(|err| match err {
        Missing::Nothing => anyhow::anyhow!(
            "there is no database at {}: check --data-dir (PORCH_DATA_DIR); `porch serve`, \
             `porch migrate`, `porch site add` or `porch user add` creates one",
            path.display()
        ),
        Missing::Refused(why) => anyhow::anyhow!(why),
    })
}

/// Fails unless `path` (a file named by the operator) is a file this process may read.
pub(super) fn require_file(path: &std::path::Path) -> anyhow::Result<()> {
    look_at(path).map_err(|err| match err {
        Missing::Nothing => anyhow::anyhow!("{} does not exist or is not a file", path.display()),
        Missing::Refused(why) => anyhow::anyhow!(why),
    })
}

/// Why a file a command reads is not there for it.
enum Missing {
    /// Nothing at that path, or something that is not a file.
    Nothing,
    /// It may be there, but this user may not look (a directory of another owner, mode 700):
    /// the words say whose it is and what fixes it.
    Refused(String),
}

/// Whether `path` is a file this process may look at.
fn look_at(path: &std::path::Path) -> Result<(), Missing> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(Missing::Refused(store::not_readable(path)))
        }
        Ok(_) | Err(_) => Err(Missing::Nothing),
    }
}
