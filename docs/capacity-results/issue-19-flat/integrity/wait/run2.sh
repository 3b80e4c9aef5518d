#!/usr/bin/env bash
# Three more interleaved rounds of the new loadtest, 0 against 1,000,000 seeded messages.
set -u
out=${OUT:-/tmp/iw}
for r in 4 5 6; do
  for c in "new-0 0" "new-1m 1000000"; do
    set -- $c
    d=$out/$1-$r; rm -rf $d; mkdir -p $d
    /var/tmp/porch-intwait loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
      --stairs 10000 --no-echo --seed-messages $2 --out $d > $d/log.txt 2>&1
    echo "$1-$r $(date -u +%H:%M:%S) $(grep -E '^\| 10000' $d/*.md | head -1)"
  done
done
