//! Erasing a person (docs/privacy.md): the visitor row (email, name, IP, pages, user agent, token
//! hash), every conversation of theirs with every message in it (agents' replies and notes
//! included), and the jobs that name them, in chunks through the writer. The step that removes
//! the visitor row records `privacy.erased` with the counts, never the content, and queues the
//! `visitor.erased` webhook notices (ids only).

use std::sync::Arc;

use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::hub::{Erasure, Hub};
use crate::jobs::{self, Erased, JobQueue};
use crate::store::{self, Deleted, JobRow, Readers, VisitorId, Writer};

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

/// Whom an erasure is about, read before its first chunk (the rows go with the chunks): the
/// visitor, their site and their conversations, for the `visitor.erased` webhook notice. `None`
/// if there is no such visitor.
///
/// # Errors
/// A failed read.
pub fn read_erased(c: &Connection, visitor: VisitorId) -> Result<Option<Erased>, store::Error> {
    let Some(record) = store::find_visitor_record(c, visitor)? else {
        return Ok(None);
    };
    let Some(site) = store::find_site_by_key(c, &record.site_key)? else {
        return Ok(None);
    };
    Ok(Some(Erased {
        visitor_id: visitor,
        site_id: site.id,
        site_key: record.site_key,
        site_name: record.site_name,
        conversation_ids: store::list_visitor_conversation_ids(c, visitor)?,
    }))
}

/// Where an erasure stands after a chunk.
#[derive(Debug)]
pub struct Step {
    /// What the chunks so far deleted.
    pub total: Deleted,
    /// The visitor is gone.
    pub is_done: bool,
    /// The `visitor.erased` deliveries the last chunk queued, for the runner.
    pub notices: Vec<JobRow>,
}

/// One chunk of erasing `erased.visitor_id`, in the caller's transaction. `so_far` is what
/// earlier chunks deleted; the chunk that removes the visitor row records `privacy.erased` with
/// the totals and queues the site's `visitor.erased` webhook notices.
///
/// # Errors
/// A failed write (the transaction is then rolled back by the caller).
pub fn erase_step(
    c: &Connection,
    requester: &Requester,
    erased: &Erased,
    so_far: Deleted,
) -> Result<Step, store::Error> {
    let visitor = erased.visitor_id;
    // The writer runs with SQLite's secure_delete on (`store::open_write_connection`): the erased
    // rows' bytes are overwritten with zeros, not merely unlinked.
    let (step, is_done) = store::erase_visitor_chunk(c, visitor, PURGE_CHUNK)?;
    let mut total = so_far;
    total.add(step);
    let mut notices = Vec::new();
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
        notices = jobs::plan_erasure_notices(c, erased, now_ms())?;
    }
    Ok(Step {
        total,
        is_done,
        notices,
    })
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
    (hub, jobs): (&Hub, &JobQueue),
    requester: &Requester,
    visitor: VisitorId,
) -> Result<Option<Deleted>, store::Error> {
    let Some(erased) = readers.read(move |c| read_erased(c, visitor)).await? else {
        return Ok(None);
    };
    let conversations = erased.conversation_ids.clone();
    let erased = Arc::new(erased);
    let mut total = Deleted::default();
    loop {
        let (requester, erased) = (requester.clone(), Arc::clone(&erased));
        let step = writer
            .write(move |c| erase_step(c, &requester, &erased, total))
            .await?;
        total = step.total;
        jobs.submit(step.notices);
        if step.is_done {
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
    store::truncate_wal_after_deleting(writer).await;
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
    (hub, jobs): (&Hub, &JobQueue),
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
    let erased = erase_visitor(writer, readers, (hub, jobs), &requester, visitor.id).await?;
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
