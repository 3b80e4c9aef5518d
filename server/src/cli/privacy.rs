//! `porch export` and `porch erase` (docs/privacy.md): a person's data as JSON, every
//! conversation as NDJSON for a migration, and erasure after a dry run. Each is recorded in the
//! audit log as done from the command line.

use std::io::Write;

use anyhow::Context;
use rusqlite::{Connection, TransactionBehavior};
use serde_json::{Value, json};

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::privacy::{self, PersonData, PersonQuery, Requester, Via};
use crate::store::{self, ConversationId, Deleted, VisitorId, VisitorRecord};

use super::write_out;

/// Conversations read per page of the full export.
const EXPORT_PAGE: u32 = 200;

/// Who a command is about.
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct PersonArgs {
    /// Every visitor who left this email address (compared without case).
    #[arg(long)]
    email: Option<String>,
    /// The visitor with this id: `42`, or `v42` as `/privacy` and the conversation page show it.
    #[arg(long, value_parser = visitor_id)]
    visitor: Option<i64>,
}

/// A visitor id as given to `--visitor`: its number, with or without the `v` the pages show.
fn visitor_id(raw: &str) -> Result<i64, String> {
    let digits = raw.trim().strip_prefix(['v', 'V']).unwrap_or(raw.trim());
    digits
        .parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| "a visitor id is a positive number, such as 42 or v42".to_owned())
}

/// The person named by `--email` or `--visitor`.
fn query(email: Option<&String>, visitor: Option<i64>) -> anyhow::Result<PersonQuery> {
    match (email, visitor) {
        (Some(email), _) => Ok(PersonQuery::Email(email.trim().to_owned())),
        (None, Some(id)) => Ok(PersonQuery::Visitor(VisitorId(id))),
        (None, None) => anyhow::bail!("give --email ADDRESS or --visitor ID"),
    }
}

#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct ExportArgs {
    /// Every visitor who left this email address (compared without case).
    #[arg(long)]
    email: Option<String>,
    /// The visitor with this id: `42`, or `v42` as `/privacy` and the conversation page show it.
    #[arg(long, value_parser = visitor_id)]
    visitor: Option<i64>,
    /// Every conversation of the database as NDJSON, one per line with its visitor and messages
    /// (for a migration).
    #[arg(long)]
    all: bool,
}

#[derive(Debug, clap::Args)]
pub struct EraseArgs {
    #[command(flatten)]
    person: PersonArgs,
    /// Erase. Without it, only shows what would be erased.
    #[arg(long)]
    yes: bool,
}

fn cli() -> Requester {
    Requester {
        actor: Actor::cli(),
        via: Via::Cli,
    }
}

/// Runs one write in its own immediate transaction (a server may be writing beside us).
fn write<R>(
    conn: &mut Connection,
    work: impl FnOnce(&Connection) -> Result<R, store::Error>,
) -> anyhow::Result<R> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let result = work(&tx)?;
    tx.commit()?;
    Ok(result)
}

/// `porch export`: a JSON array with one export document per visitor found, or with `--all`
/// the NDJSON of every conversation.
pub fn export(conn: &mut Connection, args: &ExportArgs) -> anyhow::Result<()> {
    if args.all {
        return export_all(conn);
    }
    let found = privacy::find_people(conn, &query(args.email.as_ref(), args.visitor)?)?;
    let mut documents = Vec::new();
    for visitor in found {
        let Some(data) = PersonData::read(conn, visitor.id)? else {
            continue;
        };
        write(conn, |c| privacy::record_export(c, &cli(), &data))?;
        documents.push(data.to_json(now_ms()));
    }
    let text = serde_json::to_string_pretty(&Value::Array(documents))?;
    write_out(&text)
}

