//! The load generator: widget websockets sending on fixed open-loop schedules. Connection `i` of
//! `n` sends message `k` at `t0 + offset_i + k·n/rate`, whatever the server does, and latency is
//! measured from that *intended* time to the ack (coordinated omission corrected, as wrk2 does).
//! Sends are released by the pacer's precise timer (smooth arrivals, the default) or by each
//! connection's millisecond timer (`--arrivals ticks`); either way the lag from the intended
//! time to the actual send is recorded, so a generator that falls behind shows.
//! Runs on one current-thread runtime inside a `LocalSet`, so totals are shared without locks.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;
use std::time::Duration;

use anyhow::Context;
use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep_until, timeout};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::pacer::{self, Arrivals, Slot};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Highest latency recorded: anything slower is clamped and shows as this maximum.
const MAX_LATENCY_US: u64 = 60_000_000;
/// Connections opened at once; more would overflow the server's listen backlog for no gain.
const CONNECT_CONCURRENCY: usize = 256;
/// The message body: about the size of a short chat line.
const BODY: &str = "Hello, I have a question about my order: does it ship to Norway before Friday?";

/// One stair's work for the generator.
pub struct Plan {
    /// `ws://host:port`, loopback only.
    pub ws_base: String,
    pub origin: String,
    /// The echo answers with the message frame itself instead of an `ack`.
    pub is_echo: bool,
    /// Site key of each sending visitor connection.
    pub visitors: Vec<String>,
    /// Site key of each flood connection.
    pub flood: Vec<String>,
    /// Site key of each idle connection.
    pub idle: Vec<String>,
    /// Session cookie value of each agent holding the live inbox open.
    pub agents: Vec<String>,
    pub rate: u32,
    pub flood_rate: u32,
    pub arrivals: Arrivals,
    pub warmup: Duration,
    pub duration: Duration,
    /// How long after the last send acks are still awaited.
    pub grace: Duration,
    /// The server process, for CPU and RSS over the window.
    pub server_pid: Option<u32>,
    /// Keep every ack (see [`Ack`]) for job-lag and fan-out matching.
    pub keep_acks: bool,
    /// For the progress line.
    pub label: String,
}

/// What one group of connections (visitors or flood) saw.
pub struct Totals {
    /// Intended-time ack latency of messages whose intended time fell in the window, in µs.
    pub latency: Histogram<u64>,
    /// Intended time → the send leaving the generator, for the same messages, in µs.
    pub send_lag: Histogram<u64>,
    pub sent: u64,
    pub sent_in_window: u64,
    pub acked: u64,
    pub acked_in_window: u64,
    /// Error frames answering a message, by code.
    pub refused: BTreeMap<String, u64>,
    /// Connections closed or failed mid-stair.
    pub broken: u64,
    pub acks: Vec<Ack>,
}

/// One acknowledged message, kept with `keep_acks`.
pub struct Ack {
    pub id: i64,
    pub intended: Instant,
    pub at: Instant,
    pub in_window: bool,
}

impl Totals {
    fn new() -> anyhow::Result<Self> {
        let histogram =
            || Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).context("creating a histogram");
        Ok(Self {
            latency: histogram()?,
            send_lag: histogram()?,
            sent: 0,
            sent_in_window: 0,
            acked: 0,
            acked_in_window: 0,
            refused: BTreeMap::new(),
            broken: 0,
            acks: Vec::new(),
        })
    }
}

/// The generator's view of one stair.
pub struct Outcome {
    pub visitors: Totals,
    pub flood: Totals,
    /// Server CPU time and RSS at the window's start and end.
    pub server: Option<(super::target::ProcSample, super::target::ProcSample)>,
    /// Server RSS before and after the idle sockets connected.
    pub idle_rss: Option<(u64, u64)>,
    /// What each agent's live inbox received.
    pub agent_events: Vec<super::agents::Events>,
    /// The generator's own CPU time over the window.
    pub loadgen_cpu: Duration,
    pub window_start: Instant,
    pub window_end: Instant,
    pub connect_time: Duration,
}

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    client_id: Option<Cow<'a, str>>,
    #[serde(default)]
    id: Option<i64>,
    #[serde(borrow, default)]
    code: Option<Cow<'a, str>>,
}

