#!/usr/bin/env python3
"""The load harness's table: oha JSON results -> markdown, each figure as a ratio to the direct connection of
the same round, and cordon's ratio to squid in the same scenario and round.

A run is several rounds of every scenario, one after the other, so that each scenario meets the machine's
changing weather more than once. Figures are medians over the rounds; a ratio is the median of the
per-round ratios, with their range in brackets.

usage: summarize.py RESULTS_DIR DURATION CONNECTIONS
Results are RESULTS_DIR/NAME.ROUND.json (oha --output-format json) and RESULTS_DIR/idle.txt.
"""
import glob
import json
import os
import re
import statistics
import sys

out, duration, conns = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = sorted({int(m.group(1)) for p in glob.glob(os.path.join(out, "*.json"))
                 if (m := re.search(r"\.(\d+)\.json$", p))})


def load(name, rnd):
    try:
        d = json.load(open(os.path.join(out, f"{name}.{rnd}.json")))
    except Exception:
        return None
    ok = d["statusCodeDistribution"].get("200", 0)
    lp = d["latencyPercentiles"]
    ms = lambda v: v * 1e3 if v is not None else None
    # oha cuts the requests in flight when its time is up; those are not failures.
    errors = {k: v for k, v in (d.get("errorDistribution") or {}).items() if "deadline" not in k}
    other = {k: v for k, v in d["statusCodeDistribution"].items() if k != "200"}
    return {
        "rps": ok / d["summary"]["total"],
        "p50": ms(lp.get("p50")),
        "p99": ms(lp.get("p99")),
        "note": ", ".join([f"{k}: {v}" for k, v in list(other.items()) + list(errors.items())]),
    }


def median_run(runs):
    """The run with the median req/s (the lower middle one for an even count)."""
    runs = sorted(runs, key=lambda x: x["rps"])
    return runs[(len(runs) - 1) // 2]


def ratio(name, other):
    """Median and range of name/other over the rounds where both ran."""
    rs = [a["rps"] / b["rps"] for a, b in ((load(name, i), load(other, i)) for i in rounds)
          if a and b and b["rps"]]
    if not rs:
        return "-"
    if len(rs) == 1:
        return f"{rs[0]:.2f}"
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}–{max(rs):.2f})"


# scenario, its direct baseline, the squid scenario it is compared with
rows = [
    ("direct-http", None, None),
    ("direct-https", None, None),
    ("direct-https-newconn", None, None),
    ("cordon-http", "direct-http", "squid-http"),
    ("cordon-tunnel", "direct-https", "squid-splice"),
    ("cordon-intercept", "direct-https", "squid-bump"),
    ("cordon-intercept-inject", "direct-https", "squid-bump"),
    ("cordon-intercept-masked", "direct-https", "squid-bump"),
    ("cordon-intercept-newconn", "direct-https-newconn", "squid-bump-newconn"),
    ("squid-http", "direct-http", None),
    ("squid-splice", "direct-https", None),
    ("squid-bump", "direct-https", None),
    ("squid-bump-newconn", "direct-https-newconn", None),
    ("mitmdump-mitm", "direct-https", None),
]
f = lambda x: f"{x:.2f}" if x is not None else "-"
cores = os.cpu_count()
print(f"Run: {cores} cores, oha, {conns} connections, {len(rounds)} rounds of {duration} per scenario (each after a "
      "2 s warm-up), 1 KiB body, nginx upstream on loopback. req/s, p50 and p99 are from each scenario's median "
      "round; ratios are medians of the per-round ratios, with their range.\n")
print("| scenario | req/s | req/s range | p50 ms | p99 ms | × direct | cordon × squid | notes |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for name, base, squid in rows:
    runs = [x for x in (load(name, i) for i in rounds) if x]
    if not runs:
        continue
    x = median_run(runs)
    span = f"{min(r['rps'] for r in runs):,.0f}–{max(r['rps'] for r in runs):,.0f}"
    vs_direct = ratio(name, base) if base else "-"
    vs_squid = ratio(name, squid) if squid else "-"
    notes = "; ".join(sorted({r["note"] for r in runs if r["note"]}))[:80]
    print(f"| {name} | {x['rps']:,.0f} | {span} | {f(x['p50'])} | {f(x['p99'])} | {vs_direct} | {vs_squid} | {notes} |")

added = {}
for n in ["cordon-intercept", "squid-bump"]:
    for i in rounds:
        d, p = load("direct-https-c1", i), load(n + "-c1", i)
        if d and p and d["p50"] is not None and p["p50"] is not None:
            added.setdefault(n, []).append((p["p50"] - d["p50"], p["p50"], d["p50"]))
if added:
    print("\nAdded p50 latency at one connection (HTTPS, keep-alive), median over the rounds (range):\n")
    for n, xs in added.items():
        a = [x[0] for x in xs]
        mid = sorted(xs)[(len(xs) - 1) // 2]
        print(f"- {n}: {statistics.median(a):.3f} ms ({min(a):.3f}–{max(a):.3f}; median round: p50 {mid[1]:.3f} ms "
              f"vs direct {mid[2]:.3f} ms)")
idle = os.path.join(out, "idle.txt")
if os.path.exists(idle) and open(idle).read().strip():
    print(f"\nIdle intercepted connections: `{open(idle).read().strip()}`")
