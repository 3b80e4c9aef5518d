#!/usr/bin/env bash
# Interleaved page-size comparison: clock.sh at RATE, ROUNDS rounds, sizes given.
set -u
rate=$1; rounds=$2; shift 2
for r in $(seq 1 $rounds); do
  for size in "$@"; do
    if [ "$size" = default ]; then unset PORCH_EXP_PAGE_SIZE; else export PORCH_EXP_PAGE_SIZE=$size; fi
    echo "== $size round $r: $(bash /work/main/docs/capacity-results/issue-19-twenty/clock.sh /var/tmp/porch-exp-ps $rate /tmp/ps/$rate-$size-$r | tail -2 | tr '\n' ' ')"
  done
done
