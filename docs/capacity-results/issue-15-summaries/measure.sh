#!/usr/bin/env bash
# Issue #15's bar, interleaved: the build before the live inbox's summaries (`before`) with 20
# agents, and the build with them (`after`) with 0 and 20 agents, three rounds each.
# Usage: measure.sh BEFORE_BIN AFTER_BIN OUT_DIR
set -eu
before=$1; after=$2; out=$3
run() { # label binary agents round
  "$2" loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
    --stairs 5000 --agents "$3" --out "$out/$1-agents$3-r$4" > "$out/$1-agents$3-r$4.log" 2>&1 || true
}
for round in 1 2 3; do
  run before "$before" 20 "$round"
  run after "$after" 0 "$round"
  run after "$after" 20 "$round"
done
