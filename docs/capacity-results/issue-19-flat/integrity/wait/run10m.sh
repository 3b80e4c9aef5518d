#!/usr/bin/env bash
# The 10,000 msg/s stair on 10,000,000 seeded messages, interleaved with an empty database; the
# database's size is read from the scratch directory once the server is up.
set -u
out=${OUT:-/tmp/iw}
for r in 1 2; do
  for c in "new-10m 10000000" "new-0b 0"; do
    set -- $c
    d=$out/$1-$r; rm -rf $d; mkdir -p $d
    /var/tmp/porch-intwait loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
      --stairs 10000 --no-echo --seed-messages $2 --out $d > $d/log.txt 2>&1 &
    lt=$!
    pid=""
    while kill -0 $lt 2>/dev/null; do
      pid=$(pgrep -f -- "serve --listen" | head -1)
      [ -n "$pid" ] && break
      sleep 1
    done
    if [ -n "$pid" ]; then
      dir=$(tr '\0' '\n' < /proc/$pid/cmdline | sed -n '/--data-dir/{n;p}')
      ls -l $dir/porch.db* > $d/db-size.txt 2>&1
    fi
    wait $lt
    echo "$1-$r $(date -u +%H:%M:%S) $(grep -E '^\| 10000' $d/*.md | head -1)"
  done
done
