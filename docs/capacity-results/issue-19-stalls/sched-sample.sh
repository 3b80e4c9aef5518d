#!/usr/bin/env bash
# Usage: schedsample.sh OUT — samples every 2 s the per-thread schedstat of the scratch porch server
out=$1; : > "$out"
while true; do
  pid=$(pgrep -f "porch.* serve" | head -1)
  [ -z "$pid" ] && pid=$(pgrep -f "prof.* serve" | head -1)
  if [ -n "$pid" ]; then
    ts=$(date +%s.%N)
    for t in /proc/$pid/task/*; do
      echo "$ts $(basename $t) $(cat $t/comm | tr ' ' _) $(cat $t/schedstat 2>/dev/null)" >> "$out"
    done
  fi
  sleep 2
done
