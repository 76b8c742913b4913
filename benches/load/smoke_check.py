#!/usr/bin/env python3
"""The load harness's smoke verdict (run.sh --smoke): every scenario the harness runs without peers produced a
result, answered 200 and nothing else, and the idle connections were all held. Prints one line per scenario and
exits 1 on the first kind of failure it finds, naming the scenario, so a harness that no longer starts, or a
scenario that silently measures refusals, fails CI instead of writing a table of nothing.

usage: smoke_check.py RESULTS_DIR
"""
import json
import os
import re
import sys

out = sys.argv[1]
# Every scenario run.sh runs without peers; a scenario dropped from run.sh must be dropped here too.
EXPECTED = [
    "direct-http", "direct-https", "direct-https-newconn", "direct-https-c1",
    "cordon-http", "cordon-tunnel", "cordon-intercept", "cordon-intercept-inject", "cordon-intercept-masked",
    "cordon-intercept-newconn", "cordon-intercept-c1",
]
failures = []
for name in EXPECTED:
    path = os.path.join(out, f"{name}.1.json")
    try:
        result = json.load(open(path))
    except (OSError, ValueError) as e:
        err = open(os.path.join(out, f"{name}.1.err")).read().strip() if os.path.exists(
            os.path.join(out, f"{name}.1.err")) else ""
        failures.append(f"{name}: no result ({e}) {err}")
        continue
    codes = result.get("statusCodeDistribution") or {}
    ok = codes.get("200", 0)
    other = {k: v for k, v in codes.items() if k != "200"}
    # oha cuts the requests in flight when its time is up; those are not failures.
    errors = {k: v for k, v in (result.get("errorDistribution") or {}).items() if "deadline" not in k}
    print(f"{name}: {ok} answered 200" + (f"; other: {other}" if other else "") + (f"; errors: {errors}" if errors else ""))
    if ok == 0 or other or errors:
        failures.append(f"{name}: {ok} answered 200, other statuses {other}, errors {errors}")

idle = open(os.path.join(out, "idle.txt")).read() if os.path.exists(os.path.join(out, "idle.txt")) else ""
held = re.search(r"connections=(\d+) failed=(\d+)", idle)
want = int(os.environ.get("IDLE", "50"))
if not held or int(held.group(1)) != want or int(held.group(2)) != 0:
    failures.append(f"idle connections: wanted {want} held, got {idle.strip() or 'nothing'}")
else:
    print(f"idle: {held.group(1)} intercepted connections held")

if failures:
    print("load harness smoke FAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
    sys.exit(1)
print(f"load harness smoke: {len(EXPECTED)} scenarios and the idle connections ran")
