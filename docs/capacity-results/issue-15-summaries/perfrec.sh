#!/usr/bin/env bash
# perf record of the scratch server during a stair with $1 agents, binary $2.
set -u
a=$1; bin=$2
$bin loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs 5000 --agents $a --out /tmp/m9/perf > /tmp/m9/perf-lt.log 2>&1 &
lt=$!
pid=""
for i in $(seq 1 400); do
  sleep 0.1
  pid=$(pgrep -f -- "serve --listen" | head -1)
  [ -n "$pid" ] && break
done
echo "server pid $pid"
# The scratch server seeds, then the stair warms up for 2 s: record the window.
sleep 4
perf record -F 499 -g -p $pid -o /tmp/m9/perf-$a.data -- sleep 6 2>&1 | tail -1
wait $lt
grep -E "^\| 5000" /tmp/m9/perf/*.md | tail -2
