#!/usr/bin/env bash
# Session 9, after the fixes: agents 0/20 at 5,000 and the 10,000 stair against pre-0018.
set -u
out=/tmp/m9; new=/var/tmp/porch-prof-cedb9b7
common="--sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1"
for r in 1 2 3; do
  for a in 0 20; do
    d=$out/fanout2/agents$a; mkdir -p $d
    echo "== round $r agents=$a $(date -u +%H:%M:%S)"
    $new loadtest $common --stairs 5000 --agents $a --out $d 2>&1 | tail -1
  done
done
for r in 1 2 3; do
  for b in pre18 cedb9b7 noindex; do
    bin=/var/tmp/porch-$b; [ $b = cedb9b7 ] && bin=$new
    [ -x $bin ] || continue
    d=$out/stair2/$b; mkdir -p $d
    echo "== stair round $r $b $(date -u +%H:%M:%S)"
    $bin loadtest $common --stairs 10000 --out $d 2>&1 | tail -1
  done
done
echo "== end $(date -u +%H:%M:%S)"
