//! Planning `visitor.erased` (docs/integrations/webhooks.md): when a person is erased, each of
//! their site's webhook endpoints that subscribes to it is told whom, so that it can erase its
//! own copies of what Porch sent it (GDPR article 19: the recipients of personal data are told of
//! its erasure). Written in the erasure's last transaction, with the `privacy.erased` audit row,
//! so it is sent exactly when the erasure is done.

use rusqlite::Connection;

use crate::store::{self, ConversationId, JobRow, SiteId, VisitorId};

use super::JobKind;
use super::args::{ErasureNoticeArgs, to_json};
use super::plan::{WebhookEvent, new_job, subscribed_endpoints};

/// Whom an erasure erased.
#[derive(Debug, Clone)]
pub struct Erased {
    pub visitor_id: VisitorId,
    pub site_id: SiteId,
    pub site_key: String,
    pub site_name: String,
    /// Their conversations that were erased, oldest first.
    pub conversation_ids: Vec<ConversationId>,
}

/// One `visitor.erased` delivery per endpoint of the site that subscribes to it, outside every
/// conversation's order (the conversations are gone, and with them their queued events). Unlike
/// other events, an endpoint that is off (turned off, or disabled by a 410) is not skipped: its
/// copies are still to be erased.
///
/// # Errors
/// A failed read or insert.
pub fn plan_erasure_notices(
    conn: &Connection,
    erased: &Erased,
    now: i64,
) -> Result<Vec<JobRow>, store::Error> {
    // Turned off ones too: theirs waits, blocked, until they are turned on again.
    let integrations = store::list_webhook_endpoints(conn, erased.site_id)?;
    let endpoints = subscribed_endpoints(&integrations, WebhookEvent::VisitorErased);
    if endpoints.is_empty() {
        return Ok(Vec::new());
    }
    let args = to_json(&ErasureNoticeArgs {
        event: WebhookEvent::VisitorErased.as_str().to_owned(),
        visitor_id: erased.visitor_id,
        site_key: erased.site_key.clone(),
        site_name: erased.site_name.clone(),
        conversation_ids: erased.conversation_ids.clone(),
        webhook_id: None,
    });
    let mut jobs = Vec::with_capacity(endpoints.len());
    for endpoint in endpoints {
        // No order key: outside every conversation's order.
        let job = new_job(
            JobKind::WebhookDeliver,
            args.clone(),
            endpoint.id,
            endpoint.is_broken,
            Some(format!("webhook:{}", endpoint.id)),
            now,
        );
        jobs.extend(store::insert_job(conn, &job)?);
    }
    Ok(jobs)
}
