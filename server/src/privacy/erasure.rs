//! Erasing a person (docs/privacy.md): the visitor row (email, name, IP, pages, user agent, token
//! hash), every conversation of theirs with every message in it (agents' replies and notes
//! included), and the jobs that name them, in chunks through the writer. The step that removes
//! the visitor row records `privacy.erased` with the counts, never the content.

use std::sync::Arc;

use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::hub::{Erasure, Hub};
use crate::store::{self, Deleted, Readers, VisitorId, Writer};

use super::PURGE_CHUNK;
use super::export::PersonData;

/// Where an audited privacy action came from, as its `via` detail says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Admin,
    Api,
    Cli,
    Widget,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Self::Admin => "admin",
            Self::Api => "api",
            Self::Cli => "cli",
            Self::Widget => "widget",
        }
    }
}

/// Who asked and through what.
#[derive(Debug, Clone)]
pub struct Requester {
    pub actor: Actor,
    pub via: Via,
}

/// One chunk of erasing `visitor`, in the caller's transaction. `so_far` is what earlier chunks
/// deleted; the chunk that removes the visitor row records `privacy.erased` with the totals.
/// Returns the new totals and whether the visitor is gone.
///
/// # Errors
/// A failed write (the transaction is then rolled back by the caller).
pub fn erase_step(
    c: &Connection,
    requester: &Requester,
    visitor: VisitorId,
    so_far: Deleted,
) -> Result<(Deleted, bool), store::Error> {
    // The writer runs with SQLite's secure_delete on (`store::open_write_connection`): the erased
    // rows' bytes are overwritten with zeros, not merely unlinked.
    let (step, is_done) = store::erase_visitor_chunk(c, visitor, PURGE_CHUNK)?;
    let mut total = so_far;
    total.add(step);
    if is_done && total.visitors > 0 {
        audit::record(
            c,
            &requester.actor,
            AuditAction::PrivacyErased,
            &Target::visitor(visitor),
            &json!({
                "conversations": total.conversations,
                "messages": total.messages,
                "via": requester.via.as_str(),
            }),
        )?;
    }
    Ok((total, is_done))
}

/// Records `privacy.exported` of `data`, in the caller's transaction.
///
/// # Errors
/// A failed write.
pub fn record_export(
    c: &Connection,
    requester: &Requester,
    data: &PersonData,
) -> Result<(), store::Error> {
    audit::record(
        c,
        &requester.actor,
        AuditAction::PrivacyExported,
        &Target::visitor(data.visitor.id),
        &json!({
            "conversations": data.conversations.len(),
            "messages": data.message_count(),
            "via": requester.via.as_str(),
        }),
    )
}

/// Erases `visitor` through the writer, then tells their open widgets (which start again as a
/// new visitor) and agents' open pages. `None` if there is no such visitor.
///
/// # Errors
/// A failed read or write; what was committed before it stays erased, and erasing again
/// finishes the job.
pub async fn erase_visitor(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    hub: &Hub,
    requester: &Requester,
    visitor: VisitorId,
) -> Result<Option<Deleted>, store::Error> {
    let Some(conversations) = readers
        .read(move |c| {
            store::find_visitor_record(c, visitor)?
                .map(|_| store::list_visitor_conversation_ids(c, visitor))
                .transpose()
        })
        .await?
    else {
        return Ok(None);
    };
    let mut total = Deleted::default();
    loop {
        let requester = requester.clone();
        let (next, is_done) = writer
            .write(move |c| erase_step(c, &requester, visitor, total))
            .await?;
        total = next;
        if is_done {
            break;
        }
    }
    hub.publish_erasure(Erasure {
        visitor,
        conversations,
        by_the_visitor: requester.via == Via::Widget,
    });
    super::retention::reclaim(writer).await?;
    // The erasure is done and recorded: a refused checkpoint (the writer's queue full) must not
    // answer it as failed, when asking again finds nobody to erase.
    if let Err(err) = store::truncate_wal_after_erasure(writer).await {
        tracing::warn!(error = %err, "after an erasure: the WAL checkpoint was not run");
    }
    Ok(Some(total))
}

/// Erases the visitor stored under the token hash `hash`, who asked for it from the widget
/// (audited as theirs); `None` when there is none.
///
/// # Errors
/// As [`erase_visitor`].
pub async fn erase_visitor_of_token(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    hub: &Hub,
    hash: [u8; 32],
) -> Result<Option<Deleted>, store::Error> {
    let found = readers
        .read(move |c| store::find_visitor_record_by_token_hash(c, &hash))
        .await?;
    let Some(visitor) = found else {
        return Ok(None);
    };
    let requester = Requester {
        actor: Actor::visitor(visitor.id),
        via: Via::Widget,
    };
    let erased = erase_visitor(writer, readers, hub, &requester, visitor.id).await?;
    Ok(Some(erased.unwrap_or_default()))
}

/// Exports everything about `visitor` and records `privacy.exported`. `None` if there is no
/// such visitor.
///
/// # Errors
/// A failed read or write.
pub async fn export_visitor(
    writer: &Arc<Writer>,
    readers: &Arc<Readers>,
    requester: &Requester,
    visitor: VisitorId,
) -> Result<Option<PersonData>, store::Error> {
    let Some(data) = readers.read(move |c| PersonData::read(c, visitor)).await? else {
        return Ok(None);
    };
    let requester = requester.clone();
    let recorded = data.clone();
    writer
        .write(move |c| record_export(c, &requester, &recorded))
        .await?;
    Ok(Some(data))
}
