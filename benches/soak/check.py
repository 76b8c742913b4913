#!/usr/bin/env python3
"""Judge a soak run: RSS after warm-up within +-10% of its median, descriptors back to the baseline after the
load, exactly one audit record per request, no error beyond what the load generator caused. Prints a Markdown
report (for RELIABILITY.md) and exits 1 if any check fails.

usage: check.py WORK_DIR WARMUP_FRACTION CONNECTIONS
  WORK_DIR holds samples.jsonl, baseline.json, after.json, oha-*.json and log/audit.jsonl
"""
import collections
import glob
import json
import statistics
import sys

work, warmup, connections = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
samples = [json.loads(line) for line in open(f"{work}/samples.jsonl") if line.strip()]
baseline = json.load(open(f"{work}/baseline.json"))
after = json.load(open(f"{work}/after.json"))
load = [json.load(open(p)) for p in sorted(glob.glob(f"{work}/oha-*.json"))]

sent = sum(sum(r["statusCodeDistribution"].values()) + sum(r["errorDistribution"].values()) for r in load)
ok = sum(r["statusCodeDistribution"].get("200", 0) for r in load)
codes = collections.Counter()
errors = collections.Counter()
for r in load:
    codes.update(r["statusCodeDistribution"])
    errors.update(r["errorDistribution"])
seconds = max(r["summary"]["total"] for r in load)
rps = sum(r["summary"]["requestsPerSec"] for r in load)

audit_kinds = collections.Counter()
decisions = collections.Counter()
for line in open(f"{work}/log/audit.jsonl"):
    rec = json.loads(line)
    audit_kinds[rec.get("kind")] += 1
    if rec.get("kind") == "https":
        decisions[(rec.get("decision"), rec.get("status"))] += 1
intercepted = audit_kinds.get("https", 0)

loaded = [s for s in samples if s["connections"] + s["tunnels"] > 0]
steady = loaded[int(len(loaded) * warmup):] if loaded else []
rss = [s["rss_kib"] for s in steady]
med = statistics.median(rss) if rss else 0
low, high = (min(rss), max(rss)) if rss else (0, 0)
peak_fds = max((s["fds"] for s in samples), default=0)
peak_conn = max((s["connections"] for s in samples), default=0)
peak_tun = max((s["tunnels"] for s in samples), default=0)

checks = [
    (f"RSS after warm-up within +-10% of its median ({med / 1024:.0f} MiB: {low / 1024:.0f}-{high / 1024:.0f} MiB)",
     bool(rss) and low >= med * 0.9 and high <= med * 1.1),
    (f"descriptors back to the baseline after the load ({baseline['fds']} before, {after['fds']} after, "
     f"{peak_fds} at the peak)", after["fds"] <= baseline["fds"] + 2),
    (f"open connections and tunnels back to zero (after: {after['connections']} and {after['tunnels']})",
     after["connections"] == 0 and after["tunnels"] == 0),
    (f"exactly one audit record per request ({intercepted:,} intercepted records, {sent:,} requests sent)",
     intercepted == sent),
    (f"every request answered 200 ({ok:,} of {sent:,}; other codes {dict(codes)}; load-generator errors "
     f"{dict(errors)})", ok == sent and not errors),
]
print(f"- requests: {sent:,} intercepted HTTPS requests, with credential injection and masking, from "
      f"{len(load)} sandboxes at {connections:,} connections in all, "
      f"in {seconds:.0f} s ({rps:,.0f} req/s)")
print(f"- peak: {peak_conn} plain client connections and {peak_tun} intercepted ones open, {peak_fds} descriptors, "
      f"{max((s['threads'] for s in samples), default=0)} threads")
print(f"- RSS: baseline {baseline['rss_kib'] / 1024:.0f} MiB, steady {med / 1024:.0f} MiB, after the load "
      f"{after['rss_kib'] / 1024:.0f} MiB")
print(f"- audit records by kind: {dict(audit_kinds)}")
failed = 0
for text, good in checks:
    print(f"- {'PASS' if good else 'FAIL'}: {text}")
    failed += not good
sys.exit(1 if failed else 0)
