#!/usr/bin/env bash
# Session 9 measurements. $1 = which: fanout | attribution
set -u
out=/tmp/m9; mkdir -p $out
common="--sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1"
case "$1" in
fanout)
  for r in 1 2 3; do
    for b in new fanout; do for a in 0 20; do
      [ "$b" = new ] && [ "$a" = 0 ] && continue
      d=$out/fanout/$b-agents$a; mkdir -p $d
      echo "== round $r $b agents=$a $(date -u +%H:%M:%S)"
      /var/tmp/porch-$b loadtest $common --stairs 5000 --agents $a --out $d 2>&1 | tail -3
    done; done
  done;;
attribution)
  for r in 1 2 3; do
    for b in pre18 noindex fanout; do
      d=$out/stair/$b; mkdir -p $d
      echo "== round $r $b $(date -u +%H:%M:%S)"
      /var/tmp/porch-$b loadtest $common --stairs 10000 --out $d 2>&1 | tail -3
    done
  done;;
esac
echo "== end $(date -u +%H:%M:%S)"
