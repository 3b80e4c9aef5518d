//! The runner's 30 s safety poll (docs/jobs.md): the jobs it was not handed at a commit, which
//! another process wrote. Jobs with ids above the highest the runner has seen are read as such;
//! those `porch erase` wrote (its `visitor.erased` notices) are also noted for it, since this
//! server may have written a newer job first, and the poll would then never read them.

use crate::clock::now_ms;
use crate::store::{self, JobId};

use super::Dispatcher;

impl Dispatcher {
    /// Picks up queued jobs written by another process since the last look, and asks again for
    /// the reads of rate keys' windows that failed.
    pub(super) async fn poll_database(&mut self) {
        let after = self.highest_seen;
        let read = self
            .readers
            .read(move |c| {
                let above = store::list_queued_jobs_after(c, after)?;
                let (noted, ids) = store::list_jobs_from_elsewhere(c)?;
                Ok((above, noted, ids))
            })
            .await;
        match read {
            Ok((above, noted, ids)) => {
                self.add(above);
                // Those above `after` came with the first read.
                self.add(noted.into_iter().filter(|j| j.id <= after).collect());
                self.forget_noted(ids).await;
            }
            Err(err) => tracing::warn!(error = %err, "could not look for new jobs"),
        }
        self.index.retry_failed_loads();
        self.index.expire(now_ms());
    }

    /// Clears the notes read: their jobs are in the index now (or were no longer queued).
    async fn forget_noted(&self, ids: Vec<JobId>) {
        if ids.is_empty() {
            return;
        }
        if let Err(err) = self
            .writer
            .write(move |c| store::forget_jobs_from_elsewhere(c, &ids))
            .await
        {
            // Read again at the next poll; the index ignores a job it has.
            tracing::warn!(error = %err, "could not clear the jobs another process noted");
        }
    }
}
