#!/usr/bin/env bash
# Usage: stall1k.sh BIN OUT RATE SECS: a stair with a trace of the server's fsync/pwrite/pread over 20 ms
bin=$1; out=$2; rate=$3; secs=$4; mkdir -p $out
$bin loadtest --sites 64 --visitors 1000 --warmup 2s --duration ${secs}s --rounds 1 --stairs $rate --out $out/lt > $out/lt.log 2>&1 &
lt=$!
pid=""
for i in $(seq 1 400); do sleep 0.1; pid=$(pgrep -f -- "serve --listen" | head -1); [ -n "$pid" ] && break; done
sleep 2.5
timeout $((secs+6)) taskset -c 1 perf trace -e fsync,fdatasync,pwrite64,pread64 -p $pid --duration 20 -o $out/trace.txt 2>/dev/null
wait $lt
grep -A6 "### porch" $out/lt/*.md | grep "^| [0-9]" | cut -d'|' -f2,5,6,7,10,11,17
