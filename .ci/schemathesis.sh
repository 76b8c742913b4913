#!/usr/bin/env bash
# Check a running cordon's admin API against docs/openapi.yaml with schemathesis (every check).
#
#   .ci/schemathesis.sh target/release/cordon [extra schemathesis run options, e.g. --seed 1234]
#
# It starts the given cordon binary on free 127.0.0.1 ports with a throw-away configuration and state in a temporary
# folder, runs schemathesis against the admin listener with the admin token, stops cordon, and exits non-zero if
# schemathesis found anything. SCHEMATHESIS names the schemathesis command (default: `schemathesis`, installed with
# pip if missing); ST_MAX_EXAMPLES bounds the examples per operation and phase (default 100: about 30 s on 2 cores).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 PATH-TO-CORDON-BINARY [schemathesis run options...]" >&2
  exit 2
fi
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
shift
[ -x "$bin" ] || { echo "$bin is not an executable" >&2; exit 2; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
schema="$repo/docs/openapi.yaml"

st="${SCHEMATHESIS:-schemathesis}"
if ! command -v "$st" >/dev/null 2>&1; then
  python3 -m pip install --quiet schemathesis
  st=schemathesis
fi
echo "== $("$st" --version)"

tmp="$(mktemp -d)"
cordon_pid=""
cleanup() {
  if [ -n "$cordon_pid" ] && kill -0 "$cordon_pid" 2>/dev/null; then
    kill -TERM "$cordon_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$cordon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$cordon_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
proxy_port="$(free_port)"
admin_port="$(free_port)"
while [ "$admin_port" = "$proxy_port" ]; do admin_port="$(free_port)"; done
preview_port="$(free_port)"
while [ "$preview_port" = "$proxy_port" ] || [ "$preview_port" = "$admin_port" ]; do preview_port="$(free_port)"; done
admin="http://127.0.0.1:$admin_port"

# The shape of config/cordon.yaml, with everything in $tmp, a second policy, and a credential injected by
# placeholder (so that `placeholders` and the CORDON_PLACEHOLDER_* variables of `env` are not empty).
cat >"$tmp/cordon.yaml" <<EOF
listen:
  proxy: 127.0.0.1:$proxy_port
  admin: 127.0.0.1:$admin_port
  preview: 127.0.0.1:$preview_port

previews:
  domain: preview.localhost

control:
  admin_token: { file: $tmp/admin-token }
  signing_key: { file: $tmp/signing-key }
  store: $tmp/cordon.db
  default_ttl: 1h
  max_ttl: 7d

audit:
  path: $tmp/audit.jsonl

ca:
  dir: $tmp/certs

vault:
  file:
    path: $tmp/vault.bin

network:
  allow_cidrs: []
  hosts: {}

timeouts:
  connect: 10s
  request_headers: 30s
  upstream_headers: 60s
  drain: 2s

limits:
  max_connections: 4096
  max_request_header_bytes: 64KiB

credentials:
  search-api:
    source: { env: CORDON_ST_SEARCH_KEY }
    bind: { hosts: [api.search.example] }
    inject: { placeholder: { query: true, body: true } }

sandboxes:
  - id: demo
    user: demo-user
    token_sha256: 7c43ef5ae21d43ce2743f770c68e24def1a43ee2f416d2438410c8af7af2ff2c
    policy: default
    source_cidrs: ["127.0.0.77/32"]

policies:
  default:
    mode: enforce
    expose: [3000]
    allow:
      - host: example.com
      - host: "*.example.com"
  agents:
    mode: report
    credentials: [search-api]
    allow:
      - host: api.search.example
        ports: [443]
EOF

# What the schema cannot say, and what is so by design:
# - createSandbox and renewSandbox answer 422 to some data the schema allows: the policy must exist in the
#   configuration, label keys have a pattern (OpenAPI 3.0 cannot constrain property names), and a ttl must parse as
#   a duration between 1s and control.max_ttl. The dictionaries make most generated bodies name a real policy and a
#   real duration, so that sandboxes do get created (and renewed, revoked, shown) rather than refused.
# - A revoked sandbox stays visible (with `revoked_at`) until it is purged, so GET after DELETE is 200, not 404.
# - makePreview answers 422 to a port the sandbox's policy does not expose, and 409 for a sandbox without an address
#   of its own; the dictionaries make some bodies name the demo sandbox's exposed port.
cat >"$tmp/schemathesis.toml" <<'EOF'
# Every check (what `--checks all` says, but given here, since the command line would override the
# per-operation settings below).
[checks]
enabled = true

[dictionaries.policies]
values = ["default", "agents"]

[dictionaries.ttls]
values = ["90s", "30m", "2h", "1day 12h", "7d"]

[[operations]]
include-operation-id = ["createSandbox", "renewSandbox", "changeSandboxPolicy"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "404", "409", "422"]

[[operations]]
include-operation-id = "createSandbox"
parameters = { "body.policy" = { dictionary = "policies", probability = 0.8 }, "body.ttl" = { dictionary = "ttls", probability = 0.5 } }

[[operations]]
include-operation-id = "changeSandboxPolicy"
parameters = { "body.policy" = { dictionary = "policies", probability = 0.5 } }

[[operations]]
include-operation-id = "renewSandbox"
parameters = { "body.ttl" = { dictionary = "ttls", probability = 0.5 } }

[dictionaries.ports]
values = [3000]

[dictionaries.sandboxes]
values = ["demo"]

[[operations]]
include-operation-id = ["makePreview", "closePreview"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "401", "404", "409", "422"]

[[operations]]
include-operation-id = "makePreview"
parameters = { "path.id" = { dictionary = "sandboxes", probability = 0.5 }, "body.port" = { dictionary = "ports", probability = 0.5 } }

[[operations]]
include-operation-id = "getSandbox"
checks.use_after_free.enabled = false
EOF

echo "== starting cordon (admin $admin, proxy 127.0.0.1:$proxy_port) in $tmp"
CORDON_ST_SEARCH_KEY=not-a-real-secret "$bin" run --config "$tmp/cordon.yaml" >"$tmp/cordon.log" 2>&1 &
cordon_pid=$!

healthy=""
for _ in $(seq 100); do
  if ! kill -0 "$cordon_pid" 2>/dev/null; then
    break
  fi
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$admin/healthz" 2>/dev/null; then
    healthy=1
    break
  fi
  sleep 0.1
done
if [ -z "$healthy" ]; then
  echo "cordon did not come up; its output:" >&2
  cat "$tmp/cordon.log" >&2
  exit 1
fi
# cordon creates the token file on first start, so it exists once /healthz answers.
token="$(tr -d '[:space:]' <"$tmp/admin-token")"

echo "== schemathesis run $schema"
status=0
(
  # Run from $tmp so that nothing (hypothesis database, reports) is left in the clone.
  cd "$tmp"
  "$st" --config-file "$tmp/schemathesis.toml" run "$schema" \
    --url "$admin" \
    -H "Authorization: Bearer $token" \
    --max-examples "${ST_MAX_EXAMPLES:-100}" \
    --workers 1 \
    --request-timeout 10 \
    --generation-database none \
    --no-color \
    "$@"
) || status=$?

if ! kill -0 "$cordon_pid" 2>/dev/null; then
  echo "cordon exited during the run; its output:" >&2
  tail -n 50 "$tmp/cordon.log" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "== schemathesis found problems (exit $status); cordon's log, errors and warnings:" >&2
  grep -E '"level":"(ERROR|WARN)"|ERROR|WARN' "$tmp/cordon.log" | tail -n 30 >&2 || true
fi
exit "$status"
