//! The end-to-end exactly-once checker (issue #11): the real `porch` binary, killed with SIGKILL
//! and restarted at random moments, under visitors on real websockets, agents on the API and in
//! Slack threads, and a flaky Slack and webhook receiver; then four invariants are judged from
//! what the outside saw. Seed: `PORCH_CHECK_SEED`; length: `PORCH_CHECK_SECONDS`.

// Everything in this binary is test code: a failed `expect` is a failed test. clippy.toml's
// allow-expect-in-tests covers `#[test]` functions only, not the shared helpers they call.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::print_stdout)]

mod agents;
mod chaos;
mod checks;
mod process;
mod setup;
mod slack_proxy;
mod visitor;

use std::sync::Arc;
use std::time::{Duration, Instant};

use porch::loadtest::{SlackMock, WebhookMock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::agents::{Api, Ledger, SLACK_USER};
use crate::chaos::Chaos;
use crate::process::{Porch, free_addr};
use crate::slack_proxy::SlackProxy;
use crate::visitor::Visitor;

/// Default run length: with set-up, settling and draining (the paced Slack backlog drains at
/// about a post a second) the test takes one to two minutes in a debug build on two shared cores.
const DEFAULT_SECONDS: u64 = 25;
const VISITORS: usize = 8;
/// Agent replies to one absent visitor: more than a welcome's 500.
const BACKLOG: usize = 520;

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number")),
    )
}

/// A task's own random stream, derived from the run's seed.
fn rng(seed: u64, stream: u64) -> StdRng {
    StdRng::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_messages_and_confirmed_replies_arrive_exactly_once_across_kills() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let seed = env_u64("PORCH_CHECK_SEED").unwrap_or_else(|| rand::rng().random());
    let seconds = env_u64("PORCH_CHECK_SECONDS").unwrap_or(DEFAULT_SECONDS);
    println!("exactly-once checker: PORCH_CHECK_SEED={seed} PORCH_CHECK_SECONDS={seconds}");
    let started = Instant::now();
    let http = reqwest::Client::new();

    let World {
        mock,
        hooks,
        dir,
        operator,
        porch,
        proxy,
        api,
        wiring,
    } = World::start(&http).await;

    let until = Instant::now() + Duration::from_secs(seconds);
    let ws_urls: Vec<String> = (0..VISITORS)
        .map(|i| {
            let site = if i == 0 {
                &operator.quiet_site
            } else {
                &operator.site
            };
            format!("ws://{}/widget/ws?site={site}", porch.addr)
        })
        .collect();
    let park = Arc::new(tokio::sync::Notify::new());
    let ledger = Ledger::default();
    let mut logs = Vec::new();
    let mut tasks = Vec::new();
    for (i, url) in ws_urls.iter().enumerate() {
        let mut visitor = Visitor::new(&format!("v{i}"), url.clone(), rng(seed, i as u64));
        if i == 0 {
            visitor.park = Some(Arc::clone(&park));
        } else {
            visitor.log.lock().unwrap().is_on_slack_site = true;
        }
        logs.push(Arc::clone(&visitor.log));
        // Conversations start over three quarters of the run, so thread headers are posted
        // while the server is being killed; one just after the held answers are armed (half
        // way, see `chaos`); the absent visitor at once, so its backlog fits in the run.
        let delay = Duration::from_millis(match i {
            0 => 0,
            1 => seconds * 550,
            _ => rng(seed, 100 + i as u64).random_range(0..seconds * 750),
        });
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            visitor.run(until).await;
        }));
    }
    tasks.extend(world_agents(
        (&api, &http, &wiring, &mock),
        &ledger,
        (&logs[0], &park),
        seed,
        until,
    ));
    let chaos = Chaos {
        porch,
        http: http.clone(),
        mock: Arc::clone(&mock),
        proxy: Arc::clone(&proxy),
        hooks: Arc::clone(&hooks),
        rng: rng(seed, 300),
    };
    let (porch, done) = chaos.run(until).await;
    for task in tasks {
        task.await.expect("a client task panicked");
    }
    park.notify_one();
    println!(
        "run over after {:.1}s: {done:?}; settling",
        started.elapsed().as_secs_f64()
    );

    // Replays send "the same webhook-id and payload" (docs/integrations/webhooks.md).
    let replayed = setup::replay_webhooks(&api, wiring.webhook, 10).await;
    settle_visitors(&api, &logs, &ws_urls, seed).await;
    let left = setup::drain(&api).await;
    println!(
        "settled after {:.1}s; {} kills; {replayed} webhook replays; jobs left: {left:?}",
        started.elapsed().as_secs_f64(),
        porch.timeline.kill_count()
    );

    let stored = setup::stored(&api).await;
    let all_hold = judge(
        &stored,
        &logs,
        &ledger,
        &mock,
        &proxy,
        &porch.timeline,
        &hooks,
    );
    drop(porch);
    drop(dir);
    assert!(
        all_hold,
        "an exactly-once invariant failed; replay with PORCH_CHECK_SEED={seed} PORCH_CHECK_SECONDS={seconds}"
    );
}

