#!/usr/bin/env python3
"""Memory and drain of Porch restarted on a large Slack backlog (issue #19 item 5).

Seeds a data directory once: a site posting to Slack channel C1 of `porch slack-mock`, one real
visitor message posted through it, then (Porch stopped) that post's job copied N times as queued
jobs, each in an order queue of its own, all on the channel's rate key. Then, for each binary
given, starts `porch serve` on a fresh copy of that database and samples its RSS once a second
for DURATION, with the jobs delivered so far.

    python3 -m venv /var/tmp/bench-venv && /var/tmp/bench-venv/bin/pip install websockets
    /var/tmp/bench-venv/bin/python restart-backlog.py --seed-with BEFORE --jobs 1000000 \
        --limit 1/s --duration 60 BEFORE AFTER

Seed with the older binary: a newer one migrates the copied database forward when it starts.
Loopback only; every process it starts is stopped at the end.
"""

import argparse
import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import websockets

ORIGIN = "https://shop.example"
SERVE = "127.0.0.1:9310"
MOCK = "127.0.0.1:9311"


def cli(binary, data, *args, stdin=None):
    return subprocess.run([binary, "--data-dir", str(data), *args], input=stdin,
                          capture_output=True, text=True, check=True).stdout


def serve(binary, data):
    return subprocess.Popen(
        [binary, "--data-dir", str(data), "serve", "--listen", SERVE,
         "--slack-api-url", f"http://{MOCK}/api", "--public-url", f"http://{SERVE}"],
        stdout=subprocess.DEVNULL, stderr=open(data / "serve.log", "ab"))


def wait_ready(timeout=600):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with urllib.request.urlopen(f"http://{SERVE}/readyz", timeout=1) as answer:
                if answer.status == 200:
                    return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("porch did not become ready")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def api(token, method, path, body):
    request = urllib.request.Request(f"http://{SERVE}{path}", method=method,
                                     data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status


async def visitor_says(site, text):
    url = f"ws://{SERVE}/widget/ws?site={site}"
    async with websockets.connect(url, origin=ORIGIN) as ws:
        await ws.send(json.dumps({"type": "hello", "v": 1, "last_id": 0}))
        while json.loads(await ws.recv())["type"] != "welcome":
            pass
        await ws.send(json.dumps({"type": "message", "client_id": "seed-1", "body": text}))
        while json.loads(await ws.recv())["type"] != "ack":
            pass


def done_jobs(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        return conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()[0]


def seed(binary, data, jobs):
    site = json.loads(cli(binary, data, "site", "add", "--name", "Shop", "--origin", ORIGIN,
                          "--json"))["key"]
    cli(binary, data, "user", "add", "--email", "admin@shop.example", "--name", "Admin",
        "--role", "admin")
    token = cli(binary, data, "token", "add", "--user", "admin@shop.example").split()[-1]
    server = serve(binary, data)
    try:
        wait_ready()
        status = api(token, "POST", f"/api/v1/sites/{site}/integrations/slack",
                     {"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": "s"})
        assert status == 201, status
        asyncio.run(visitor_says(site, "hello from the backlog"))
        deadline = time.monotonic() + 30
        while done_jobs(data / "porch.db") < 1:
            assert time.monotonic() < deadline, "the first post never arrived"
            time.sleep(0.1)
    finally:
        stop(server)
    with sqlite3.connect(data / "porch.db") as conn:
        conn.execute(
            "WITH RECURSIVE copy (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM copy WHERE n < ?) "
            "INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key, "
            "                  max_attempts, run_at, created_at) "
            "SELECT lane, kind, args, integration_id, 'queued', order_key || ':copy:' || n, "
            "       rate_key, max_attempts, 0, created_at FROM jobs, copy", (jobs,))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def rss_kib(pid):
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.split()[0] if value.split() else "0"
    return int(fields.get("VmRSS", 0)), int(fields.get("VmHWM", 0))


def run(binary, seeded, duration):
    with tempfile.TemporaryDirectory(prefix="porch-backlog-run-") as tmp:
        data = Path(tmp)
        shutil.copytree(seeded, data, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("serve.log", "*.lock", "*-shm"))
        started = time.monotonic()
        server = serve(binary, data)
        try:
            ready_s = wait_ready()
            samples = []
            for second in range(1, duration + 1):
                time.sleep(max(0.0, started + ready_s + second - time.monotonic()))
                rss, peak = rss_kib(server.pid)
                samples.append((second, rss, peak, done_jobs(data / "porch.db")))
        finally:
            stop(server)
        return ready_s, samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--seed-with", required=True)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--limit", help="the mock's per-channel limit, such as 1/s")
    parser.add_argument("--duration", type=int, default=60)
    args = parser.parse_args()
    mock_args = [args.seed_with, "slack-mock", "--listen", MOCK, "--delay", "50ms"]
    if args.limit:
        mock_args += ["--channel-limit", args.limit]
    mock = subprocess.Popen(mock_args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seeded = Path(tempfile.mkdtemp(prefix="porch-backlog-seed-"))
    try:
        time.sleep(0.5)
        begun = time.monotonic()
        seed(args.seed_with, seeded, args.jobs)
        print(f"# seeded {args.jobs} queued jobs on one channel in "
              f"{time.monotonic() - begun:.1f} s; database "
              f"{(seeded / 'porch.db').stat().st_size / 1e6:.0f} MB; mock limit {args.limit}")
        for binary in args.binaries:
            ready_s, samples = run(binary, seeded, args.duration)
            print(f"\n## {binary}: ready after {ready_s:.2f} s")
            print("second rss_mb peak_rss_mb delivered")
            for second, rss, peak, done in samples:
                print(f"{second} {rss / 1024:.1f} {peak / 1024:.1f} {done - 1}")
    finally:
        mock.terminate()
        mock.wait(timeout=10)
        shutil.rmtree(seeded, ignore_errors=True)


if __name__ == "__main__":
    main()
