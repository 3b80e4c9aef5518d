//! What every delivery does before it talks to its destination: read the job's arguments, name
//! its integration, read what it needs, and turn the usual failures into an [`Attempt`]. Each
//! delivery returns `Result<Attempt, Attempt>` from these and ends with [`finish`].

use std::sync::Arc;

use rusqlite::Connection;
use serde::de::DeserializeOwned;

use crate::jobs::{Attempt, Outcome};
use crate::store::{
    self, DeliveryMessage, IntegrationId, IntegrationRow, JobRow, MessageId, Readers,
};
use crate::values::{Author, anonymous_visitor, is_invisible};

/// This job can never succeed.
pub fn failed(error: impl Into<String>) -> Attempt {
    Attempt::new(
        Outcome::Failed {
            error: error.into(),
        },
        None,
    )
}

/// Only an admin can fix this: the integration is blocked until then.
pub fn blocked(error: impl Into<String>) -> Attempt {
    Attempt::new(
        Outcome::Blocked {
            error: error.into(),
        },
        None,
    )
}

/// A passing failure on our side (the database): try again after a backoff.
pub fn retry(error: impl std::fmt::Display) -> Attempt {
    Attempt::new(
        Outcome::Retry {
            error: error.to_string(),
            not_before: None,
        },
        None,
    )
}

/// The job's arguments; a job whose arguments do not read fails.
pub fn args<T: DeserializeOwned>(job: &JobRow) -> Result<T, Attempt> {
    serde_json::from_str(&job.args).map_err(|_| failed("unreadable job arguments"))
}

/// The job's integration; a job without one fails.
pub fn integration_of(job: &JobRow) -> Result<IntegrationId, Attempt> {
    job.integration_id
        .ok_or_else(|| failed("the job names no integration"))
}

