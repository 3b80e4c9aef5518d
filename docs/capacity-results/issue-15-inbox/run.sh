#!/usr/bin/env bash
set -u
export PORCH_DATA_DIR=/nonexistent
common=(--sites 64 --visitors 1000 --warmup 2s --duration 8s)
for round in 1 2 3; do
  for build in new final; do
    mkdir -p /tmp/bench/$build/plainB-$round
    echo "== $(date +%T) round $round $build plain 10000"
    /var/tmp/porch-$build loadtest "${common[@]}" --stairs 10000 --out /tmp/bench/$build/plainB-$round > /tmp/bench/$build/plainB-$round/stdout 2>&1
  done
done
echo "== $(date +%T) done"
