#!/usr/bin/env bash
# CI: the monitoring that ships with cordon (deploy/monitoring/): the alert rules are valid (`promtool check
# rules`) and fire when they should (`promtool test rules` on alerts_test.yaml), and every expression of the
# Grafana dashboard is PromQL promtool accepts (written as recording rules, Grafana's variables filled in).
# That every metric they name exists in cordon's /metrics is tests/it/ops/monitoring.rs's.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v promtool >/dev/null 2>&1 || { echo "promtool is missing (Debian's prometheus package; .ci/run installs it)" >&2; exit 1; }

promtool check rules deploy/monitoring/alerts.yaml
(cd deploy/monitoring && promtool test rules alerts_test.yaml)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - deploy/monitoring/dashboard.json > "$work/dashboard-rules.yaml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
rules = []
for panel in dash["panels"]:
    targets = panel.get("targets") or []
    assert targets, f"panel {panel['title']!r} has no query"
    for t in targets:
        expr = (t["expr"].replace("$__rate_interval", "5m").replace("$__range", "1h")
                .replace("$instance", ".*"))
        assert "$" not in expr, f"an unknown variable in {t['expr']!r}"
        rules.append({"record": f"dashboard:panel_{panel['id']}:{t['refId'].lower()}", "expr": expr})
print(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}, indent=1))
PY
promtool check rules "$work/dashboard-rules.yaml"
echo "monitoring: alert rules valid and tested, $(grep -c '"record"' "$work/dashboard-rules.yaml") dashboard queries valid"
