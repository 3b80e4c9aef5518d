#!/usr/bin/env bash
# CPU time of each of the scratch server's threads over 4 s of one stair (perf stat task-clock;
# this VM has no hardware counters), divided by the writes the writer committed in those 4 s
# (porch_writer_writes_total on /metrics, read before and after).
# Usage: clock.sh BIN RATE DIR        e.g. clock.sh /var/tmp/porch-before 15000 clock-before-1
set -u
bin=$1; rate=$2; dir=$3
rm -rf "$dir"; mkdir -p "$dir"
"$bin" loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs "$rate" \
  --no-echo --out "$dir/lt" > "$dir/lt.log" 2>&1 &
lt=$!
pid=""
for _ in $(seq 1 600); do
  sleep 0.1; pid=$(pgrep -f -- "serve --listen" | head -1); [ -n "$pid" ] && break
done
# Start-up, the integrity check and the 2 s warm-up are over by then.
sleep 5
addr=$(ss -ltnp | grep "pid=$pid," | awk '{print $4}' | head -1)
writes() { curl -s "http://$addr/metrics" | awk '/^porch_writer_writes_total/ {print $2}'; }
w0=$(writes)
perf stat --per-thread -e task-clock -p "$pid" -- sleep 4 > "$dir/stat.txt" 2>&1
w1=$(writes)
wait $lt
n=$((w1 - w0))
echo "writes $n" >> "$dir/stat.txt"
# task-clock is in ms; the thread name is what precedes its id.
awk -v w="$n" '/task-clock/ {gsub(",", "", $2); name=$1; sub(/-[0-9]+$/, "", name);
  t[name] += $2 * 1000} END {for (k in t) if (t[k] > 0) printf "%s %.1f µs/write; ", k, t[k] / w}' \
  "$dir/stat.txt"
echo "writes=$n; stair: $(grep -E "^\| $rate " "$dir"/lt/*.md)"
