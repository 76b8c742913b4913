#!/usr/bin/env bash
# CI: the systemd units the Debian package installs (deploy/systemd/): cordon.service, the plain proxy, and
# cordon-gateway.service, the VM gateway. Each is valid (`systemd-analyze verify`, with ExecStart pointed at the
# binary the tests built) and sandboxed (`systemd-analyze security` exposure at most 2.5 of 10); the plain proxy,
# which has no capability, is rated lower than the gateway; the two conflict with each other (one configuration,
# one state folder, the same ports). .ci/package.sh runs cordon.service as installed from the package.
# Usage: CORDON_BIN=path/to/cordon bash .ci/systemd-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CORDON_BIN:?set CORDON_BIN to the cordon binary}"
if ! command -v systemd-analyze >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for unit in cordon cordon-gateway; do
  sed "s#/usr/bin/cordon#$CORDON_BIN#g" "deploy/systemd/$unit.service" > "$work/$unit.service"
done
echo "== systemd-analyze verify"
systemd-analyze verify "$work/cordon.service" "$work/cordon-gateway.service"
echo "== systemd-analyze security (exposure at most 2.5)"
exposure() { systemd-analyze security --offline=yes --threshold=25 --no-pager "$1" | tail -1; }
plain=$(exposure "$work/cordon.service"); echo "cordon.service: $plain"
gateway=$(exposure "$work/cordon-gateway.service"); echo "cordon-gateway.service: $gateway"
number() { grep -oE '[0-9]+\.[0-9]+' <<<"$1" | head -1; }
awk -v gateway="$(number "$gateway")" -v plain="$(number "$plain")" 'BEGIN { exit !(plain < gateway) }' \
  || { echo "the plain proxy is not rated lower than the gateway: $plain, then $gateway"; exit 1; }
echo "== the plain proxy has no capability; the gateway only CAP_NET_ADMIN and CAP_NET_BIND_SERVICE"
grep -qx 'CapabilityBoundingSet=' deploy/systemd/cordon.service
grep -qx 'AmbientCapabilities=' deploy/systemd/cordon.service
grep -qx 'CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_BIND_SERVICE' deploy/systemd/cordon-gateway.service
echo "== they conflict, and differ in nothing else of the [Service] section but the capabilities"
grep -qx 'Conflicts=cordon-gateway.service' deploy/systemd/cordon.service
grep -qx 'Conflicts=cordon.service' deploy/systemd/cordon-gateway.service
service() {
  sed -n '/^\[Service\]$/,/^\[/p' "$1" | grep -v '^#' | grep -vE '^(AmbientCapabilities|CapabilityBoundingSet)='
}
diff <(service deploy/systemd/cordon.service) <(service deploy/systemd/cordon-gateway.service)
# The ExecStartPre check must pass on the configuration a gateway starts from (docs/src/deploying/gateway.md's example).
echo "== the gateway configuration of docs/src/deploying/gateway.md passes cordon check"
python3 - docs/src/deploying/gateway.md > "$work/gateway.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"## cordon's configuration\n\n```yaml\n(.*?)```", text, re.S).group(1)
print(block + "policies:\n  builder:\n    allow:\n      - host: github.com\n")  # the doc's policy is elsewhere
PY
(cd "$work" && "$CORDON_BIN" check --config gateway.yaml > /dev/null)
echo "systemd-check: ok"
