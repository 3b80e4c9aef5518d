#!/usr/bin/env bash
# The agent's read paths on a database holding N messages (issue #19 item 6): seeds a scratch
# database with `porch loadtest-search` (which also times search on it), then serves it and times,
# 20 times each after one untimed request, the inbox list (first page, each order, a tab, the
# second page), a conversation page and the API's listing and messages, over loopback with curl.
# Usage: read-paths.sh PORCH_BINARY MESSAGES OUT_DIR
set -euo pipefail
bin=$1; n=$2; out=$3
mkdir -p "$out"
dir=$(mktemp -d /tmp/porch-read-paths-XXXXXX)
server=""
trap 'kill $server 2>/dev/null; rm -rf "$dir"' EXIT
"$bin" loadtest-search --data-dir /nonexistent --messages "$n" --scratch "$dir" --repeat 20 \
  > "$out/search.md"
mv "$dir/search-bench.db" "$dir/porch.db"
ls -l "$dir"/porch.db* > "$out/db-size.txt"
echo "correct horse battery staple" |
  "$bin" --data-dir "$dir" user add --email a@x.test --name Ann --role admin --password-stdin
token=$("$bin" --data-dir "$dir" token add --user a@x.test | tail -1)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
"$bin" --data-dir "$dir" serve --listen 127.0.0.1:$port --log warn > "$out/serve.log" 2>&1 &
server=$!
until curl -sf "$base/readyz" > /dev/null; do sleep 0.2; done
# The start-up integrity check reads the whole file: time the pages after it, as the stairs are.
until curl -s "$base/metrics" | grep -Eq '^porch_database_integrity (0|1)'; do sleep 0.5; done
jar=$dir/jar
csrf=$(curl -s -c "$jar" -b "$jar" "$base/login" | grep -o 'name="csrf" value="[^"]*"' | sed 's/.*value="//;s/"//')
curl -s -c "$jar" -b "$jar" -o /dev/null -H "Origin: $base" --data-urlencode "csrf=$csrf" \
  --data-urlencode "next=/inbox" --data-urlencode "email=a@x.test" \
  --data-urlencode "password=correct horse battery staple" "$base/login"
sql() { python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$dir/porch.db" "$1"; }
conversations=$(sql "SELECT count(*) FROM conversations")
middle=$(sql "SELECT id FROM conversations ORDER BY id LIMIT 1 OFFSET $((conversations / 2))")
second=$(curl -s -b "$jar" "$base/inbox" | grep -o 'href="/inbox?[^"]*cursor=[^"]*"' | head -1 | sed 's/href="//;s/"$//;s/&amp;/\&/g')
time_it() { # label, then curl arguments
  local label=$1; shift
  curl -s -o /dev/null "$@"
  for _ in $(seq 20); do curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' "$@"; done |
    python3 -c "
import sys
rows = [l.split() for l in sys.stdin]
codes = sorted({r[0] for r in rows})
size = max(int(r[2]) for r in rows)
ms = sorted(float(r[1]) * 1000 for r in rows)
print(f'| $label | {\",\".join(codes)} | {size} | {ms[len(ms)//2]:.1f} | {ms[int(len(ms)*0.95)-1]:.1f} | {ms[-1]:.1f} |')"
}
{
  echo "$n messages, $conversations conversations; $(date -u +%FT%TZ); $(uname -r)"
  echo
  echo "Second page: $second"
  echo
  echo "| request | status | bytes | p50 ms | p95 ms | max ms |"
  echo "|---|---|---|---|---|---|"
  time_it "inbox, open, newest activity" -b "$jar" "$base/inbox"
  time_it "inbox, open, longest waiting" -b "$jar" "$base/inbox?sort=waiting"
  time_it "inbox, unassigned tab" -b "$jar" "$base/inbox?filter=unassigned"
  time_it "inbox, second page" -b "$jar" "$base$second"
  time_it "conversation page (20 messages)" -b "$jar" "$base/conversations/$middle"
  time_it "API listing, 200" -H "Authorization: Bearer $token" "$base/api/v1/conversations?limit=200"
  time_it "API messages of one conversation" -H "Authorization: Bearer $token" "$base/api/v1/conversations/$middle/messages"
} > "$out/read-paths.md"
cat "$out/read-paths.md"
