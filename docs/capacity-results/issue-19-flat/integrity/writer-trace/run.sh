#!/usr/bin/env bash
# $1 = label, $2 = seed, $3 = indexer on|off
set -u
lab=$1; n=$2; idx=$3
out=/tmp/e6/$lab; rm -rf $out; mkdir -p $out
env PORCH_EXP_TRACE=$out/trace.txt ${EXTRA:-} $( [ "$idx" = off ] && echo PORCH_EXP_NO_INDEXER=1 ) \
  /var/tmp/porch-exp6 loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 --stairs 10000 --no-echo --seed-messages $n --out $out > $out/log.txt 2>&1
grep -E "^\| 10000" $out/*.md | head -1
