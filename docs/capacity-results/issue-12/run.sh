#!/usr/bin/env bash
set -u
export PORCH_DATA_DIR=/nonexistent
common=(--sites 64 --visitors 1000 --warmup 2s --duration 8s)
for round in 1 2 3; do
  for build in base new; do
    mkdir -p /tmp/bench/$build/plain-$round /tmp/bench/$build/slack-$round
    echo "== $(date +%T) round $round $build plain 10000" 
    /var/tmp/porch-$build loadtest "${common[@]}" --stairs 10000 --out /tmp/bench/$build/plain-$round > /tmp/bench/$build/plain-$round/stdout 2>&1
    echo "== $(date +%T) round $round $build slack 5000"
    /var/tmp/porch-$build loadtest "${common[@]}" --stairs 5000 --slack-delay 50ms --slack-only --out /tmp/bench/$build/slack-$round > /tmp/bench/$build/slack-$round/stdout 2>&1
  done
done
echo "== $(date +%T) done"
