#!/usr/bin/env bash
# The 10,000 stair with the old tick arrivals for every build (pre18's generator has only those).
set -u
out=/tmp/m9; new=/var/tmp/porch-prof-cedb9b7
common="--sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1"
for r in 1 2 3; do
  for b in pre18 cedb9b7 noindex; do
    bin=/var/tmp/porch-$b; [ $b = cedb9b7 ] && bin=$new
    extra="--arrivals ticks"; [ $b = pre18 ] && extra=""
    d=$out/stair3/$b; mkdir -p $d
    echo "== ticks round $r $b $(date -u +%H:%M:%S)"
    $bin loadtest $common $extra --stairs 10000 --out $d 2>&1 | tail -1
  done
done
echo "== end $(date -u +%H:%M:%S)"
