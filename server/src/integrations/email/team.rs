//! Mails to team members as jobs: invitation and password-reset links (`email.account_link`)
//! and an admin's test mail (`email.test`). SMTP failures are classified like every other mail's,
//! so a server that is down for a while delays an invitation instead of losing it.

use lettre::Message;

use super::deliver::classify;
use super::mailer::Mailer;
use crate::accounts::{hash_secret, link_token};
use crate::clock::now_ms;
use crate::integrations::Destinations;
use crate::integrations::delivery::{args, blocked, failed, finish, retry};
use crate::jobs::{
    AccountLink, AccountLinkArgs, Attempt, JobKind, JobQueue, Outcome, TestMailArgs,
    plan_account_link_mail, plan_test_mail,
};
use crate::store::{self, JobRow, Writer};

/// Queues an invitation or password-reset mail and hands it to the runner.
pub async fn queue_account_link(
    writer: &Writer,
    jobs: &JobQueue,
    link: AccountLinkArgs,
) -> Result<(), store::Error> {
    let queued = writer
        .write(move |c| plan_account_link_mail(c, &link, now_ms()))
        .await?;
    jobs.submit(queued.into_iter().collect());
    Ok(())
}

/// Queues a test mail to `to` and hands it to the runner; its job's state is the test's
/// outcome (the email page shows the latest).
pub async fn queue_test_mail(
    writer: &Writer,
    jobs: &JobQueue,
    to: String,
) -> Result<(), store::Error> {
    let queued = writer
        .write(move |c| plan_test_mail(c, &to, now_ms()))
        .await?;
    jobs.submit(queued.into_iter().collect());
    Ok(())
}

/// Delivers an `email.account_link` or `email.test` job.
pub async fn deliver_team_mail(
    destinations: &Destinations,
    job: &JobRow,
    kind: JobKind,
) -> Attempt {
    finish(send(destinations, job, kind).await)
}

async fn send(
    destinations: &Destinations,
    job: &JobRow,
    kind: JobKind,
) -> Result<Attempt, Attempt> {
    let mailer = destinations
        .mailer
        .as_deref()
        .ok_or_else(|| blocked("email is not configured (PORCH_SMTP_URL, PORCH_MAIL_FROM)"))?;
    let message = match kind {
        JobKind::EmailAccountLink => {
            let link: AccountLinkArgs = args(job)?;
            // A mail saying to sign in through single sign-on carries no link to go stale.
            let has_link = !matches!(link.link, AccountLink::SingleSignOn { .. });
            if has_link && !is_usable(destinations, &link).await? {
                // Asked for twice in a row, the mails could go out in either order, and the
                // last to arrive would then be a dead link: only a working link is mailed.
                return Ok(Attempt::new(
                    Outcome::Delivered {
                        external_ref: Some(
                            "not sent: the link was replaced by a newer one, used or expired"
                                .to_owned(),
                        ),
                    },
                    None,
                ));
            }
            mailer.account_link_message(job.id, &link)
        }
        JobKind::EmailTest => {
            let test: TestMailArgs = args(job)?;
            mailer.test_message(&test.to)
        }
        other => return Err(failed(format!("{other} is not a team mail"))),
    }
    .map_err(failed)?;
    sent(mailer, message).await
}

/// Whether the link a mail carries still works.
async fn is_usable(destinations: &Destinations, link: &AccountLinkArgs) -> Result<bool, Attempt> {
    let hash = hash_secret(link_token(&link.url));
    destinations
        .readers
        .read(move |c| store::is_account_link_usable(c, &hash, now_ms()))
        .await
        .map_err(retry)
}

async fn sent(mailer: &Mailer, message: Message) -> Result<Attempt, Attempt> {
    let answer = mailer
        .send(message)
        .await
        .map_err(|err| Attempt::new(classify(&err), None))?;
    Ok(Attempt::new(
        Outcome::Delivered {
            external_ref: Some(answer),
        },
        None,
    ))
}
