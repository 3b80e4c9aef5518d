#!/usr/bin/env bash
# Usage: m15.sh BIN OUT — issue #15's bar: 5,000 msg/s with 0 and 20 agents, interleaved, 3 rounds
set -u
bin=$1; out=$2; mkdir -p $out
for round in 1 2 3; do
  for a in 0 20; do
    $bin loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
      --stairs 5000 --agents $a --out "$out/agents$a-r$round" > "$out/agents$a-r$round.log" 2>&1 || true
  done
done
