//! A short, low-rate run of `porch loadtest` (the real binary, as a user runs it): checks that
//! the harness is correct — every message acked, every one delivered to the Slack mock and to an
//! agent's live inbox, results written — not how fast anything is.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

#[test]
fn low_rate_loadtest_acks_and_delivers_everything_and_writes_results() {
    let out = tempfile::tempdir().expect("out dir");
    let live = tempfile::tempdir().expect("live data dir");
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(live.path())
        .args([
            "loadtest",
            "--stairs",
            "200",
            "--warmup",
            "1s",
            "--duration",
            "3s",
        ])
        .args([
            "--sites",
            "2",
            "--visitors",
            "20",
            "--slack-delay",
            "5ms",
            "--agents",
            "1",
        ])
        .args(["--delivery-timeout", "10s", "--out"])
        .arg(out.path())
        .env_remove("PORCH_DATA_DIR")
        .output()
        .expect("run porch loadtest");
    assert!(
        output.status.success(),
        "porch loadtest failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        started.elapsed() < Duration::from_mins(1),
        "the smoke run took too long"
    );
    // The scratch servers are no fresh install: they log no setup token into the output.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("setup token"), "{stderr}");

    let json = std::fs::read_dir(out.path())
        .expect("read out dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a results JSON file");
    let md = json.with_extension("md");
    assert!(md.is_file(), "a Markdown report beside {}", json.display());
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read json")).expect("json");

    assert_eq!(report["arrivals"], "smooth", "the default arrival process");
    let names: Vec<&str> = report["series"]
        .as_array()
        .expect("series")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["echo", "porch", "porch+slack"]);
    for series in report["series"].as_array().expect("series") {
        for stair in series["stairs"].as_array().expect("stairs") {
            let name = &series["name"];
            assert!(stair["sent"].as_u64() > Some(0), "{name}: nothing sent");
            assert_eq!(
                stair["acked"], stair["sent"],
                "{name}: not everything acked"
            );
            assert_eq!(stair["broken"], 0, "{name}: a connection broke");
            // Smooth arrivals release exactly the schedule: 200 a second for warm-up + window.
            assert_eq!(stair["sent"], 800, "{name}: not the scheduled sends");
            assert!(
                stair["send_lag_p99_ms"].as_f64().is_some(),
                "{name}: no send lag"
            );
            assert_eq!(stair["refused"], serde_json::json!({}), "{name}: refusals");
        }
    }
    // The agent with the live inbox open saw every message of the window, in both Porch series.
    for series in &report["series"].as_array().expect("series")[1..] {
        let agents = &series["stairs"][0]["agents"];
        assert!(agents["expected"].as_u64() > Some(0), "{agents}");
        assert_eq!(agents["delivered"], agents["expected"], "{agents}");
    }
    let slack = &report["series"][2]["stairs"][0]["slack"];
    assert!(slack["expected"].as_u64() > Some(0));
    assert_eq!(
        slack["delivered"], slack["expected"],
        "not everything reached Slack"
    );

    // The stairs ran on scratch servers; a data directory without a database is left as it
    // was (recording into a live database is tested in `metrics.rs`).
    let left = std::fs::read_dir(live.path()).expect("live dir").count();
    assert_eq!(left, 0, "the load test wrote into the live data directory");
}

#[test]
fn a_slack_channel_limit_answers_429s_keeps_each_thread_in_order_and_drains_near_the_limit() {
    let out = tempfile::tempdir().expect("out dir");
    let live = tempfile::tempdir().expect("live data dir");
    let output = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(live.path())
        .args([
            "loadtest",
            "--stairs",
            "40",
            "--warmup",
            "1s",
            "--duration",
            "4s",
        ])
        .args([
            "--sites",
            "2",
            "--visitors",
            "8",
            "--no-echo",
            "--slack-only",
        ])
        .args([
            "--slack-delay",
            "5ms",
            "--slack-channel-limit",
            "1/s",
            "--out",
        ])
        .arg(out.path())
        .env_remove("PORCH_DATA_DIR")
        .output()
        .expect("run porch loadtest");
    assert!(
        output.status.success(),
        "porch loadtest failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json = std::fs::read_dir(out.path())
        .expect("read out dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a results JSON file");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read json")).expect("json");
    assert_eq!(report["series"][0]["name"], "porch+slack");
    let stair = &report["series"][0]["stairs"][0];
    assert_eq!(stair["acked"], stair["sent"], "not everything acked");
    let slack = &stair["slack"];
    let limit = &slack["channel_limit"];
    assert_eq!(limit["limit"], "1/s");
    assert_eq!(limit["channels"], 2, "{limit}");
    assert!(limit["rate_limited"].as_u64() > Some(0), "no 429s: {limit}");
    assert_eq!(limit["out_of_order"], 0, "{limit}");
    assert_eq!(limit["duplicates"], 0, "{limit}");
    // 40 messages a second into two channels of one post a second: most must still wait.
    let backlog =
        slack["expected"].as_u64().unwrap_or(0) - slack["delivered"].as_u64().unwrap_or(0);
    assert!(backlog > 100, "no backlog: {slack}");
    // A 4 s window holds at most 4 posts a channel plus a token refilled at its start; a
    // `Retry-After` in whole seconds costs a little under the rate, not half of it.
    let drain = limit["drain_per_channel_per_sec"].as_f64().unwrap_or(0.0);
    assert!((0.6..=1.25).contains(&drain), "drain {drain}/s per channel");
}

#[test]
fn flags_that_need_scratch_servers_are_refused_with_url() {
    let output = Command::new(env!("CARGO_BIN_EXE_porch"))
        .args(["--data-dir", "/nonexistent", "loadtest"])
        .args([
            "--url",
            "ws://127.0.0.1:19949",
            "--site",
            "s_x",
            "--no-echo",
        ])
        .args(["--agents", "2", "--flood", "100"])
        .env_remove("PORCH_DATA_DIR")
        .output()
        .expect("run porch loadtest");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--agents, --flood: only for the load test's own scratch servers"),
        "{stderr}"
    );
}

/// `--url` and `--site` go together: either alone is refused before anything starts, naming
/// the missing half, rather than at the first stair or silently.
#[test]
fn url_and_site_are_refused_one_without_the_other() {
    for (flags, expected) in [
        (
            &["--url", "ws://127.0.0.1:19949"][..],
            "--url needs at least one --site: a site key of that server",
        ),
        (
            &["--site", "s_x"][..],
            "--site names sites of a --url target; scratch servers make their own",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_porch"))
            .args(["--data-dir", "/nonexistent", "loadtest", "--no-echo"])
            .args(flags)
            .env_remove("PORCH_DATA_DIR")
            .output()
            .expect("run porch loadtest");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{flags:?}: {stderr}");
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(
            !stderr.contains("stair"),
            "refused before a stair: {stderr}"
        );
    }
}

/// A stair of 0 messages a second sends nothing: refused as a bad flag (2), before a scratch
/// server starts or a run is recorded.
#[test]
fn a_stair_of_zero_is_a_bad_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_porch"))
        .args([
            "--data-dir",
            "/nonexistent",
            "loadtest",
            "--stairs",
            "1000,0",
        ])
        .env_remove("PORCH_DATA_DIR")
        .output()
        .expect("run porch loadtest");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--stairs"), "{stderr}");
}