/// Streams every conversation, then records the export with what was written: also when the
/// output was cut short (`| head`, a closed pipe), since part of it may have been read.
fn export_all(conn: &mut Connection) -> anyhow::Result<()> {
    let (mut conversations, mut messages) = (0_usize, 0_usize);
    let streamed = stream_all(conn, &mut conversations, &mut messages);
    let recorded = write(conn, |c| {
        audit::record(
            c,
            &Actor::cli(),
            AuditAction::PrivacyExported,
            &Target::all_conversations(),
            &json!({"conversations": conversations, "messages": messages, "via": "cli"}),
        )
    });
    streamed?;
    // The output is whole: a script must not take the failure for a broken export.
    recorded.with_context(|| {
        format!(
            "the export is complete ({conversations} conversation(s), {messages} message(s) \
             written), but recording it in the audit log failed"
        )
    })
}

/// Writes every conversation as a line of NDJSON, counting what was written.
fn stream_all(
    conn: &Connection,
    conversations: &mut usize,
    messages: &mut usize,
) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut after = ConversationId(0);
    loop {
        let page = store::list_conversations_after(conn, after, EXPORT_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.id;
        for conversation in &page {
            writeln!(out, "{}", privacy::ndjson_line(conn, conversation)?)
                .context("writing to standard output")?;
            *conversations += 1;
            *messages += conversation.messages.len();
        }
    }
    out.flush().context("writing to standard output")
}

/// One line per person found: the address they were found by, an unverified page's claim
/// said as such (a search by email finds those too, docs/privacy.md).
fn describe(visitor: &VisitorRecord) -> String {
    let address = match (&visitor.email, &visitor.claimed_email) {
        (Some(email), _) => email.clone(),
        (None, Some(claimed)) => format!("{claimed}, claimed by a page, unverified"),
        (None, None) => "no email address".to_owned(),
    };
    format!(
        "visitor {} on {} ({address}): {} conversation(s), {} message(s)",
        visitor.id, visitor.site_name, visitor.conversations, visitor.messages
    )
}

/// `porch erase`: lists what would go; with `--yes` erases it, chunk by chunk.
pub fn erase(conn: &mut Connection, args: &EraseArgs) -> anyhow::Result<()> {
    let person = &args.person;
    let found = privacy::find_people(conn, &query(person.email.as_ref(), person.visitor)?)?;
    if found.is_empty() {
        return write_out("nobody found: nothing to erase");
    }
    if !args.yes {
        let mut lines = vec!["would erase (run again with --yes to erase):".to_owned()];
        lines.extend(found.iter().map(|v| format!("  {}", describe(v))));
        return write_out(&lines.join("\n"));
    }
    for visitor in &found {
        let Some(erased) = privacy::read_erased(conn, visitor.id)? else {
            continue;
        };
        let mut total = Deleted::default();
        loop {
            // The notices it queues are noted for a running server's runner, which takes them
            // at its safety poll (or at its next start).
            let step = write(conn, |c| {
                let step = privacy::erase_step(c, &cli(), &erased, total)?;
                store::note_jobs_from_elsewhere(c, &step.notices)?;
                Ok(step)
            })?;
            total = step.total;
            if step.is_done {
                break;
            }
        }
        write_out(&format!(
            "erased visitor {}: {} conversation(s), {} message(s)",
            visitor.id, total.conversations, total.messages
        ))?;
    }
    // The freed pages go back to the file system, as after the admin page's erasure.
    while write(conn, |c| {
        store::reclaim_free_pages(c, privacy::RECLAIM_STEP)
    })? > 0
    {}
    // And the erased rows' older pages leave the WAL (a running server's Litestream may keep
    // them until its own checkpoint).
    store::truncate_after_deleting(conn);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitor_id_is_taken_as_the_pages_show_it_or_bare() {
        assert_eq!(visitor_id("v42"), Ok(42));
        assert_eq!(visitor_id("V7"), Ok(7));
        assert_eq!(visitor_id("42"), Ok(42));
        for bad in ["", "v", "v0", "-3", "x42", "vv42"] {
            assert!(visitor_id(bad).is_err(), "{bad}");
        }
    }
}
