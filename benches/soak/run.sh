#!/usr/bin/env bash
# The soak: at least a million intercepted HTTPS requests (credential injected, the answer masked) from many
# sandboxes at 1,000 concurrent connections, through a release build of cordon, sampling its memory,
# descriptors, threads and open connections every second; then judged by check.py and written into
# RELIABILITY.md.
#
#   PEER_RIG_ROOT=/some/scratch bash benches/soak/run.sh [REQUESTS=1000000] [CONNECTIONS=1000] [SANDBOXES=10]
#
# Uses the load rig (benches/load/rig: nginx on 127.0.0.1:18443 serves the upstream, oha drives the load).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rig="$repo/benches/load/rig"
export PEER_RIG_ROOT="${PEER_RIG_ROOT:?set PEER_RIG_ROOT to a scratch folder for the load rig}"
N="${1:-1000000}"
C="${2:-1000}"
S="${3:-10}"
[ $((C % S)) -eq 0 ] && [ $((N % S)) -eq 0 ] || { echo "CONNECTIONS and REQUESTS must divide by SANDBOXES" >&2; exit 2; }
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
[ -f "$PEER_RIG_ROOT/ca/nginx.pem" ] && command -v oha >/dev/null || bash "$rig/setup.sh"
bash "$rig/start.sh"
OHA="$(command -v oha)"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

echo "== building cordon (release)"
(cd "$repo" && cargo build --release --locked --quiet)
target_dir="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
BIN="$target_dir/release/cordon"

work="$(mktemp -d)"
mkdir -p "$work/log"
cordon_pid=""
cleanup() {
  [ -n "$cordon_pid" ] && kill "$cordon_pid" 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

TOKEN=soak-token-0123456789abcdef
HASH="$(printf %s "$TOKEN" | "$BIN" token hash)"
PROXY_PORT=14228
ADMIN_PORT=14229
{
  cat <<YAML
listen: { proxy: 127.0.0.1:$PROXY_PORT, admin: 127.0.0.1:$ADMIN_PORT }
control: { admin_token: { file: $work/admin-token }, watch: false }
audit: { path: $work/log/audit.jsonl }
ca: { dir: $work/certs }
vault: { file: { path: $work/vault.bin } }
upstream: { extra_roots: [$PEER_RIG_ROOT/ca/upstream-ca.pem], pool_idle: 5s }   # idle upstream connections go before the check
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: { upstream.test: 127.0.0.1 }
limits:
  max_connections: 60000
  per_source: { unauthenticated: 60000 }
  per_sandbox:
    requests: { per_second: 1000000, burst: 1000000 }
    connections: { per_second: 1000000, burst: 1000000 }
    max_open: 100000
  per_user:
    requests: { per_second: 1000000, burst: 1000000 }
    max_open: 100000
credentials:
  upstream-token:
    source: { env: SOAK_UPSTREAM_TOKEN }
    bind: { hosts: [upstream.test], ports: [18443] }
    inject: { header: Authorization, value: "Bearer {secret}" }
    mask_echo: true
policies:
  soak:
    credentials: [upstream-token]
    allow:
      - { host: upstream.test, ports: [18443] }
sandboxes:
YAML
  for i in $(seq 0 $((S - 1))); do
    echo "  - { id: soak-$i, user: user-$((i % 3)), token_sha256: $HASH, policy: soak }"
  done
} > "$work/cordon.yaml"
"$BIN" check --config "$work/cordon.yaml" > /dev/null
for i in $(seq 0 $((S - 1))); do
  "$BIN" ca export --config "$work/cordon.yaml" --sandbox "soak-$i" > "$work/ca-$i.pem"
done
SOAK_UPSTREAM_TOKEN=soak-upstream-token-5d8e2f7a9c1b3e4f "$BIN" run --config "$work/cordon.yaml" \
  > "$work/cordon.out" 2> "$work/cordon.err" &
cordon_pid=$!
for _ in $(seq 50); do up "$ADMIN_PORT" && break; sleep 0.1; done
sleep 1

snapshot() { python3 - "$cordon_pid" "http://127.0.0.1:$ADMIN_PORT/metrics" <<'PY'
import json, os, sys, urllib.request
pid = sys.argv[1]
def status(field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
text = urllib.request.urlopen(sys.argv[2], timeout=2).read().decode()
count = lambda name: sum(int(float(l.rsplit(" ", 1)[1])) for l in text.splitlines() if l.startswith(name + "{") or l.startswith(name + " "))
print(json.dumps({"rss_kib": status("VmRSS"), "fds": len(os.listdir(f"/proc/{pid}/fd")),
                  "connections": count("cordon_open_connections"), "tunnels": count("cordon_open_tunnels")}))
PY
}
snapshot > "$work/baseline.json"
python3 "$repo/benches/soak/sample.py" "$cordon_pid" "http://127.0.0.1:$ADMIN_PORT/metrics" "$work/stop" \
  > "$work/samples.jsonl" &
sampler=$!

# oha resolves the target itself even through a proxy: a private /etc/hosts names upstream.test.
cp /etc/hosts "$work/hosts"
echo "127.0.0.1 upstream.test" >> "$work/hosts"
echo "== $N requests, $C connections, $S sandboxes"
start=$(date +%s)
loaders=()
for i in $(seq 0 $((S - 1))); do
  auth="$(printf %s "soak-$i:$TOKEN" | base64 -w0)"
  unshare --mount -- sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$work/hosts" \
    "$OHA" -n $((N / S)) -c $((C / S)) --no-tui --output-format json \
    -x "http://127.0.0.1:$PROXY_PORT" --proxy-header "Proxy-Authorization: Basic $auth" \
    --cacert "$work/ca-$i.pem" https://upstream.test:18443/1k.txt > "$work/oha-$i.json" 2> "$work/oha-$i.err" &
  loaders+=($!)
done
wait "${loaders[@]}" || true
echo "== load done in $(( $(date +%s) - start )) s; letting connections close"
sleep 10
snapshot > "$work/after.json"
touch "$work/stop"
wait "$sampler" 2>/dev/null || true

report="$work/report.md"
status=0
{
  echo "Run on $(date -u +%Y-%m-%d) with \`PEER_RIG_ROOT=... bash benches/soak/run.sh $N $C $S\` ($(nproc) cores):"
  echo
  python3 "$repo/benches/soak/check.py" "$work" 0.2 "$C" || status=$?
} > "$report"
cat "$report"
python3 - "$repo/RELIABILITY.md" "$report" <<'PY'
import sys
path, report = sys.argv[1], open(sys.argv[2]).read()
start, end = "<!-- soak:begin -->", "<!-- soak:end -->"
text = open(path).read()
i, j = text.index(start) + len(start), text.index(end)
open(path, "w").write(text[:i] + "\n" + report + "\n" + text[j:])
PY
echo "== RELIABILITY.md updated"
exit "$status"
