//! The pre-chat form (docs/widget.md#pre-chat-form): the `site_prechat` table (one row for each
//! site with a form) and the visitors' answers, recorded once.

use rusqlite::{Connection, OptionalExtension, params};

use crate::values::{FieldMode, PrechatAnswers, PrechatForm};

use super::{Error, SiteId, VisitorId};

/// A `site_prechat` row as stored, before parsing: (name, email, question, question field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePrechatRow {
    pub name_field: String,
    pub email_field: String,
    pub question: String,
    pub question_field: String,
}

/// The site's pre-chat form, if it has one.
pub fn find_site_prechat(conn: &Connection, site: SiteId) -> Result<Option<SitePrechatRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT name_field, email_field, question, question_field FROM site_prechat \
             WHERE site_id = ?1",
        )?
        .query_row([site], |r| {
            Ok(SitePrechatRow {
                name_field: r.get(0)?,
                email_field: r.get(1)?,
                question: r.get(2)?,
                question_field: r.get(3)?,
            })
        })
        .optional()?)
}

/// Stores (or replaces) the site's pre-chat form.
pub fn upsert_site_prechat(
    conn: &Connection,
    site: SiteId,
    form: &PrechatForm,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO site_prechat (site_id, name_field, email_field, question, question_field, \
         updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (site_id) DO UPDATE SET \
         name_field = excluded.name_field, email_field = excluded.email_field, \
         question = excluded.question, question_field = excluded.question_field, \
         updated_at = excluded.updated_at",
    )?
    .execute(params![
        site,
        form.name.as_str(),
        form.email.as_str(),
        form.question,
        form.question_mode.as_str(),
        now
    ])?;
    Ok(())
}

/// Removes the site's pre-chat form; true if it had one.
pub fn delete_site_prechat(conn: &Connection, site: SiteId) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM site_prechat WHERE site_id = ?1")?
        .execute([site])?
        > 0)
}

/// Records the visitor's answers unless they answered before (a resend of the first message, or
/// two tabs): the first answers stay. A name or email the visitor already has (verified, or from
/// the offline email form) is kept.
pub(super) fn record_visitor_prechat(
    conn: &Connection,
    visitor: VisitorId,
    answers: &PrechatAnswers,
    now: i64,
) -> Result<(), Error> {
    conn.prepare_cached(
        "UPDATE visitors SET name = coalesce(name, ?2), email = coalesce(email, ?3), \
         prechat_question = ?4, prechat_answer = ?5, prechat_at = ?6 \
         WHERE id = ?1 AND prechat_at IS NULL",
    )?
    .execute(params![
        visitor,
        answers.name,
        answers.email,
        answers.question,
        answers.answer,
        now
    ])?;
    Ok(())
}

/// Parses a stored mode; an unknown one (impossible under the table's CHECK) reads as off.
pub fn field_mode(raw: &str) -> FieldMode {
    FieldMode::parse(raw).unwrap_or(FieldMode::Off)
}
