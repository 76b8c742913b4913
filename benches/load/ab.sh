#!/usr/bin/env bash
# Compare two cordon builds on one scenario, alternating runs so both see the same machine weather.
#
#   PEER_RIG_ROOT=/some/scratch bash benches/load/ab.sh BIN_A BIN_B SCENARIO [rounds] [seconds]
#
# Prints each run and the medians of req/s and of cordon's CPU time per request for A and B.
# A_AUDIT / B_AUDIT: one more key of `audit:` for A's / B's runs (profile.sh's AUDIT), e.g. to compare the
# same binary with the audit chain off and on:
#   A_AUDIT='chain: false' B_AUDIT='signing_key: { file: @WORK@/audit-key }' bash benches/load/ab.sh BIN BIN intercept
# B_SCENARIO: B's runs drive another scenario (SCENARIO is A's), e.g. model metering off against on:
#   B_SCENARIO=llm bash benches/load/ab.sh BIN BIN sse
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
a=${1:?BIN_A}; b=${2:?BIN_B}; scenario=${3:?SCENARIO}; rounds=${4:-4}; secs=${5:-6}
out=$(mktemp)
for i in $(seq 1 "$rounds"); do
  for which in A B; do
    bin=$a; extra=${A_AUDIT:-}; sc=$scenario
    [ "$which" = B ] && { bin=$b; extra=${B_AUDIT:-}; sc=${B_SCENARIO:-$scenario}; }
    line=$(AUDIT=$extra BIN=$bin bash "$here/profile.sh" "$sc" "$secs")
    echo "$which $line" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import re, statistics, sys
rows = {"A": [], "B": []}
for line in open(sys.argv[1]):
    which, rest = line.split(" ", 1)
    rps = float(re.search(r"rps=([\d.]+)", rest).group(1))
    cpu = re.search(r"cordon_cpu_us_per_req=([\d.]+)", rest)
    rows[which].append((rps, float(cpu.group(1)) if cpu else float("nan")))
med = {k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
print("median A: rps=%.0f cpu_us=%.1f" % med["A"])
print("median B: rps=%.0f cpu_us=%.1f" % med["B"])
print("B/A: rps %.3f, cpu per request %.3f" % (med["B"][0] / med["A"][0], med["B"][1] / med["A"][1]))
# The spread: B/A of each round (A and B ran back to back, so they met about the same weather).
rr = sorted(b[0] / a[0] for a, b in zip(rows["A"], rows["B"]))
rc = sorted(b[1] / a[1] for a, b in zip(rows["A"], rows["B"]))
print("B/A per round: rps min %.3f median %.3f max %.3f; cpu per request min %.3f median %.3f max %.3f (%d rounds)"
      % (rr[0], statistics.median(rr), rr[-1], rc[0], statistics.median(rc), rc[-1], len(rr)))
PY
rm -f "$out"
