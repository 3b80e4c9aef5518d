//! Failed deliveries an admin dismisses (docs/jobs.md, "Dismissing"): a delivery given up for
//! good that will never be wanted (a visitor's address that does not exist, a message a
//! destination will never take) would otherwise stay on the Deliveries page, in
//! `GET /api/v1/jobs?state=failed` and in its integration's health for ever. Dismissing deletes
//! it with its attempt log and records who did it.

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::store::{self, JobId, Writer};

/// Failed jobs deleted per write, so a large backlog never holds the writer for long.
const PAGE: u32 = 1000;

/// Dismisses job `id` if it is failed; returns whether it did (it may have been retried or
/// dismissed meanwhile, or never have been failed).
pub async fn dismiss_job(writer: &Writer, actor: &Actor, id: JobId) -> Result<bool, store::Error> {
    let actor = actor.clone();
    writer
        .write(move |c| {
            let Some(job) = store::dismiss_failed_job(c, id)? else {
                return Ok(false);
            };
            let detail = json!({ "integration": job.integration_id.map(|i| i.0) });
            let target = Target::job(job.id, &job.kind);
            audit::record(c, &actor, AuditAction::DeliveryDismissed, &target, &detail)?;
            Ok(true)
        })
        .await
}

/// Dismisses every failed delivery but test messages (each destination's page shows its latest
/// test) that failed before the call, a page at a time, oldest first; returns how many. Each
/// page's write records how many it deleted, so what was deleted is in the log however far the
/// walk got.
pub async fn dismiss_failed_jobs(writer: &Writer, actor: &Actor) -> Result<usize, store::Error> {
    let Some(last) = writer.write(store::newest_failed_job).await? else {
        return Ok(0);
    };
    let mut count = 0;
    loop {
        let actor = actor.clone();
        let deleted = writer
            .write(move |c| {
                let deleted = store::dismiss_failed_jobs_page(c, last, PAGE)?;
                if deleted > 0 {
                    let detail = json!({ "count": deleted });
                    let target = Target::failed_deliveries();
                    audit::record(c, &actor, AuditAction::DeliveryDismissed, &target, &detail)?;
                }
                Ok(deleted)
            })
            .await?;
        count += deleted;
        if deleted < usize::try_from(PAGE).unwrap_or(usize::MAX) {
            return Ok(count);
        }
    }
}