/// After the run: every visitor comes back once more, resends what has no ack and collects
/// every agent message stored for it, until a deadline.
async fn settle_visitors(api: &Api, logs: &[visitor::SharedLog], ws_urls: &[String], seed: u64) {
    let stored = setup::stored(api).await;
    let settle_by = Instant::now() + Duration::from_secs(6);
    let mut visitors = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        let expected = setup::expected_for(&stored, &log.lock().unwrap());
        let mut visitor = Visitor::attach(
            Arc::clone(log),
            ws_urls[i].clone(),
            rng(seed, 400 + i as u64),
        );
        visitors.push(tokio::spawn(async move {
            visitor.settle(&expected, settle_by).await;
        }));
    }
    for v in visitors {
        v.await.expect("settling visitor");
    }
}

/// Judges the four invariants on what everyone saw; prints the summary; whether all hold.
fn judge(
    stored: &[checks::Stored],
    logs: &[visitor::SharedLog],
    ledger: &Ledger,
    mock: &SlackMock,
    proxy: &SlackProxy,
    timeline: &process::Timeline,
    hooks: &WebhookMock,
) -> bool {
    let visitor_logs: Vec<_> = logs.iter().map(|l| l.lock().unwrap().clone()).collect();
    let replies = ledger.lock().unwrap().clone();
    let posts = mock.posts();
    let exchanges = proxy.exchanges();
    let webhooks = hooks.received();
    let evidence = checks::Evidence {
        stored,
        visitors: &visitor_logs,
        replies: &replies,
        posts: &posts,
        exchanges: &exchanges,
        timeline,
        webhooks: &webhooks,
    };
    checks::report(&[
        checks::visitor_messages_stored_once(&evidence),
        checks::visitor_messages_reach_one_slack_thread(&evidence),
        checks::agent_replies_reach_visitor_once(&evidence),
        checks::webhook_ids_keep_their_body(&evidence),
    ])
}

/// The outside services, the data directory and the running server, set up as an operator
/// would. The services live in this process, so they outlive every server process.
struct World {
    mock: Arc<SlackMock>,
    hooks: Arc<WebhookMock>,
    /// Kept until the end: the server's data directory.
    dir: tempfile::TempDir,
    operator: setup::Operator,
    porch: Porch,
    proxy: Arc<SlackProxy>,
    api: Api,
    wiring: setup::Wiring,
}

impl World {
    async fn start(http: &reqwest::Client) -> Self {
        let mock = Arc::new(
            SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
                .await
                .expect("slack mock"),
        );
        mock.add_user(SLACK_USER, "Sam", None);
        let hooks = Arc::new(
            WebhookMock::start(([127, 0, 0, 1], 0).into())
                .await
                .expect("webhook mock"),
        );
        let dir = tempfile::tempdir().expect("data dir");
        let operator = setup::operator(dir.path());
        let mut porch = Porch::new(dir.path(), free_addr(), Vec::new());
        let proxy = Arc::new(SlackProxy::start(mock.addr, Arc::clone(&porch.timeline)).await);
        porch.set_args(vec![
            "--slack-api-url".to_owned(),
            proxy.api_url(),
            "--allow-private-networks".to_owned(),
        ]);
        porch.start(http).await;
        let api = Api::new(http.clone(), porch.addr, &operator.token);
        let wiring = setup::integrations(&api, &operator.site, &hooks).await;
        Self {
            mock,
            hooks,
            dir,
            operator,
            porch,
            proxy,
            api,
            wiring,
        }
    }
}

/// The API agent, the Slack agent and the long absence's backlog, as tasks.
fn world_agents(
    (api, http, wiring, mock): (&Api, &reqwest::Client, &setup::Wiring, &Arc<SlackMock>),
    ledger: &Ledger,
    (absent, park): (&visitor::SharedLog, &Arc<tokio::sync::Notify>),
    seed: u64,
    until: Instant,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(agents::api_agent(
            api.clone(),
            Arc::clone(ledger),
            rng(seed, 200),
            until,
        )),
        tokio::spawn(agents::slack_agent(
            http.clone(),
            (wiring.events_url.clone(), wiring.team_id.clone()),
            Arc::clone(mock),
            Arc::clone(ledger),
            rng(seed, 201),
            until,
        )),
        tokio::spawn(setup::backlog(
            api.clone(),
            Arc::clone(absent),
            Arc::clone(park),
            Arc::clone(ledger),
            BACKLOG,
            until,
        )),
    ]
}