/// Runs one stair on the current thread; bounded by warm-up + duration + grace plus connecting.
pub async fn run(plan: Plan) -> anyhow::Result<Outcome> {
    tokio::task::LocalSet::new()
        .run_until(run_local(plan))
        .await
}

async fn run_local(plan: Plan) -> anyhow::Result<Outcome> {
    let rss = |pid: Option<u32>| {
        pid.and_then(super::target::sample_proc)
            .map(|s| s.rss_bytes)
    };
    let connect_started = Instant::now();
    let rss_before_idle = rss(plan.server_pid);
    let idle = connect_all(&plan, &plan.idle).await?;
    let idle_rss = if plan.idle.is_empty() {
        None
    } else {
        // Let the server settle its per-connection allocations before reading RSS.
        tokio::time::sleep(Duration::from_millis(500)).await;
        rss_before_idle.zip(rss(plan.server_pid))
    };
    let visitors = connect_all(&plan, &plan.visitors).await?;
    let flood = connect_all(&plan, &plan.flood).await?;
    let connect_time = connect_started.elapsed();

    let t0 = Instant::now() + Duration::from_millis(100);
    let window_start = t0 + plan.warmup;
    let window_end = window_start + plan.duration;
    let deadline = window_end + plan.grace;
    let http_addr = plan.ws_base.trim_start_matches("ws://");
    let mut agents = Vec::with_capacity(plan.agents.len());
    for session in &plan.agents {
        agents.push(super::agents::watch(http_addr, session, deadline).await?);
    }
    let visitor_totals = Rc::new(RefCell::new(Totals::new()?));
    let flood_totals = Rc::new(RefCell::new(Totals::new()?));
    let window = Window {
        t0,
        start: window_start,
        end: window_end,
        deadline,
    };
    let mut tasks = Vec::new();
    let mut pacers = Vec::new();
    for (group, sockets, rate) in [
        (&visitor_totals, visitors, plan.rate),
        (&flood_totals, flood, plan.flood_rate),
    ] {
        pacers.push(spawn_group(
            &plan, sockets, rate, &window, group, &mut tasks,
        ));
    }
    let progress = tokio::task::spawn_local(progress(
        plan.label.clone(),
        Rc::clone(&visitor_totals),
        t0,
        deadline,
    ));

    sleep_until(window_start).await;
    let server_start = plan.server_pid.and_then(super::target::sample_proc);
    let self_start = super::target::sample_proc(std::process::id());
    sleep_until(window_end).await;
    let server_end = plan.server_pid.and_then(super::target::sample_proc);
    let self_end = super::target::sample_proc(std::process::id());
    for pacer in pacers {
        pacer
            .await
            .context("the pacer stopped")?
            .context("the pacer's timer failed")?;
    }
    for task in tasks {
        let _ = task.await;
    }
    progress.abort();
    // An aborted task drops its totals only once polled again.
    let _ = progress.await;
    let mut agent_events = Vec::with_capacity(agents.len());
    for agent in agents {
        agent_events.push(agent.await.unwrap_or_default());
    }
    let _ = writeln!(std::io::stderr());
    drop(idle);

    let take = |rc: Rc<RefCell<Totals>>| {
        Rc::try_unwrap(rc)
            .map(RefCell::into_inner)
            .map_err(|_| anyhow::anyhow!("a connection task outlived its stair"))
    };
    Ok(Outcome {
        visitors: take(visitor_totals)?,
        flood: take(flood_totals)?,
        server: server_start.zip(server_end),
        idle_rss,
        agent_events,
        loadgen_cpu: self_end
            .zip(self_start)
            .map_or(Duration::ZERO, |(e, s)| e.cpu.saturating_sub(s.cpu)),
        window_start,
        window_end,
        connect_time,
    })
}

/// The stair's times: sending starts at `t0`, counts from `start` to `end`, acks are awaited
/// until `deadline`.
struct Window {
    t0: Instant,
    start: Instant,
    end: Instant,
    deadline: Instant,
}

