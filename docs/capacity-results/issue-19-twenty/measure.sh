#!/usr/bin/env bash
# Interleaved rounds of before/after builds: the 30,000 stair (saturation: what is acknowledged
# per second when more is offered) and the 20,000 stair (issue #19 item 1's gate).
# Usage: measure.sh OUT ROUNDS STAIRS before=BIN after=BIN
set -u
out=$1; rounds=$2; stairs=$3; shift 3
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for pair in "$@"; do
    name=${pair%%=*}; bin=${pair#*=}
    for s in ${stairs//,/ }; do
      dir="$out/$name-$s-$r"
      "$bin" loadtest --sites 64 --visitors 1000 --warmup 2s --duration 8s --rounds 1 \
        --stairs "$s" --no-echo --out "$dir" > "$dir.log" 2>&1
      printf '%-7s %6s r%s %s\n' "$name" "$s" "$r" "$(grep -E "^\| $s " "$dir"/*.md | tail -1)"
    done
  done
done
