//! The four invariants, judged from what the outside saw (the visitors' logs, the agents'
//! ledger, the Slack mock's posts, the webhook receiver's requests) against what the API says
//! is stored. Each check counts what it looked at and lists every broken promise.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use porch::loadtest::{Post, Received};

use crate::agents::{Reply, Via};
use crate::process::Timeline;
use crate::slack_proxy::Exchange;
use crate::visitor::VisitorLog;

/// A message as `GET /api/v1/conversations/{id}/messages` shows it.
#[derive(Debug, Clone)]
pub struct Stored {
    pub id: i64,
    pub conversation: i64,
    pub author: String,
    pub client_id: Option<String>,
    pub body: String,
}

/// Everything the checks judge.
pub struct Evidence<'a> {
    pub stored: &'a [Stored],
    pub visitors: &'a [VisitorLog],
    pub replies: &'a [Reply],
    pub posts: &'a [Post],
    pub exchanges: &'a [Exchange],
    pub timeline: &'a Timeline,
    pub webhooks: &'a [Received],
}

/// One invariant's verdict.
pub struct Verdict {
    pub name: &'static str,
    pub counts: Vec<(&'static str, usize)>,
    pub failures: Vec<String>,
}

impl Verdict {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            counts: Vec::new(),
            failures: Vec::new(),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The visitor a `client_id` belongs to (`{visitor}-{n}`).
fn owner_of(client_id: &str) -> &str {
    client_id
        .rsplit_once('-')
        .map_or(client_id, |(name, _)| name)
}

/// Conversation → the visitor who wrote in it.
fn owners<'a>(e: &Evidence<'a>) -> BTreeMap<i64, &'a VisitorLog> {
    let mut owners = BTreeMap::new();
    for m in e.stored {
        if let Some(client_id) = &m.client_id
            && let Some(v) = e.visitors.iter().find(|v| v.name == owner_of(client_id))
        {
            owners.insert(m.conversation, v);
        }
    }
    owners
}

/// 1. Every acknowledged visitor message is stored exactly once, under its acked id.
pub fn visitor_messages_stored_once(e: &Evidence) -> Verdict {
    let mut v = Verdict::new("1. acked visitor messages stored exactly once");
    let mut by_client_id: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for m in e.stored.iter().filter(|m| m.author == "visitor") {
        if let Some(c) = &m.client_id {
            by_client_id.entry(c).or_default().push(m.id);
        }
    }
    let (mut acked, mut once) = (0, 0);
    for visitor in e.visitors {
        for (client_id, &id) in &visitor.acked {
            acked += 1;
            match by_client_id.get(client_id.as_str()).map(Vec::as_slice) {
                Some([stored]) if *stored == id => once += 1,
                Some([stored]) => v.failures.push(format!(
                    "{client_id}: acked as id {id}, stored as id {stored}"
                )),
                None | Some([]) => v.failures.push(format!("{client_id} (id {id}): lost")),
                Some(ids) => v
                    .failures
                    .push(format!("{client_id}: stored {} times: {ids:?}", ids.len())),
            }
        }
        v.failures.extend(
            visitor
                .violations
                .iter()
                .filter(|x| x.contains("confirmed as"))
                .cloned(),
        );
    }
    let duplicated = by_client_id.values().filter(|ids| ids.len() > 1).count();
    v.counts = vec![
        ("acked", acked),
        ("stored once", once),
        (
            "stored, never acked",
            by_client_id.len().saturating_sub(acked),
        ),
        ("client_ids stored twice", duplicated),
    ];
    v
}

/// Whether a kill explains the later copy of a post: the earlier copy's process was killed
/// before Porch could have recorded the answer (unanswered, or answered at most 1 s before the
/// kill), and the later copy came from a later process. At-least-once, as docs/jobs.md says.
fn kill_explains(e: &Evidence, earlier: &Post, later: &Post) -> bool {
    let find = |ts: &str| e.exchanges.iter().find(|x| x.ts == ts);
    let (Some(first), Some(again)) = (find(&earlier.ts), find(&later.ts)) else {
        return false;
    };
    let Some(killed) = e.timeline.killed_at(first.epoch) else {
        return false;
    };
    again.epoch > first.epoch
        && first
            .answered
            .is_none_or(|a| a + Duration::from_secs(1) > killed)
}

