//! A round of the runner's bookkeeping: the outcomes gathered, the integrations to block and the
//! jobs about to start, written in one deferred transaction before those deliveries begin.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_ms;
use crate::store::{self, AttemptRecord, IntegrationId, JobId, Writer};

/// Wait between attempts to record outcomes while the writer is busy.
const RECORD_RETRY: Duration = Duration::from_millis(50);

/// What a round writes: outcomes, integrations to block, and the jobs about to start.
pub struct Round {
    pub records: Vec<AttemptRecord>,
    pub blocked: Vec<(IntegrationId, String)>,
    pub starting: Vec<JobId>,
}

/// What a written round did besides recording: the jobs marked running (only queued ones are),
/// in the order given, and the jobs to be tried again that were blocked (or, test messages,
/// failed) instead, as their integration stopped taking deliveries while they ran
/// (`store::record_attempts`).
pub struct Written {
    pub marked: Vec<JobId>,
    pub not_retried: Vec<JobId>,
}

/// Blocks integrations with their queued jobs, records outcomes, and marks jobs running, in one
/// transaction. Outcomes go before the starts: a job rescheduled by one (a short 429 pause) may
/// be starting again in the same round.
///
/// The write is deferred: it rides along with the next visitor message's commit (or waits at
/// most [`store::DEFER_LIMIT`]), so the runner's bookkeeping costs no commits of its own. It is
/// retried while the writer is busy; on any other failure the round comes back unwritten.
pub async fn write_round(writer: &Writer, round: Round) -> Result<Written, Round> {
    let round = Arc::new(round);
    loop {
        let attempt = Arc::clone(&round);
        let written = writer
            .write_deferred(move |c| {
                // The blocks first: a job of a blocked integration whose outcome asks to try
                // again is then recorded as not retried, and the runner forgets it.
                let now = now_ms();
                for (integration, error) in &attempt.blocked {
                    store::mark_integration_broken(c, *integration, error, now)?;
                    store::block_integration_jobs(c, *integration, error, now)?;
                }
                let not_retried = store::record_attempts(c, &attempt.records)?;
                let marked = store::mark_jobs_running(c, &attempt.starting)?;
                Ok(Written {
                    marked,
                    not_retried,
                })
            })
            .await;
        match written {
            Ok(written) => return Ok(written),
            Err(store::Error::Busy | store::Error::DiskFull | store::Error::CommitFailed(_)) => {
                tokio::time::sleep(RECORD_RETRY).await;
            }
            Err(err) => {
                tracing::error!(error = %err, "could not record job state");
                // The writer has answered, so its copy of the round is gone.
                return Err(Arc::try_unwrap(round).unwrap_or_else(|_| Round {
                    records: Vec::new(),
                    blocked: Vec::new(),
                    starting: Vec::new(),
                }));
            }
        }
    }
}
