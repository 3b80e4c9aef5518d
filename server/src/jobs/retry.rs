//! Retrying deliveries an admin asks for: failed or blocked jobs go back to the queue with a
//! fresh attempt budget and are handed to the runner at once.

use crate::clock::now_ms;
use crate::store::{self, JobId, Writer};

use super::JobQueue;

/// Queues one job (`Some`) or every failed and blocked job (`None`) again; returns how many.
pub async fn retry_jobs(
    writer: &Writer,
    queue: &JobQueue,
    id: Option<JobId>,
) -> Result<usize, store::Error> {
    let jobs = writer
        .write(move |c| super::plan_retry(c, id, now_ms()))
        .await?;
    let count = jobs.len();
    queue.submit(jobs);
    Ok(count)
}