/// 2. Every acked visitor message reached Slack, in its conversation's one thread.
pub fn visitor_messages_reach_one_slack_thread(e: &Evidence) -> Verdict {
    let mut v = Verdict::new("2. acked visitor messages in Slack, one thread per conversation");
    let mut headers: BTreeMap<i64, Vec<&Post>> = BTreeMap::new();
    let mut copies: BTreeMap<i64, Vec<&Post>> = BTreeMap::new();
    for post in e.posts {
        let meta = &post.body["metadata"];
        let payload = &meta["event_payload"];
        if meta["event_type"] == "porch_conversation"
            && let Some(c) = payload["conversation_id"].as_i64()
        {
            headers.entry(c).or_default().push(post);
        } else if let Some(id) = payload["message_id"].as_i64() {
            copies.entry(id).or_default().push(post);
        }
    }
    let conversation_of: BTreeMap<i64, i64> =
        e.stored.iter().map(|m| (m.id, m.conversation)).collect();
    let (mut acked, mut posted) = (0, 0);
    let mut threads_of: BTreeMap<i64, BTreeSet<&str>> = BTreeMap::new();
    let on_slack = e.visitors.iter().filter(|v| v.is_on_slack_site);
    for (client_id, &id) in on_slack.flat_map(|v| &v.acked) {
        acked += 1;
        let Some(&conversation) = conversation_of.get(&id) else {
            continue; // Lost from the store: check 1 reports it.
        };
        let roots: BTreeSet<&str> = headers
            .get(&conversation)
            .into_iter()
            .flatten()
            .map(|p| p.ts.as_str())
            .collect();
        let Some(posts) = copies.get(&id) else {
            v.failures
                .push(format!("{client_id} (id {id}) never reached Slack"));
            continue;
        };
        posted += 1;
        for post in posts {
            let thread = post.thread_ts.as_deref().unwrap_or("(none)");
            if !roots.contains(thread) {
                v.failures.push(format!(
                    "{client_id} (id {id}) posted in thread {thread}, not one of conversation {conversation}'s"
                ));
            }
            threads_of.entry(conversation).or_default().insert(thread);
        }
    }
    for (conversation, threads) in &threads_of {
        if threads.len() > 1 {
            v.failures.push(format!(
                "conversation {conversation}: visitor messages split over threads {threads:?}"
            ));
        }
    }
    let (mut extra_headers, mut excused_headers) = (0, 0);
    for (conversation, posts) in &headers {
        for pair in posts.windows(2) {
            extra_headers += 1;
            if kill_explains(e, pair[0], pair[1]) {
                excused_headers += 1;
            } else {
                v.failures.push(format!(
                    "conversation {conversation}: a second thread header {} after {} (no kill explains it)",
                    pair[1].ts, pair[0].ts
                ));
            }
        }
    }
    let (mut extra_posts, mut excused_posts) = (0, 0);
    for posts in copies.values() {
        for pair in posts.windows(2) {
            extra_posts += 1;
            excused_posts += usize::from(kill_explains(e, pair[0], pair[1]));
        }
    }
    v.counts = vec![
        ("acked visitor messages", acked),
        ("posted at least once", posted),
        ("conversations with a thread", headers.len()),
        (
            "answers held past Porch's Slack timeout",
            e.exchanges.iter().filter(|x| x.held).count(),
        ),
        (
            "duplicate headers (asserted: none unless a kill explains it)",
            extra_headers,
        ),
        ("  of which a kill explains", excused_headers),
        (
            "duplicate message posts (reported, not asserted: at least once)",
            extra_posts,
        ),
        ("  of which a kill explains", excused_posts),
    ];
    v
}

