#!/usr/bin/env bash
# What visitors see while an admin fixes an integration with a large blocked backlog: a Porch
# serving on core 0 holds JOBS blocked Slack jobs of one broken integration (site A, seeded as
# resume.py seeds them, for messages that no longer exist, so each job ends at once with
# "nothing to deliver" and the runner's own bookkeeping is all the drain costs); `porch loadtest`
# on core 1 sends 1,000 msg/s to site B for 40 s; 15 s in, the admin saves the integration's
# settings (`PUT /api/v1/integrations/{id}/slack`), timed with curl. With FIX=none the PUT is
# skipped (the baseline). The server's per-IP brakes and site B's are lifted, as the load test's
# scratch servers have them. Writes loadtest-*.json/md, put.txt and serve.log into OUT_DIR.
# Usage: live.sh PORCH_BINARY OUT_DIR [JOBS]
set -euo pipefail
bin=$1; out=$2; jobs=${3:-1000000}; fix=${FIX:-put}
mkdir -p "$out"
dir=$(mktemp -d /tmp/porch-resume-live-XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$dir"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); mock_port=$(free_port)
base=http://127.0.0.1:$port
origin=https://loadtest.example
"$bin" slack-mock --listen 127.0.0.1:$mock_port --delay 5ms > "$out/mock.log" 2>&1 &
pids+=($!)
"$bin" --data-dir "$dir" migrate > /dev/null
site_a=$("$bin" --data-dir "$dir" site add --name A --origin $origin --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
site_b=$("$bin" --data-dir "$dir" site add --name B --origin $origin --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
echo "correct horse battery staple" |
  "$bin" --data-dir "$dir" user add --email a@x.test --name Ann --role admin --password-stdin > /dev/null
token=$("$bin" --data-dir "$dir" token add --user a@x.test | tail -1)
serve() {
  taskset -c 0 "$bin" --data-dir "$dir" serve --listen 127.0.0.1:$port --log warn \
    --slack-api-url "http://127.0.0.1:$mock_port/api" --max-connections-per-ip 0 \
    --ip-conversations-per-hour 100000000 --ip-conversations-burst 100000000 \
    >> "$out/serve.log" 2>&1 &
  server=$!
  until curl -sf "$base/readyz" > /dev/null; do sleep 0.2; done
  until curl -s "$base/metrics" | grep -Eq '^porch_database_integrity (0|1)'; do sleep 0.5; done
}
api() { curl -s -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
settings='{"bot_token": "xoxb-live", "channel_id": "C1", "signing_secret": "s"}'
serve
integration=$(api -X POST -d "$settings" "$base/api/v1/sites/$site_a/integrations/slack" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
kill $server; wait $server || true
python3 - "$dir/porch.db" "$integration" "$jobs" <<'PY'
import json, sqlite3, sys
path, integration, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(path, isolation_level=None)
db.execute("BEGIN")
db.executemany(
    "INSERT INTO jobs (lane, kind, args, integration_id, state, order_key, rate_key,"
    " max_attempts, run_at, created_at)"
    " VALUES ('chat', 'slack.post', ?, ?, 'blocked', ?, 'slack:C1', 25, 0, 0)",
    ((json.dumps({"message_id": 10**9 + i}), integration, f"conv:{i // 10}:int:{integration}")
     for i in range(jobs)))
db.execute("UPDATE integrations SET status = 'broken', last_error = 'token_revoked' WHERE id = ?",
           (integration,))
# Site B's brakes far above the load, as the load test's own scratch sites have them.
db.execute("UPDATE sites SET visitor_messages_per_minute = 10000000, visitor_burst = 10000000,"
           " flood_messages_per_minute = 10000000, flood_conversations_per_minute = 10000000"
           " WHERE name = 'B'")
db.execute("COMMIT")
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
PY
serve
pids+=($server)
{ echo "$(date -u +%FT%TZ) $(uname -r) $bin jobs=$jobs fix=$fix"; } > "$out/put.txt"
taskset -c 1 "$bin" loadtest --url "ws://127.0.0.1:$port" --site "$site_b" --origin $origin \
  --stairs 1000 --warmup 5s --duration 40s --no-echo --out "$out" > "$out/loadtest.log" 2>&1 &
load=$!
sleep 20
if [ "$fix" = put ]; then
  api -o "$out/put-answer.json" -w 'PUT %{http_code} in %{time_total} s\n' -X PUT -d "$settings" \
    "$base/api/v1/integrations/$integration/slack" >> "$out/put.txt"
fi
wait $load
{
  echo "blocked left: $(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM jobs WHERE state = '"'blocked'"'").fetchone()[0])' "$dir/porch.db")"
  curl -s "$base/metrics" | grep -E '^porch_(jobs_in_memory|writer_reruns_total) '
} >> "$out/put.txt"
