#!/usr/bin/env bash
# The resume's write lock (resume.py, two rounds) and what visitors see during a resume of
# 1,000,000 jobs inside a serving Porch (live.sh): `before` and `after` interleaved, two rounds
# each, and one round of each with no resume (FIX=none) as the baseline.
# Usage: measure.sh BEFORE_BINARY AFTER_BINARY
set -euo pipefail
before=$1; after=$2; here=$(cd "$(dirname "$0")" && pwd)
for round in 1 2; do
  { date -u +%FT%TZ; uname -r; python3 "$here/resume.py" "$after"; } > "$here/probe-$round.txt"
done
for round in 1 2; do
  "$here/live.sh" "$before" "$here/live/before-$round"
  "$here/live.sh" "$after" "$here/live/after-$round"
done
FIX=none "$here/live.sh" "$before" "$here/live/before-none"
FIX=none "$here/live.sh" "$after" "$here/live/after-none"
