//! `porch raise-ids`: after a restore, moves the database's id counters past the ids the copy it
//! replaces handed out, so no message, job, conversation or visitor id is given twice
//! (docs/operations.md, "Rolling back" and "Restore"). It never migrates:
//! during a rollback it runs on the older schema the previous version will serve.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

use crate::config::DataConfig;
use crate::store;

use super::{open_file, require_database, write_out};

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct RaiseIdsArgs {
    /// The abandoned database (a rollback's `old/porch.db`): each counter is raised to that
    /// file's, where it is higher.
    #[arg(long, value_name = "FILE")]
    past: Option<PathBuf>,
    /// Raise each counter by this many: after restoring the latest replica when the replaced
    /// file is lost, to pass the ids of the moments the replica had not received.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    by: Option<u32>,
}

pub fn run(data: &DataConfig, args: RaiseIdsArgs) -> anyhow::Result<()> {
    require_database(data)?;
    // Never under a running server: it would go on from the counters it has cached.
    let _lock = crate::lock_data_dir(&data.data_dir)?;
    let RaiseIdsArgs { past, by } = args;
    let past = match past {
        Some(path) => {
            let shown = path.display();
            super::files::require_file(&path)?;
            let conn = store::open_existing_read_only(&path)
                .with_context(|| format!("opening {shown}"))?;
            Some(store::id_counters(&conn).with_context(|| format!("reading {shown}"))?)
        }
        None => None,
    };
    let by = i64::from(by.unwrap_or(0));
    let mut conn = open_file(data)?;
    // A newer Porch's file may have counters this binary does not know of: it would raise some.
    store::refuse_newer_schema(&conn)
        .with_context(|| format!("opening {}", data.database_path().display()))?;
    let raised = store::raise_id_counters(&mut conn, |table, current| match &past {
        Some(past) => past.iter().find(|(t, _)| t == table).map(|(_, seq)| *seq),
        None => Some(current.saturating_add(by)),
    })?;
    let mut lines: Vec<String> = raised
        .iter()
        .map(|c| format!("{:<20} next id {} (was {})", c.table, c.to + 1, c.from + 1))
        .collect();
    lines.push(format!(
        "{} raised in {}",
        porch_app::counted(raised.len(), "id counter"),
        data.database_path().display()
    ));
    write_out(&lines.join("\n"))
}
