//! What an operator and the end of the run do, through the CLI and the documented API: create
//! the site, an admin and its token; connect Slack (Events API) and a webhook endpoint; stage a
//! long absence; replay webhook deliveries; wait for the job runner to drain; read what is
//! stored.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use porch::loadtest::WebhookMock;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::agents::{Api, CHANNEL, Ledger, Reply, SIGNING_SECRET, Via};
use crate::chaos::HOOK_PATH;
use crate::checks::Stored;
use crate::process::cli;
use crate::visitor::{ORIGIN, SharedLog, VisitorLog};

const ADMIN: &str = "ana@shop.test";

/// What `porch site add`, `porch user add` and `porch token add` gave the operator.
pub struct Operator {
    pub site: String,
    /// A second site with no integrations, for the long absence: its 520 replies post nothing
    /// to Slack, which would take the drain longer than the test may run.
    pub quiet_site: String,
    pub token: String,
}

pub fn operator(data_dir: &Path) -> Operator {
    let site: Value = serde_json::from_str(&cli(
        data_dir,
        &[
            "site", "add", "--name", "Shop", "--origin", ORIGIN, "--json",
        ],
    ))
    .expect("site add prints JSON");
    let quiet: Value = serde_json::from_str(&cli(
        data_dir,
        &[
            "site", "add", "--name", "Blog", "--origin", ORIGIN, "--json",
        ],
    ))
    .expect("site add prints JSON");
    cli(
        data_dir,
        &[
            "user", "add", "--email", ADMIN, "--name", "Ana", "--role", "admin",
        ],
    );
    let token = cli(data_dir, &["token", "add", "--user", ADMIN]);
    Operator {
        site: site["key"].as_str().expect("site key").to_owned(),
        quiet_site: quiet["key"].as_str().expect("site key").to_owned(),
        token: token.trim().to_owned(),
    }
}

/// The integrations as the API answered them.
pub struct Wiring {
    pub events_url: String,
    pub team_id: String,
    pub webhook: i64,
}

pub async fn integrations(api: &Api, site: &str, hooks: &WebhookMock) -> Wiring {
    let slack =
        json!({"bot_token": "xoxb-check", "channel_id": CHANNEL, "signing_secret": SIGNING_SECRET});
    let path = format!("/api/v1/sites/{site}/integrations/slack");
    let (status, slack) = api.call("POST", &path, Some(slack)).await.expect("answer");
    assert_eq!(status, 201, "{slack}");
    let hook =
        json!({"url": hooks.url(HOOK_PATH), "events": ["conversation.created", "message.created"]});
    let path = format!("/api/v1/sites/{site}/integrations/webhooks");
    let (status, hook) = api.call("POST", &path, Some(hook)).await.expect("answer");
    assert_eq!(status, 201, "{hook}");
    Wiring {
        events_url: slack["events_url"].as_str().expect("events_url").to_owned(),
        team_id: slack["team_id"].as_str().expect("team_id").to_owned(),
        webhook: hook["id"].as_i64().expect("webhook id"),
    }
}

/// Every message the API shows, in every conversation. Retries until the server answers.
pub async fn stored(api: &Api) -> Vec<Stored> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(stored) = try_stored(api).await {
            return stored;
        }
        assert!(Instant::now() < deadline, "the API did not answer");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn try_stored(api: &Api) -> Option<Vec<Stored>> {
    let (200, list) = api.call("GET", "/api/v1/conversations", None).await? else {
        return None;
    };
    let mut stored = Vec::new();
    for c in list["conversations"].as_array()? {
        let conversation = c["id"].as_i64()?;
        let path = format!("/api/v1/conversations/{conversation}/messages");
        let (200, messages) = api.call("GET", &path, None).await? else {
            return None;
        };
        for m in messages["messages"].as_array()? {
            stored.push(Stored {
                id: m["id"].as_i64()?,
                conversation,
                author: m["author"].as_str()?.to_owned(),
                client_id: m["client_id"].as_str().map(str::to_owned),
                body: m["body"].as_str()?.to_owned(),
            });
        }
    }
    Some(stored)
}

/// The agent messages stored in the visitor's conversations: what it must end up with.
pub fn expected_for(stored: &[Stored], log: &VisitorLog) -> Vec<i64> {
    let prefix = format!("{}-", log.name);
    let mine: Vec<i64> = stored
        .iter()
        .filter(|m| m.client_id.as_ref().is_some_and(|c| c.starts_with(&prefix)))
        .map(|m| m.conversation)
        .collect();
    stored
        .iter()
        .filter(|m| m.author == "agent" && mine.contains(&m.conversation))
        .map(|m| m.id)
        .collect()
}

