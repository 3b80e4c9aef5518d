#!/usr/bin/env bash
# Interleaved: the 10,000 msg/s stair on 0 and 1,000,000 seeded messages with the loadtest that
# waits for the start-up integrity check (new), and 1,000,000 with the one that does not (old).
set -u
out=${OUT:-/tmp/iw}
for r in 1 2 3; do
  for c in "new-0 /var/tmp/porch-intwait 0" "new-1m /var/tmp/porch-intwait 1000000" "old-1m /var/tmp/porch-seed 1000000"; do
    set -- $c
    d=$out/$1-$r; rm -rf $d; mkdir -p $d
    $2 loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs 10000 \
      --no-echo --seed-messages $3 --out $d > $d/log.txt 2>&1
    echo "$1-$r $(date -u +%H:%M:%S) $(grep -E '^\| 10000' $d/*.md | head -1)"
  done
done