/// What a read found.
pub enum Found<T> {
    Ready(T),
    /// A row the delivery needs was deleted: there is nothing left to deliver.
    Gone(&'static str),
    /// The integration's stored settings do not read: an admin must fix them.
    Invalid(&'static str),
}

impl<T> Found<T> {
    /// Goes on with what was found; a deleted row or unreadable settings pass through.
    pub fn and_then<U>(
        self,
        next: impl FnOnce(T) -> Result<Found<U>, store::Error>,
    ) -> Result<Found<U>, store::Error> {
        match self {
            Found::Ready(value) => next(value),
            Found::Gone(what) => Ok(Found::Gone(what)),
            Found::Invalid(why) => Ok(Found::Invalid(why)),
        }
    }
}

/// Reads what a delivery needs on a reader thread: a storage error is retried, a deleted row
/// fails the job, unreadable settings block the integration.
pub async fn read<T: Send + 'static>(
    readers: &Arc<Readers>,
    read: impl FnOnce(&Connection) -> Result<Found<T>, store::Error> + Send + 'static,
) -> Result<T, Attempt> {
    match readers.read(read).await {
        Ok(Found::Ready(value)) => Ok(value),
        // In brackets, not after ": ", which the log cuts at (what follows is a service's words).
        Ok(Found::Gone(what)) => Err(failed(format!("nothing to deliver ({what})"))),
        Ok(Found::Invalid(why)) => Err(blocked(why)),
        Err(err) => Err(retry(err)),
    }
}

/// A chat post's integration and message, if both still exist.
pub fn find_post(
    conn: &Connection,
    integration: IntegrationId,
    message: MessageId,
) -> Result<Found<(IntegrationRow, DeliveryMessage)>, store::Error> {
    let Some(row) = store::find_integration(conn, integration)? else {
        return Ok(Found::Gone("integration deleted"));
    };
    let Some(message) = store::load_delivery_message(conn, message)? else {
        return Ok(Found::Gone("message deleted"));
    };
    Ok(Found::Ready((row, message)))
}

/// Who a chat post shows as the visitor: their name, else their address, else a number.
pub fn visitor_label(message: &DeliveryMessage) -> String {
    label_visitor(
        message.visitor_name.as_deref(),
        message.visitor_email.as_deref(),
        message.visitor_id,
    )
}

/// A visitor's name, else their email, else "Visitor #12", marked as the visitor's when it reads
/// like an agent's post (see [`marked_visitor_name`]).
pub fn label_visitor(
    name: Option<&str>,
    email: Option<&str>,
    id: impl std::fmt::Display,
) -> String {
    let label = name
        .or(email)
        .map_or_else(|| anonymous_visitor(id), str::to_owned);
    marked_visitor_name(&label, usize::MAX)
}

/// How an agent's name ends in a chat post, lower-cased.
const AGENT_MARK: &str = "(porch)";
/// What a visitor's name that reads like an agent's post gets after it.
const VISITOR_MARK: &str = "(visitor)";

/// `shown`, a visitor's name exactly as a destination will show it, with " (visitor)" after it
/// when it reads like an agent's post ("Ana (Porch)"), cut so that the mark fits in `limit`
/// characters. Checked on the name as shown: a destination's own clean-up (Discord removes
/// "discord" from names and cuts them at 80) must not make an agent's name after the check.
pub fn marked_visitor_name(shown: &str, limit: usize) -> String {
    if !reads_as_agent(shown) {
        return shown.to_owned();
    }
    let room = limit.saturating_sub(VISITOR_MARK.len() + 1);
    let base: String = shown.chars().take(room).collect();
    format!("{} {VISITOR_MARK}", base.trim_end())
}

/// Whether a name, as people read it, ends like an agent's post: white space, invisible
/// characters (a zero width space, a blank braille pattern) and accents (combining marks) are
/// not read; full-width letters and the look-alikes of the mark's letters and parentheses
/// (a Cyrillic er or es, a Greek rho, a zero for the o, superscript parentheses) read as the
/// ASCII ones; and what follows the mark without a letter or digit ("(Porch).", "(Porch) :)")
/// does not hide it.
fn reads_as_agent(name: &str) -> bool {
    let read: String = name
        .chars()
        .filter(|&c| !c.is_whitespace() && !is_invisible(c) && !is_combining_mark(c))
        .map(read_as_ascii)
        .flat_map(char::to_lowercase)
        .collect();
    // Also a cut just before the closing parenthesis: "… (Porch" reads as the mark too.
    read.trim_end_matches(|c: char| !c.is_alphanumeric())
        .ends_with(AGENT_MARK.trim_end_matches(')'))
}

/// Accents and other marks drawn over the letter before them.
fn is_combining_mark(c: char) -> bool {
    matches!(c,
        '\u{0300}'..='\u{036F}'
        | '\u{1AB0}'..='\u{1AFF}'
        | '\u{1DC0}'..='\u{1DFF}'
        | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}')
}

/// `c` as the ASCII character it passes for in "(porch)", if it is a full-width form or a
/// common look-alike of one of those; else `c`.
fn read_as_ascii(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c),
        // Escaped, since in source they look just like the letters they pass for: Cyrillic
        // er, Greek rho, Coptic rho.
        '\u{0440}' | '\u{0420}' | '\u{03C1}' | '\u{03A1}' | '\u{03F1}' | '\u{2CA3}'
        | '\u{2CA2}' | '\u{1D18}' => 'p',
        // Cyrillic o, Greek omicron, Armenian oh, small capital o, and the digit zero.
        '\u{043E}' | '\u{041E}' | '\u{03BF}' | '\u{039F}' | '\u{0585}' | '\u{1D0F}' | '0' => 'o',
        // Cyrillic ghe, small capital r, small capital rho.
        '\u{0433}' | '\u{0280}' | '\u{1D26}' => 'r',
        // Cyrillic es, Greek lunate sigma, small capital c, Roman numeral one hundred.
        '\u{0441}' | '\u{0421}' | '\u{03F2}' | '\u{03F9}' | '\u{1D04}' | '\u{217D}'
        | '\u{216D}' => 'c',
        // Cyrillic shha and en, Greek eta, the Planck constant, small capital h.
        '\u{04BB}' | '\u{04BA}' | '\u{041D}' | '\u{0397}' | '\u{210E}' | '\u{029C}' => 'h',
        // Superscript, subscript, small and ornament parentheses.
        '\u{207D}' | '\u{208D}' | '\u{FE59}' | '\u{2768}' | '\u{276A}' => '(',
        '\u{207E}' | '\u{208E}' | '\u{FE5A}' | '\u{2769}' | '\u{276B}' => ')',
        _ => c,
    }
}

