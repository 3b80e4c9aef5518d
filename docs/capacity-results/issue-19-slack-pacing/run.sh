#!/bin/sh
# Issue #19 item 5, second part: pacing per Slack channel. Three rounds of each series,
# interleaved (one run of every series per round), each run a fresh scratch server.
#   BEFORE: the release binary of main before the change; AFTER: the release binary with it.
# Series: before/after x no limit / `1/s` (the mock's strict one post a second per channel) /
# `1/s+2` (the same with a burst of 2 more, as Slack allows short bursts).
# Usage: nice -n 19 sh run.sh BEFORE AFTER OUTDIR
set -eu
before=$1 after=$2 out=$3
# Everything runs at nice 19 (the machine is shared; its measurements stop processes at nice
# >= 10). The load test raises its own priority with `renice -n -19` and starts its servers with
# `nice -n -19`: a `renice` that refuses and a `nice` that only runs its command keep all of
# them at 19 (the report then says "normal priority (renice -19 not allowed)").
stub=$(mktemp -d)
printf '#!/bin/sh\nexit 1\n' > "$stub/renice"
printf '#!/bin/sh\n[ "$1" = -n ] && shift 2\nexec "$@"\n' > "$stub/nice"
chmod +x "$stub/renice" "$stub/nice"
PATH="$stub:$PATH"
run() { # series binary [limit]
    series=$1 bin=$2 limit=${3:-}
    data=$(mktemp -d)
    mkdir -p "$out/$series"
    /usr/bin/nice -n 19 "$bin" --data-dir "$data" loadtest --sites 64 --visitors 1000 --warmup 2s \
        --duration 8s --stairs 2000 --rounds 1 --slack-delay 50ms --slack-only \
        ${limit:+--slack-channel-limit "$limit"} --out "$out/$series"
    rm -rf "$data"
}
for round in 1 2 3; do
    echo "round $round"
    run before-nolimit "$before"
    run after-nolimit "$after"
    run before-1s "$before" 1/s
    run after-1s "$after" 1/s
    run before-1s+2 "$before" 1/s+2
    run after-1s+2 "$after" 1/s+2
done
