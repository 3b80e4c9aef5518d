#!/usr/bin/env bash
# perf record of the scratch server during a 10,000 msg/s stair with $1 seeded messages.
set -u
n=$1; bin=/var/tmp/porch-seed
$bin loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs 10000 --no-echo --seed-messages $n --out /tmp/fl/perf-$n > /tmp/fl/perf-$n.log 2>&1 &
lt=$!
pid=""
for i in $(seq 1 600); do
  sleep 0.1
  pid=$(pgrep -f -- "serve --listen" | head -1)
  [ -n "$pid" ] && break
done
sleep 4
perf record -F 999 -g -p $pid -o /tmp/fl/perf-$n.data -- sleep 6 2>&1 | tail -1
wait $lt
grep -E "^\| 10000" /tmp/fl/perf-$n/*.md