/// Starts one group's connections (pushed onto `tasks`) and, for smooth arrivals, the pacer
/// releasing their sends (returned).
fn spawn_group(
    plan: &Plan,
    sockets: Vec<Ws>,
    rate: u32,
    window: &Window,
    totals: &Rc<RefCell<Totals>>,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let n = u32::try_from(sockets.len()).unwrap_or(u32::MAX);
    let mut slots = Vec::new();
    for (i, ws) in (0u32..).zip(sockets) {
        let trigger = match plan.arrivals {
            Arrivals::Ticks => Trigger::Timer,
            Arrivals::Smooth => {
                let slot = Rc::new(Slot::default());
                slots.push(Rc::clone(&slot));
                Trigger::Paced(slot)
            }
        };
        tasks.push(tokio::task::spawn_local(drive(
            ws,
            Schedule::new(i, n, rate, window),
            trigger,
            plan.is_echo,
            plan.keep_acks,
            Rc::clone(totals),
        )));
    }
    tokio::task::spawn_local(pacer::pace(slots, rate, window.t0, window.end))
}

/// When a connection sends, and which sends count.
#[derive(Clone, Copy)]
struct Schedule {
    first: Instant,
    period: Duration,
    window_start: Instant,
    window_end: Instant,
    deadline: Instant,
}

impl Schedule {
    fn new(i: u32, n: u32, rate: u32, window: &Window) -> Self {
        let period = if rate == 0 {
            Duration::MAX
        } else {
            Duration::from_secs_f64(f64::from(n) / f64::from(rate))
        };
        let offset = if rate == 0 {
            Duration::ZERO
        } else {
            period.mul_f64(f64::from(i) / f64::from(n.max(1)))
        };
        Self {
            // A group without a rate sends nothing: its first send is already past the window.
            first: if rate == 0 {
                window.end
            } else {
                window.t0 + offset
            },
            period,
            window_start: window.start,
            window_end: window.end,
            deadline: window.deadline,
        }
    }

    fn intended(&self, k: u64) -> Option<Instant> {
        let k = u32::try_from(k).ok()?;
        self.first.checked_add(self.period.checked_mul(k)?)
    }
}

/// What releases a connection's next send.
enum Trigger {
    /// Its own millisecond timer at the intended time.
    Timer,
    /// The pacer (see [`pacer::pace`]).
    Paced(Rc<Slot>),
}

impl Trigger {
    async fn due(&self, k: u64, at: Instant) {
        match self {
            Self::Timer => sleep_until(at).await,
            Self::Paced(slot) => slot.released(k).await,
        }
    }
}

