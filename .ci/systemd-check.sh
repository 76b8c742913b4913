#!/usr/bin/env bash
# CI: the VM gateway's systemd unit (deploy/gateway/cordon.service) is valid (`systemd-analyze verify`, with the
# unit's ExecStart pointed at the binary the tests built) and sandboxed (`systemd-analyze security` exposure at most
# 2.5 of 10). Usage: CORDON_BIN=path/to/cordon bash .ci/systemd-check.sh
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
systemd-analyze security --offline=yes --threshold=25 --no-pager "$work/cordon.service" | tail -1
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
