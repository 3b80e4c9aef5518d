#!/usr/bin/env bash
# The 20,000 and 30,000 stairs with PORCH_SYNCHRONOUS full and normal, interleaved, two rounds.
# Usage: run.sh BIN OUT
set -u
bin=$1; out=$2
for r in 1 2; do for s in full normal; do
  d="$out/sync-$s-$r"
  PORCH_SYNCHRONOUS=$s "$bin" loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s \
    --rounds 1 --stairs 20000,30000 --no-echo --out "$d" > "$d.log" 2>&1
  echo "$s r$r"; grep -E "^\| (20000|30000) " "$d"/*.md
done; done
