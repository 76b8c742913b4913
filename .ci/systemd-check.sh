#!/usr/bin/env bash
# CI: the VM gateway's systemd unit (deploy/gateway/cordon.service) is valid (`systemd-analyze verify`, with the
# unit's ExecStart pointed at the binary the tests built) and sandboxed (`systemd-analyze security` exposure at most
# 2.5 of 10), also with the plain-proxy drop-in of docs/src/deploying/systemd.md, which must lower the exposure.
# Usage: CORDON_BIN=path/to/cordon bash .ci/systemd-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CORDON_BIN:?set CORDON_BIN to the cordon binary}"
if ! command -v systemd-analyze >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
sed "s#/usr/local/bin/cordon#$CORDON_BIN#g" deploy/gateway/cordon.service > "$work/cordon.service"
echo "== systemd-analyze verify"
systemd-analyze verify "$work/cordon.service"
echo "== systemd-analyze security (exposure at most 2.5)"
exposure() { systemd-analyze security --offline=yes --threshold=25 --no-pager "$1" | tail -1; }
gateway=$(exposure "$work/cordon.service"); echo "$gateway"
# The plain-proxy drop-in of docs/src/deploying/systemd.md ("As a plain proxy"): an empty assignment clears a
# list, so appending it to the unit's [Service] section is what the drop-in does. It must verify, and lower the
# exposure.
echo "== the unit with the plain-proxy drop-in of docs/src/deploying/systemd.md"
mkdir -p "$work/plain"
python3 - docs/src/deploying/systemd.md > "$work/drop-in.conf" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
print(re.search(r"## As a plain proxy\n.*?```ini\n(.*?)```", text, re.S).group(1), end="")
PY
grep -q '^\[Service\]$' "$work/drop-in.conf"
{ cat "$work/cordon.service"; echo; cat "$work/drop-in.conf"; } > "$work/plain/cordon.service"
systemd-analyze verify "$work/plain/cordon.service"
plain=$(exposure "$work/plain/cordon.service"); echo "$plain"
number() { grep -oE '[0-9]+\.[0-9]+' <<<"$1" | head -1; }
awk -v gateway="$(number "$gateway")" -v plain="$(number "$plain")" 'BEGIN { exit !(plain < gateway) }' \
  || { echo "the drop-in does not lower the exposure: $gateway, then $plain"; exit 1; }
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