/// Check 3: every confirmed agent reply reached its visitor exactly once and in order; any
/// other at most once.
pub fn agent_replies_reach_visitor_once(e: &Evidence) -> Verdict {
    let mut v = Verdict::new("3. confirmed agent replies reach the visitor exactly once, in order");
    let owners = owners(e);
    let mut stored_by_body: BTreeMap<(i64, &str), Vec<i64>> = BTreeMap::new();
    for m in e.stored.iter().filter(|m| m.author == "agent") {
        stored_by_body
            .entry((m.conversation, m.body.as_str()))
            .or_default()
            .push(m.id);
    }
    let mut counts = [0usize; 7];
    // Wire violations first, so the summary shows them even among many losses.
    for visitor in e.visitors {
        for violation in visitor
            .violations
            .iter()
            .filter(|x| !x.contains("confirmed as"))
        {
            counts[5] += 1;
            v.failures.push(violation.clone());
        }
    }
    for reply in e.replies {
        let how = match &reply.via {
            Via::Api => "API".to_owned(),
            Via::Slack { thread_ts, is_live } => {
                format!(
                    "Slack thread {thread_ts}{}",
                    if *is_live {
                        ""
                    } else {
                        " (a duplicate header's)"
                    }
                )
            }
        };
        let ids = stored_by_body
            .get(&(reply.conversation, reply.body.as_str()))
            .cloned()
            .unwrap_or_default();
        let label = format!("\"{}\" via {how}", reply.body);
        counts[usize::from(!reply.is_confirmed)] += 1;
        if reply.is_confirmed && ids.len() != 1 {
            counts[6] += 1;
            v.failures
                .push(format!("{label}: confirmed but stored {} times", ids.len()));
        } else if ids.len() > 1 {
            v.failures
                .push(format!("{label}: unconfirmed, stored {} times", ids.len()));
        }
        let Some(&id) = ids.first() else {
            continue;
        };
        let Some(owner) = owners.get(&reply.conversation) else {
            v.failures.push(format!(
                "{label}: no visitor owns conversation {}",
                reply.conversation
            ));
            continue;
        };
        match owner.agent_messages.get(&id).map_or(0, |m| m.2) {
            0 if reply.is_confirmed => {
                counts[2] += 1;
                v.failures
                    .push(format!("{label} (id {id}) never reached {}", owner.name));
            }
            0 | 1 => counts[3] += 1,
            n => {
                counts[4] += 1;
                v.failures.push(format!(
                    "{label} (id {id}) reached {} {n} times",
                    owner.name
                ));
            }
        }
    }
    v.counts = vec![
        ("confirmed replies", counts[0]),
        ("unconfirmed replies (killed or refused)", counts[1]),
        ("confirmed, stored other than once", counts[6]),
        ("confirmed, never reached the visitor", counts[2]),
        (
            "reached the visitor once (or unconfirmed and never)",
            counts[3],
        ),
        ("reached the visitor more than once", counts[4]),
        ("resend/order violations on the wire", counts[5]),
    ];
    v
}

/// 4. A webhook id delivered more than once carried the same body every time.
pub fn webhook_ids_keep_their_body(e: &Evidence) -> Verdict {
    let mut v = Verdict::new("4. a webhook-id always carries the same body");
    let mut bodies: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in e.webhooks {
        if let Some(id) = r.headers.get("webhook-id") {
            bodies.entry(id).or_default().push(&r.body);
        }
    }
    let repeated = bodies.values().filter(|b| b.len() > 1).count();
    for (id, all) in &bodies {
        let distinct: BTreeSet<&&str> = all.iter().collect();
        if distinct.len() > 1 {
            let mut text = format!("{id}: {} deliveries, {} bodies:", all.len(), distinct.len());
            for body in distinct {
                let _ = write!(text, "\n      {body}");
            }
            v.failures.push(text);
        }
    }
    v.counts = vec![
        ("requests received", e.webhooks.len()),
        ("webhook ids", bodies.len()),
        ("ids delivered more than once", repeated),
    ];
    v
}

/// Prints every verdict; returns whether all hold.
pub fn report(verdicts: &[Verdict]) -> bool {
    let mut text = String::from("\n=== exactly-once checker: summary ===\n");
    for verdict in verdicts {
        let status = if verdict.is_ok() { "PASS" } else { "FAIL" };
        let _ = writeln!(text, "[{status}] {}", verdict.name);
        for (what, n) in &verdict.counts {
            let _ = writeln!(text, "      {n:>6}  {what}");
        }
        for failure in verdict.failures.iter().take(12) {
            let _ = writeln!(text, "    ✗ {failure}");
        }
        if verdict.failures.len() > 12 {
            let _ = writeln!(text, "    … and {} more", verdict.failures.len() - 12);
        }
    }
    println!("{text}");
    verdicts.iter().all(Verdict::is_ok)
}