/// A long absence: once the parked visitor is away, agents answer it `n` times through the
/// API (more than one welcome holds), then it comes back.
pub async fn backlog(
    api: Api,
    log: SharedLog,
    park: Arc<Notify>,
    ledger: Ledger,
    n: usize,
    until: Instant,
) {
    let conversation = loop {
        if Instant::now() >= until {
            return;
        }
        let parked = log.lock().unwrap().clone();
        if parked.is_parked
            && let Some(stored) = try_stored(&api).await
            && let Some(m) = stored.iter().find(|m| {
                m.client_id
                    .as_ref()
                    .is_some_and(|c| parked.acked.contains_key(c))
            })
        {
            break m.conversation;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut posters = Vec::new();
    for lane in 0..4 {
        let (api, ledger) = (api.clone(), Arc::clone(&ledger));
        posters.push(tokio::spawn(async move {
            for i in (lane..n).step_by(4) {
                if Instant::now() >= until {
                    return;
                }
                let body = format!("backlog reply {i} to conversation {conversation}");
                let is_confirmed = api.reply(conversation, &body).await;
                ledger.lock().unwrap().push(Reply {
                    conversation,
                    body,
                    via: Via::Api,
                    is_confirmed,
                });
            }
        }));
    }
    for poster in posters {
        let _ = poster.await;
    }
    park.notify_one();
}

/// Replays `n` delivered webhook deliveries, oldest to newest; returns how many were accepted.
pub async fn replay_webhooks(api: &Api, integration: i64, n: usize) -> usize {
    let path = format!("/api/v1/integrations/{integration}/deliveries");
    let Some((200, log)) = api.call("GET", &path, None).await else {
        return 0;
    };
    let rows = log
        .as_object()
        .and_then(|o| o.values().find_map(Value::as_array))
        .cloned()
        .unwrap_or_default();
    let mut jobs: Vec<i64> = rows
        .iter()
        .filter(|r| r["http_status"] == 200)
        .filter_map(|r| r["job_id"].as_i64())
        .collect();
    jobs.sort_unstable();
    jobs.dedup();
    let mut replayed = 0;
    // Spread over the run, so several conversations (and changed visitor addresses) are hit.
    let step = (jobs.len() / n.max(1)).max(1);
    for job in jobs.into_iter().step_by(step).take(n) {
        let path = format!("/api/v1/integrations/{integration}/deliveries/{job}/replay");
        if let Some((202, _)) = api.call("POST", &path, None).await {
            replayed += 1;
        }
    }
    replayed
}

/// How long the drain waits for the backlog to shrink before it counts as stuck.
const DRAIN_STALL: Duration = Duration::from_secs(15);
/// The longest the drain waits in all.
const DRAIN_AT_MOST: Duration = Duration::from_mins(3);

/// Waits until no job runs and no Slack post is due within a few seconds; returns what is
/// left. Webhook deliveries are not waited for: after two failures (or a kill) the next attempt
/// is minutes away, holding its conversation's later ones back, and check 4 needs no
/// delivery to be complete.
///
/// It waits as long as the backlog shrinks (up to [`DRAIN_AT_MOST`]), and gives up once it has
/// not for [`DRAIN_STALL`]: the chaos's 429s make Porch pace the channel at Slack's documented
/// rate of about a post a second (docs/jobs.md, "Pacing"), so a run's backlog drains at that
/// rate, and only a backlog that stops draining is a failure.
pub async fn drain(api: &Api) -> Vec<String> {
    let deadline = Instant::now() + DRAIN_AT_MOST;
    let mut fewest = usize::MAX;
    let mut shrank_at = Instant::now();
    loop {
        let mut left = Vec::new();
        let now = porch::clock::now_ms();
        for state in ["running", "queued"] {
            let path = format!("/api/v1/jobs?state={state}");
            match api.call("GET", &path, None).await {
                Some((200, jobs)) => {
                    for job in jobs["jobs"].as_array().into_iter().flatten() {
                        let due_in = job["run_at"].as_i64().unwrap_or_default() - now;
                        let is_slack = job["kind"].as_str().is_some_and(|k| k.starts_with("slack"));
                        if state == "running" || (is_slack && due_in < 6_000) {
                            left.push(format!(
                                "{} {} {state} due in {due_in} ms",
                                job["id"], job["kind"]
                            ));
                        }
                    }
                }
                _ => left.push(format!("no answer for {state} jobs")),
            }
        }
        let now = Instant::now();
        if left.len() < fewest {
            fewest = left.len();
            shrank_at = now;
        }
        if left.is_empty() || now >= deadline || now.duration_since(shrank_at) >= DRAIN_STALL {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
