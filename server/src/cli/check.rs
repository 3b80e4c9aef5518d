//! `porch check`: verifies a database file, typically a restored backup, before Porch is started
//! on it. Prints a report; any problem makes the command fail, so scripts can rely on the exit
//! code.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;

use crate::config::DataConfig;
use crate::store::{self, CheckReport};

use super::write_out;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The database file to check. Defaults to `porch.db` in the data directory.
    #[arg(long)]
    db: Option<PathBuf>,
}

impl CheckArgs {
    /// Whether the check reads the data directory's database (no `--db` given).
    pub fn reads_the_data_dir(&self) -> bool {
        self.db.is_none()
    }
}

pub fn run(data: &DataConfig, args: CheckArgs) -> anyhow::Result<()> {
    let path = args.db.unwrap_or_else(|| data.database_path());
    let shown = path.display();
    // Opening read-only never creates a file, so a wrong path is an error, not a new database.
    super::files::require_file(&path)?;
    store::refuse_misplaced_files(&path)?;
    let mut header = [0_u8; SQLITE_HEADER.len()];
    let header_len = read_prefix(&path, &mut header).with_context(|| format!("reading {shown}"))?;
    if header[..header_len] != SQLITE_HEADER[..] {
        bail!("{shown} is not a SQLite database (it does not start with the SQLite header)");
    }
    let conn = store::open_existing_read_only(&path).with_context(|| format!("opening {shown}"))?;
    let is_porch = store::is_porch_database(&conn)
        .with_context(|| format!("reading {shown}"))
        .map_err(|err| store::explain_damage(err, &path))?;
    if !is_porch {
        if store::has_no_tables(&conn)? {
            bail!(
                "{shown} is a SQLite database with no tables yet: a start that stopped before \
                 its first migration leaves one, and the next `porch serve` or `porch migrate` \
                 sets it up; if you expected data, check the path"
            );
        }
        store::refuse_other_database(&conn, &path)?;
    }
    let report = store::check_database(&conn).with_context(|| format!("checking {shown}"))?;
    write_out(&render(&shown.to_string(), &report))?;
    if report.schema_version > report.expected_version {
        bail!(
            "{shown}: {}",
            store::Error::NewerSchema {
                found: report.schema_version,
                supported: report.expected_version,
            }
        );
    }
    if !report.is_healthy() {
        bail!("{shown} failed the check");
    }
    Ok(())
}

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Reads up to `buf.len()` bytes from the start of `path`; fewer only at the end of the file.
fn read_prefix(path: &std::path::Path, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut file = std::fs::File::open(path)?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn render(path: &str, report: &CheckReport) -> String {
    let mut out = format!("database        {path}\n");
    let verdict = |problems: &[String]| {
        if problems.is_empty() {
            "ok".to_owned()
        } else {
            format!("{} problem(s)", problems.len())
        }
    };
    let _ = writeln!(out, "integrity       {}", verdict(&report.integrity_errors));
    for line in &report.integrity_errors {
        let _ = writeln!(out, "  {line}");
    }
    match &report.foreign_key_errors {
        Ok(problems) => {
            let _ = writeln!(out, "foreign keys    {}", verdict(problems));
            for line in problems {
                let _ = writeln!(out, "  {line}");
            }
        }
        Err(reason) => {
            let _ = writeln!(out, "foreign keys    not checked: {reason}");
        }
    }
    let schema = if report.schema_version == report.expected_version {
        format!("{} (ok)", report.schema_version)
    } else if report.schema_version == 0 {
        "0 (never migrated: not a Porch database, or an empty one)".to_owned()
    } else if report.schema_version < report.expected_version {
        // Not a failure: a rolled-back backup is checked with the binary that will serve it.
        format!(
            "{} (ok: older than this binary's {}, will be migrated on start)",
            report.schema_version, report.expected_version
        )
    } else {
        format!(
            "{} (this binary expects {}: the file comes from a newer Porch)",
            report.schema_version, report.expected_version
        )
    };
    let _ = writeln!(out, "schema version  {schema}");
    let _ = writeln!(out, "rows");
    for (table, count) in &report.row_counts {
        let _ = writeln!(out, "  {table:<20} {count}");
    }
    let _ = write!(
        out,
        "result          {}",
        if report.is_healthy() { "ok" } else { "FAILED" }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file too damaged for the foreign-key check says so on that line, never `ok`.
    #[test]
    fn foreign_keys_that_could_not_be_checked_are_not_reported_ok() {
        let report = CheckReport {
            integrity_errors: vec!["the integrity check stopped: malformed".into()],
            foreign_key_errors: Err("database disk image is malformed".into()),
            schema_version: 1,
            expected_version: 1,
            row_counts: Vec::new(),
        };
        let text = render("porch.db", &report);
        assert!(
            text.contains("\nforeign keys    not checked: database disk image is malformed\n"),
            "{text}"
        );
        assert!(text.ends_with("result          FAILED"), "{text}");
    }
}
