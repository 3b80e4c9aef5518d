//! What the load test aims at: a scratch Porch or the echo baseline, each a child process of this
//! binary pinned to its own core, seeded on a temporary data directory (never the live
//! database); or a given running server. Also reads a process's CPU time and RSS from `/proc`.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::chat::new_site_key;
use crate::config::SecretKeyConfig;
use crate::integrations::slack::{SlackConfig, SlackIntegration, SlackSecrets};
use crate::integrations::store_secrets;
use crate::metrics::loadtest_report::Machine;
use crate::store::{self, NewIntegration, NewSite};
use crate::values::{SiteLimits, SiteSettings};

use super::scratch::{Registered, Scratch};

/// The brakes of the seeded sites: far above any stair, so a stair measures capacity, not the
/// brakes (the flood site keeps the defaults on purpose).
const HIGH_LIMIT: u32 = 10_000_000;

/// A child server process; it and its scratch directory go when dropped (or when the load test
/// is interrupted, see `scratch`), so no stair leaves one behind.
pub struct ChildServer {
    _registered: Registered,
    pid: u32,
    pub addr: SocketAddr,
}

impl ChildServer {
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

/// The seeded sites of a scratch server.
pub struct Seeded {
    pub sites: Vec<String>,
    /// The flood site, with default brakes, if one was asked for.
    pub flood_site: Option<String>,
    /// A signed-in session cookie value per agent.
    pub agent_sessions: Vec<String>,
}

/// Whether `taskset` can pin processes here; the load test says so in its report.
pub fn has_taskset() -> bool {
    Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Raises a process's (main thread's) CPU priority to nice -19 with `renice`, so other workloads
/// on a shared box (compilers) steal less from the measurement; returns whether that was
/// allowed. CFS, not a real-time class: a real-time server would starve its own writer thread
/// under overload.
pub fn raise_priority(pid: u32) -> bool {
    Command::new("renice")
        .args(["-n", "-19", "-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Pins this process (the load generator) to `core`.
pub fn pin_self(core: &str) -> anyhow::Result<()> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", core, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .context("running taskset")?;
    if !status.success() {
        bail!("taskset could not pin the load generator to core {core}");
    }
    Ok(())
}

fn free_port() -> anyhow::Result<SocketAddr> {
    // Racy in theory (another process may take the port before the child binds it); on a
    // loopback test box that is acceptable, and the child's start-up would fail loudly.
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    listener.local_addr().context("finding a free port")
}

/// Where and how a scratch server runs.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    /// The core it is pinned to, if any.
    pub core: Option<&'a str>,
    /// Started at nice -19.
    pub is_raised: bool,
    /// Where it registers, to be stopped and removed even if the load test is interrupted.
    pub scratch: &'a Scratch,
}

/// The child's command line: `taskset -c CORE nice -n -19 porch …`, without the parts
/// `placement` does not ask for. `nice` before exec so every thread of the child inherits it
/// (renice on a running process reaches one thread only); it is asked for only once renicing
/// the load generator itself succeeded, so raising priority is allowed.
fn command(placement: Placement<'_>) -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("finding the porch binary")?;
    let mut line: Vec<OsString> = Vec::new();
    if let Some(core) = placement.core {
        line.extend(["taskset", "-c", core].map(OsString::from));
    }
    if placement.is_raised {
        line.extend(["nice", "-n", "-19"].map(OsString::from));
    }
    line.push(exe.into_os_string());
    let mut c = Command::new(&line[0]);
    c.args(&line[1..]);
    Ok(c)
}

/// Starts the echo baseline on its own core.
pub fn start_echo(placement: Placement<'_>) -> anyhow::Result<ChildServer> {
    let addr = free_port()?;
    let registered = placement.scratch.server()?;
    let pid = registered
        .spawn(
            command(placement)?
                .args(["loadtest-echo", "--listen", &addr.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::inherit()),
        )
        .context("starting the echo baseline")?;
    let server = ChildServer {
        _registered: registered,
        pid,
        addr,
    };
    wait_for_port(addr)?;
    Ok(server)
}

/// Seeds a fresh scratch data directory and starts Porch on it, on its own core.
pub fn start_porch(
    placement: Placement<'_>,
    sites: u32,
    agents: u32,
    flood: bool,
    origin: &str,
    slack_api_url: Option<&str>,
    history: u32,
) -> anyhow::Result<(ChildServer, Seeded)> {
    let registered = placement.scratch.dir()?;
    let dir = registered
        .dir
        .clone()
        .context("a scratch directory registration has its directory")?;
    let seeded = seed(&dir, sites, agents, flood, origin, slack_api_url.is_some())?;
    if history > 0 {
        seed_history(&dir, history)?;
    }
    let addr = free_port()?;
    let mut cmd = command(placement)?;
    cmd.arg("--data-dir")
        .arg(&dir)
        .args(["serve", "--listen", &addr.to_string(), "--log", "warn"])
        // Every visitor comes from 127.0.0.1; the per-IP brake and connection limit would stop
        // the test, not Porch.
        .args(["--ip-conversations-per-hour", "100000000"])
        .args(["--ip-conversations-burst", "100000000"])
        .args(["--max-connections-per-ip", "0"]);
    if let Some(url) = slack_api_url {
        cmd.args(["--slack-api-url", url]);
    }
    cmd.env_remove("PORCH_DATA_DIR")
        // The seeded secrets are sealed with the scratch directory's own key.
        .env_remove("PORCH_SECRET_KEY")
        .env_remove("PORCH_SECRET_KEY_FILE")
        // The stair reads the scratch server's `/metrics` (`wait_for_integrity_check`): a token
        // or proxy list meant for the live server would make it answer 403.
        .env_remove("PORCH_METRICS_TOKEN")
        .env_remove("PORCH_METRICS_TOKEN_FILE")
        .env_remove("PORCH_TRUSTED_PROXIES")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let pid = registered
        .spawn(&mut cmd)
        .context("starting the scratch server")?;
    let server = ChildServer {
        _registered: registered,
        pid,
        addr,
    };
    wait_until_ready(addr)?;
    wait_for_integrity_check(addr)?;
    Ok((server, seeded))
}

/// An agent account signed in for the whole run; returns its session cookie value.
fn seed_agent(conn: &rusqlite::Connection, i: u32) -> anyhow::Result<String> {
    let email = format!("agent{i}@loadtest.invalid");
    let user = store::insert_user(
        conn,
        &store::NewUser {
            email: &email,
            name: &format!("Agent {i}"),
            role: "agent",
            password_hash: None,
            created_at: 0,
        },
    )?;
    let cookie = crate::accounts::new_secret();
    store::insert_session(
        conn,
        &store::NewSession {
            id_hash: &crate::accounts::hash_secret(&cookie),
            user_id: user,
            csrf_token: "loadtest",
            now: 0,
            expires_at: i64::MAX,
        },
    )?;
    Ok(cookie)
}

/// Creates the schema, the sites, (with Slack) one Slack integration per site, one channel per
/// site, and the agents with their sessions, before the server starts, so no stair pays for
/// set-up.
fn seed(
    dir: &Path,
    sites: u32,
    agents: u32,
    flood: bool,
    origin: &str,
    slack: bool,
) -> anyhow::Result<Seeded> {
    let mut conn = store::open_write_connection(&dir.join("porch.db"), store::Synchronous::Full)
        .context("opening the scratch database")?;
    store::apply_migrations(&mut conn)?;
    let sealing = SecretKeyConfig::default().load(dir)?;
    let add = |name: &str, limit: Option<u32>| -> anyhow::Result<String> {
        let key = new_site_key();
        let mut settings = SiteSettings::new(name.to_owned(), vec![origin.to_owned()]);
        if let Some(limit) = limit {
            settings.limits = SiteLimits {
                visitor_messages_per_minute: limit,
                visitor_burst: limit,
                flood_messages_per_minute: limit,
                flood_conversations_per_minute: limit,
            };
        }
        let site = store::insert_site(
            &conn,
            &NewSite {
                key: &key,
                settings: &settings,
                created_at: 0,
            },
        )?;
        if slack {
            let integration = SlackIntegration {
                config: SlackConfig {
                    team_id: super::slack_mock::TEAM_ID.to_owned(),
                    channel_id: format!("C{:06}", site.id.0),
                    bot_user_id: super::slack_mock::BOT_USER_ID.to_owned(),
                    bot_id: Some(super::slack_mock::BOT_ID.to_owned()),
                },
                secrets: SlackSecrets {
                    bot_token: "xoxb-loadtest".to_owned(),
                    signing_secret: Some("loadtest".to_owned()),
                    app_token: None,
                },
            };
            let id = store::insert_integration(
                &conn,
                &NewIntegration {
                    site_id: site.id,
                    kind: "slack",
                    name: "Slack",
                    config: &serde_json::to_string(&integration.config)?,
                    now: 0,
                },
            )?;
            let secrets = serde_json::to_string(&integration.secrets)?;
            store_secrets(&conn, &sealing.key, id, &secrets)?;
        }
        Ok(key)
    };
    let mut keys = Vec::new();
    for i in 0..sites.max(1) {
        keys.push(add(&format!("Load test {i}"), Some(HIGH_LIMIT))?);
    }
    let flood_site = if flood {
        Some(add("Flood", None)?)
    } else {
        None
    };
    // An admin (who cannot sign in: no password), so the scratch server does not take itself
    // for a fresh install and log a setup token into the load test's output.
    store::insert_user(
        &conn,
        &store::NewUser {
            email: "admin@loadtest.invalid",
            name: "Load test",
            role: "admin",
            password_hash: None,
            created_at: 0,
        },
    )?;
    let agent_sessions = (0..agents)
        .map(|i| seed_agent(&conn, i))
        .collect::<anyhow::Result<_>>()?;
    Ok(Seeded {
        sites: keys,
        flood_site,
        agent_sessions,
    })
}

/// Seeds `messages` messages of history on a site of their own, indexed for search as the
/// background indexer would have, so the stair starts on a database that size with nothing
/// left to catch up on.
fn seed_history(dir: &Path, messages: u32) -> anyhow::Result<()> {
    let mut conn = store::open_write_connection(&dir.join("porch.db"), store::Synchronous::Normal)?;
    let settings = SiteSettings::new("History".to_owned(), vec!["https://history.invalid".into()]);
    let site = store::insert_site(
        &conn,
        &NewSite {
            key: &new_site_key(),
            settings: &settings,
            created_at: 0,
        },
    )?;
    super::search::seed(&mut conn, site.id, messages, 20)?;
    super::search::index_all(&mut conn)?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA optimize;")?;
    Ok(())
}

/// Waits until the child accepts connections (bounded: a child that never listens is an error).
fn wait_for_port(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("the child server did not listen on {addr} within 30 s")
}

/// Waits for `/readyz` to answer 200: an open port alone is the start-up responder, which
/// answers 503 while the database is being migrated.
fn wait_until_ready(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if crate::cli::health::probe(addr, "/readyz", Duration::from_millis(500)).ok() == Some(200)
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("the child server was not ready on {addr} within 30 s")
}

/// The longest the start-up integrity check may take: it reads the whole file, about 1.4 s a
/// million messages here, so ten million take well under this.
const INTEGRITY_CHECK_TIMEOUT: Duration = Duration::from_mins(5);

/// Waits until the server's start-up integrity check has finished (`porch_database_integrity`
/// is no longer -1). The check reads the whole file and holds a read snapshot while it does, so
/// the WAL cannot restart meanwhile: on a seeded database it would otherwise run inside the
/// stair and charge a once-a-day cost to every message (docs/capacity.md, "Flat as data grows?").
fn wait_for_integrity_check(addr: SocketAddr) -> anyhow::Result<()> {
    let deadline = Instant::now() + INTEGRITY_CHECK_TIMEOUT;
    let mut last = String::from("no answer yet");
    while Instant::now() < deadline {
        // A failed request is tried again, as `wait_until_ready` does; a wrong answer is not.
        match crate::cli::health::get(addr, "/metrics", Duration::from_secs(2), 1 << 20) {
            Ok((200, answer)) => match integrity_gauge(&answer) {
                Some(state) if state >= 0.0 => return Ok(()),
                Some(_) => {}
                None => bail!("the child server's /metrics has no porch_database_integrity"),
            },
            Ok((status, _)) => bail!("the child server's /metrics answered {status}"),
            Err(err) => last = format!("{err:#}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!(
        "the child server's start-up integrity check did not finish within 5 minutes (the \
         gauge stays -1 when the check cannot open the file; last error: {last})"
    )
}

/// The `porch_database_integrity` gauge in a `/metrics` answer.
fn integrity_gauge(exposition: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let value = line.strip_prefix("porch_database_integrity ")?;
        value.trim().parse().ok()
    })
}

/// CPU time (user + system) and resident memory of a process, from `/proc`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcSample {
    pub cpu: Duration,
    pub rss_bytes: u64,
}

/// Clock ticks per second of `/proc/PID/stat`: 100 on every Linux this runs on (`USER_HZ` is
/// fixed by the kernel ABI on x86 and arm64).
const TICKS_PER_SEC: u64 = 100;
const PAGE_SIZE: u64 = 4096;

/// Reads `/proc/PID/stat` and `/proc/PID/statm`; `None` if the process is gone.
pub fn sample_proc(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; the fields after it are space-separated.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let resident: u64 = statm.split(' ').nth(1)?.parse().ok()?;
    Some(ProcSample {
        cpu: Duration::from_millis((utime + stime) * 1000 / TICKS_PER_SEC),
        rss_bytes: resident * PAGE_SIZE,
    })
}

/// The machine, for the report: cores, CPU model, kernel.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(|| "unknown".to_owned(), |m| m.trim().to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "unknown".to_owned(), |k| k.trim().to_owned());
    Machine {
        cores: std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        cpu_model,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_integrity_gauge_is_read_from_its_own_line() {
        let exposition = "# HELP porch_database_integrity The check.\n\
                          # TYPE porch_database_integrity gauge\n\
                          porch_database_integrity_checked_at_seconds 1764700000\n\
                          porch_database_integrity -1.0\n";
        assert_eq!(integrity_gauge(exposition), Some(-1.0));
        assert_eq!(integrity_gauge("porch_database_integrity 1.0\n"), Some(1.0));
        assert_eq!(integrity_gauge("porch_up 1\n"), None);
    }

    /// The history lands in the scratch database on a site of its own, already searchable, so
    /// the server starts with nothing for its background indexer to catch up on.
    #[test]
    fn history_is_seeded_on_its_own_site_and_indexed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let seeded = seed(dir.path(), 2, 0, false, "https://shop.example", false).expect("seed");
        seed_history(dir.path(), 250).expect("history");
        let conn = rusqlite::Connection::open(dir.path().join("porch.db")).expect("open");
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).expect(sql) };
        assert_eq!(count("SELECT count(*) FROM messages"), 250);
        assert_eq!(
            count("SELECT count(DISTINCT conversation_id) FROM messages"),
            13
        );
        let history_sites = count(
            "SELECT count(DISTINCT s.id) FROM messages m JOIN conversations c \
             ON c.id = m.conversation_id JOIN sites s ON s.id = c.site_id",
        );
        assert_eq!(history_sites, 1);
        assert_eq!(
            seeded.sites.len(),
            2,
            "the load test's own sites stay empty"
        );
        assert_eq!(
            count("SELECT last_message_id FROM search_watermark"),
            count("SELECT max(id) FROM messages"),
            "indexed to the last message"
        );
    }

    /// The child's command line has `taskset` and `nice` only where the placement asks for them
    /// (`--normal-priority` leaves `nice` out), and always ends in this binary.
    #[test]
    fn a_child_is_pinned_and_raised_only_as_placed() {
        let exe = std::env::current_exe().expect("exe").into_os_string();
        let scratch = Scratch::default();
        let line = |core, is_raised| {
            let c = command(Placement {
                core,
                is_raised,
                scratch: &scratch,
            })
            .expect("command");
            let mut line = vec![c.get_program().to_owned()];
            line.extend(c.get_args().map(ToOwned::to_owned));
            line
        };
        let words = |w: &[&str]| -> Vec<OsString> {
            let mut v: Vec<OsString> = w.iter().map(OsString::from).collect();
            v.push(exe.clone());
            v
        };
        assert_eq!(
            line(Some("0"), true),
            words(&["taskset", "-c", "0", "nice", "-n", "-19"])
        );
        assert_eq!(line(Some("0"), false), words(&["taskset", "-c", "0"]));
        assert_eq!(line(None, true), words(&["nice", "-n", "-19"]));
        assert_eq!(line(None, false), words(&[]));
    }
}
