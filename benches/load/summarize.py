#!/usr/bin/env python3
"""The load harness's table: oha JSON results -> markdown, each figure as a ratio to the direct connection of
the same run, and cordon's ratio to squid in the same scenario.

usage: summarize.py RESULTS_DIR DURATION CONNECTIONS
"""
import json
import os
import sys

out, duration, conns = sys.argv[1], sys.argv[2], sys.argv[3]


def load(name):
    try:
        d = json.load(open(os.path.join(out, name + ".json")))
    except Exception:
        return None
    ok = d["statusCodeDistribution"].get("200", 0)
    lp = d["latencyPercentiles"]
    ms = lambda v: v * 1e3 if v is not None else None
    errors = d.get("errorDistribution") or {}
    other = {k: v for k, v in d["statusCodeDistribution"].items() if k != "200"}
    return {
        "rps": ok / d["summary"]["total"],
        "p50": ms(lp.get("p50")),
        "p99": ms(lp.get("p99")),
        "note": ", ".join([f"{k}: {v}" for k, v in list(other.items()) + list(errors.items())])[:80],
    }


# scenario, its direct baseline, the squid scenario it is compared with
rows = [
    ("direct-http", None, None),
    ("direct-https", None, None),
    ("direct-https-newconn", None, None),
    ("cordon-http", "direct-http", "squid-http"),
    ("cordon-tunnel", "direct-https", "squid-splice"),
    ("cordon-intercept", "direct-https", "squid-bump"),
    ("cordon-intercept-inject", "direct-https", "squid-bump"),
    ("cordon-intercept-newconn", "direct-https-newconn", "squid-bump-newconn"),
    ("squid-http", "direct-http", None),
    ("squid-splice", "direct-https", None),
    ("squid-bump", "direct-https", None),
    ("squid-bump-newconn", "direct-https-newconn", None),
    ("mitmdump-mitm", "direct-https", None),
]
r = {name: load(name) for name, _, _ in rows}
f = lambda x: f"{x:.2f}" if x is not None else "-"
cores = os.cpu_count()
print(f"Run: {cores} cores, oha, {conns} connections, {duration} per scenario (after a 2 s warm-up), 1 KiB body, nginx upstream on loopback.\n")
print("| scenario | req/s | p50 ms | p99 ms | × direct | cordon × squid | notes |")
print("|---|---:|---:|---:|---:|---:|---|")
for name, base, squid in rows:
    x = r[name]
    if x is None:
        continue
    b = r.get(base) if base else None
    s = r.get(squid) if squid else None
    vs_direct = f"{x['rps'] / b['rps']:.2f}" if b and b["rps"] else "-"
    vs_squid = f"{x['rps'] / s['rps']:.2f}" if s and s["rps"] else "-"
    print(f"| {name} | {x['rps']:,.0f} | {f(x['p50'])} | {f(x['p99'])} | {vs_direct} | {vs_squid} | {x['note']} |")
c1 = {n: load(n) for n in ["direct-https-c1", "cordon-intercept-c1", "squid-bump-c1"]}
if c1["direct-https-c1"]:
    d = c1["direct-https-c1"]["p50"]
    print("\nAdded p50 latency at one connection (HTTPS, keep-alive):\n")
    for n in ["cordon-intercept-c1", "squid-bump-c1"]:
        if c1[n] and d is not None:
            print(f"- {n.removesuffix('-c1')}: {c1[n]['p50'] - d:.3f} ms (p50 {c1[n]['p50']:.3f} ms vs direct {d:.3f} ms)")
idle = os.path.join(out, "idle.txt")
if os.path.exists(idle) and open(idle).read().strip():
    print(f"\nIdle intercepted connections: `{open(idle).read().strip()}`")
