#!/usr/bin/env bash
# Checkpoints off the writer thread: BEFORE and AFTER builds at 0 agents, stairs 1000 and 5000
# (and 5000 with 20 agents for AFTER), interleaved, three rounds each.
# Usage: measure-ckpt.sh BEFORE_BIN AFTER_BIN OUT_DIR
set -eu
before=$1; after=$2; out=$3
run() { # label binary stair agents round
  "$2" loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
    --stairs "$3" --agents "$4" --out "$out/$1-s$3-a$4-r$5" > "$out/$1-s$3-a$4-r$5.log" 2>&1 || true
}
for round in 1 2 3; do
  for stair in 1000 5000; do
    run before "$before" $stair 0 "$round"
    run after "$after" $stair 0 "$round"
  done
  run after "$after" 5000 20 "$round"
done
