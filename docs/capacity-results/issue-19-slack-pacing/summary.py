#!/usr/bin/env python3
"""Medians per series from the load test's JSON results in OUTDIR/<series>/loadtest-*.json.

Usage: python3 summary.py OUTDIR (this folder, or run.sh's OUTDIR)."""
import glob, json, os, statistics, sys

out = sys.argv[1]
for series in sorted(os.listdir(out)):
    files = sorted(glob.glob(os.path.join(out, series, "loadtest-*.json")))
    if not files:
        continue
    rows = []
    for f in files:
        d = json.load(open(f))
        s = [x for x in d["series"] if x["name"] == "porch+slack"][0]["stairs"][0]
        sl = s["slack"] or {}
        cl = sl.get("channel_limit") or {}
        rows.append(dict(
            file=os.path.basename(f), p99=s["p99_ms"], p50=s["p50_ms"], achieved=s["achieved"],
            cpu=s["server_cpu_pct"], rss=s["server_rss_mb"],
            delivered=sl.get("delivered"), expected=sl.get("expected"),
            drain=cl.get("drain_per_channel_per_sec"), r429=cl.get("rate_limited"),
            ooo=cl.get("out_of_order"), dup=cl.get("duplicates"), passed=s["passed"]))
    print(f"## {series}")
    for r in rows:
        print("  ", r)
    med = lambda k: statistics.median([r[k] for r in rows if r[k] is not None] or [float('nan')])
    print(f"   median p99 {med('p99'):.1f}  p50 {med('p50'):.1f}  drain {med('drain')}  429s {med('r429')}"
          f"  backlog {statistics.median([r['expected']-r['delivered'] for r in rows if r['expected'] is not None] or [float('nan')])}")