/// The name a chat post is shown under: the agent's (marked as sent from Porch) or the
/// visitor's.
pub fn author_label(message: &DeliveryMessage) -> String {
    if message.author == Author::Agent {
        format!(
            "{} (Porch)",
            message.author_name.as_deref().unwrap_or("Agent")
        )
    } else {
        visitor_label(message)
    }
}

/// The attempt a delivery ended with, whichever way it ended.
pub fn finish(result: Result<Attempt, Attempt>) -> Attempt {
    result.unwrap_or_else(|attempt| attempt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitor_named_like_an_agents_post_is_marked_as_the_visitor() {
        assert_eq!(label_visitor(Some("Ada"), None, 3), "Ada");
        assert_eq!(label_visitor(None, Some("a@x.test"), 3), "a@x.test");
        assert_eq!(label_visitor(None, None, 3), "Visitor #3");
        assert_eq!(
            label_visitor(Some("Ada (Porch)"), None, 3),
            "Ada (Porch) (visitor)"
        );
        assert_eq!(
            label_visitor(Some("Ada (PORCH) "), None, 3),
            "Ada (PORCH) (visitor)"
        );
        // What people would read as the mark: behind invisible characters, spaced out, full
        // width.
        for name in [
            "Ada (Porch)\u{200b}",
            "Ada (Porch)\u{2800}",
            "Ada ( Porch )",
            "Ada \u{ff08}\u{ff30}orch\u{ff09}",
            // Look-alike letters, an accent, superscript parentheses, what comes after.
            "Ada (\u{0420}orch)",
            "Ada (\u{03a1}orch)",
            "Ada (Por\u{0441}h)",
            "Ada (P0rch)",
            "Ada (Porch)\u{0301}",
            "Ada \u{207d}Porch\u{207e}",
            "Ada (\u{1d18}\u{1d0f}\u{0280}\u{1d04}\u{029c})",
            "Ada (Porch).",
            "Ada (Porch) :)",
        ] {
            assert_eq!(
                label_visitor(Some(name), None, 3),
                format!("{} (visitor)", name.trim_end()),
                "{name:?}"
            );
        }
        assert_eq!(label_visitor(Some("Porch fan"), None, 3), "Porch fan");
        assert_eq!(label_visitor(Some("My porch"), None, 3), "My porch");
        assert_eq!(
            label_visitor(Some("Ada (Porch) 2"), None, 3),
            "Ada (Porch) 2",
            "a letter or digit after it ends the mark"
        );
        // A name cut by the destination's limit just before the closing parenthesis (an
        // integrator's "x"×73 + " (Porch)yyyy" posted to Discord as "xxx… (Porch").
        assert_eq!(
            label_visitor(Some("Ada (Porch"), None, 3),
            "Ada (Porch (visitor)"
        );
        let cut = format!("{} (Porch)yyyy", "x".repeat(73));
        let shown: String = cut.chars().take(80).collect();
        assert!(
            marked_visitor_name(&shown, 80).ends_with(" (visitor)"),
            "{shown}"
        );
    }

    #[test]
    fn the_mark_fits_within_the_destinations_limit() {
        let shown = format!("{} Agent (Porch)", "A".repeat(66));
        let marked = marked_visitor_name(&shown, 80);
        assert_eq!(marked.chars().count(), 80, "{marked}");
        assert!(marked.ends_with(" Age (visitor)"), "{marked}");
    }
}
