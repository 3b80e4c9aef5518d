#!/usr/bin/env bash
# perf record (DWARF) of the scratch server during one stair. $1 binary, $2 rate, $3 tag
set -u
bin=$1; rate=$2; tag=$3
out=/tmp/prof/$tag; rm -rf $out; mkdir -p $out
$bin loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs $rate --no-echo --out $out/lt > $out/lt.log 2>&1 &
lt=$!
pid=""
for i in $(seq 1 600); do
  sleep 0.1
  pid=$(pgrep -f -- "serve --listen" | head -1)
  [ -n "$pid" ] && break
done
# wait for the stair to start: warmup begins after integrity check; give it time
sleep 5
perf record -F 1999 --call-graph dwarf,32768 -p $pid -o $out/perf.data -- sleep 4 > $out/perf.log 2>&1
wait $lt
grep -E "^\| $rate" $out/lt/*.md | tail -2
perf script -i $out/perf.data 2>/dev/null > $out/perf.txt
ls -la $out/perf.txt