async fn drive(
    mut ws: Ws,
    schedule: Schedule,
    trigger: Trigger,
    is_echo: bool,
    keep_acks: bool,
    totals: Rc<RefCell<Totals>>,
) {
    let mut k: u64 = 0;
    let mut outstanding: u64 = 0;
    let mut frame = String::with_capacity(BODY.len() + 64);
    loop {
        let next = schedule.intended(k).filter(|t| *t < schedule.window_end);
        if next.is_none() && outstanding == 0 {
            break;
        }
        tokio::select! {
            biased;
            () = sleep_until(schedule.deadline) => break,
            received = ws.next() => {
                let Some(Ok(message)) = received else {
                    totals.borrow_mut().broken += 1;
                    return;
                };
                let Message::Text(text) = message else { continue };
                let Ok(reply) = serde_json::from_str::<Reply<'_>>(text.as_str()) else { continue };
                let Some(client_id) = reply.client_id.as_deref() else { continue };
                let Some(intended) = client_id.parse().ok().and_then(|k| schedule.intended(k)) else {
                    continue;
                };
                let is_ack = reply.kind == "ack" || (is_echo && reply.kind == "message");
                let mut t = totals.borrow_mut();
                if is_ack {
                    let now = Instant::now();
                    let in_window = intended >= schedule.window_start;
                    outstanding = outstanding.saturating_sub(1);
                    t.acked += 1;
                    if in_window {
                        t.acked_in_window += 1;
                        let us = u64::try_from((now - intended).as_micros()).unwrap_or(u64::MAX);
                        t.latency.saturating_record(us.clamp(1, MAX_LATENCY_US));
                    }
                    if keep_acks && let Some(id) = reply.id {
                        t.acks.push(Ack { id, intended, at: now, in_window });
                    }
                } else if reply.kind == "error" {
                    outstanding = outstanding.saturating_sub(1);
                    let code = reply.code.as_deref().unwrap_or("unknown").to_owned();
                    *t.refused.entry(code).or_insert(0) += 1;
                }
            }
            () = trigger.due(k, next.unwrap_or(schedule.deadline)), if next.is_some() => {
                frame.clear();
                let _ = std::fmt::Write::write_fmt(
                    &mut frame,
                    format_args!(r#"{{"type":"message","client_id":"{k}","body":"{BODY}"}}"#),
                );
                if ws.send(Message::text(frame.as_str())).await.is_err() {
                    totals.borrow_mut().broken += 1;
                    return;
                }
                let mut t = totals.borrow_mut();
                t.sent += 1;
                if let Some(intended) = next.filter(|n| *n >= schedule.window_start) {
                    t.sent_in_window += 1;
                    let lag = Instant::now().saturating_duration_since(intended);
                    let us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
                    t.send_lag.saturating_record(us.clamp(1, MAX_LATENCY_US));
                }
                outstanding += 1;
                k += 1;
            }
        }
    }
    let _ = ws.close(None).await;
}

/// One line on standard error, rewritten every second.
async fn progress(label: String, totals: Rc<RefCell<Totals>>, t0: Instant, deadline: Instant) {
    let mut last = 0;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let t = totals.borrow();
        let elapsed = Instant::now().saturating_duration_since(t0).as_secs();
        let refused: u64 = t.refused.values().sum();
        let _ = write!(
            std::io::stderr(),
            "\r{label}  {elapsed:>3}s  sent {}  acked {} (+{}/s)  refused {refused}  broken {}    ",
            t.sent,
            t.acked,
            t.acked - last,
            t.broken
        );
        last = t.acked;
    }
}

async fn connect_all(plan: &Plan, sites: &[String]) -> anyhow::Result<Vec<Ws>> {
    let mut sockets = Vec::with_capacity(sites.len());
    for chunk in sites.chunks(CONNECT_CONCURRENCY) {
        let connecting = chunk.iter().map(|site| connect(plan, site));
        for result in futures_util::future::join_all(connecting).await {
            sockets.push(result?);
        }
    }
    Ok(sockets)
}

/// Opens a widget socket and completes `hello` (the echo answers it with itself).
async fn connect(plan: &Plan, site: &str) -> anyhow::Result<Ws> {
    let mut request = format!("{}/widget/ws?site={site}", plan.ws_base)
        .into_client_request()
        .context("building the websocket request")?;
    request.headers_mut().insert(
        "Origin",
        HeaderValue::from_str(&plan.origin).context("the origin is not a header value")?,
    );
    // Small buffers, as the server uses, so thousands of sockets stay cheap on this side too.
    let config = WebSocketConfig::default()
        .read_buffer_size(4096)
        .write_buffer_size(0);
    let (mut ws, _) = timeout(
        Duration::from_secs(10),
        tokio_tungstenite::connect_async_with_config(request, Some(config), true),
    )
    .await
    .context("connecting took over 10 s")?
    .context("connecting a widget socket")?;
    ws.send(Message::text(r#"{"type":"hello","v":1}"#))
        .await
        .context("sending hello")?;
    loop {
        let frame = timeout(Duration::from_secs(10), ws.next())
            .await
            .context("no welcome within 10 s")?;
        match frame {
            Some(Ok(Message::Text(text))) => {
                let reply: Reply<'_> =
                    serde_json::from_str(text.as_str()).context("a reply that is not JSON")?;
                match reply.kind.as_ref() {
                    "welcome" | "hello" => return Ok(ws),
                    "error" => anyhow::bail!(
                        "the server refused the visitor: {}",
                        reply.code.as_deref().unwrap_or("unknown")
                    ),
                    _ => {}
                }
            }
            Some(Ok(_)) => {}
            Some(Err(err)) => return Err(err).context("reading welcome"),
            None => anyhow::bail!("the server closed the socket before welcome"),
        }
    }
}
