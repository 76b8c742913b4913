#!/usr/bin/env bash
# The load harness: cordon against a direct connection and against squid and mitmdump, in one run, on this
# machine. Writes the table (with ratios) to BENCHMARKS.md.
#
#   PEER_RIG_ROOT=/some/scratch bash benches/load/run.sh [DURATION=10s] [CONNECTIONS=50] [ROUNDS=3]
#   PEER_RIG_ROOT=/some/scratch CORDON_BIN=target/debug/cordon bash benches/load/run.sh --smoke
#
# --smoke is what CI runs so the harness cannot rot: every scenario once, one second each, cordon and the
# direct connection only (no squid, no mitmdump), with the binary CORDON_BIN names (no release build), a small
# idle-connection count; it fails unless every scenario answered 200 and nothing else, and leaves BENCHMARKS.md
# alone.
#
# Every scenario runs once per round, the rounds one after the other, so that each meets the machine's changing
# weather several times; the table gives medians and ranges over the rounds.
# Uses the repository's own rig (benches/load/rig: nginx upstream, squid, mitmdump, oha): it runs the rig's
# setup.sh when the rig is not there yet, and its start.sh when it is not running. Everything listens on 127.0.0.1.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rig="$repo/benches/load/rig"
export PEER_RIG_ROOT="${PEER_RIG_ROOT:?set PEER_RIG_ROOT to a scratch folder for the peer rig}"
SMOKE=""
if [ "${1:-}" = --smoke ]; then
  SMOKE=1
  shift
fi
if [ -n "$SMOKE" ]; then
  D=1s CN=4 ROUNDS=1 WARM=0
  export IDLE="${IDLE:-50}" LOAD_RIG_PEERS=0
else
  D="${1:-10s}"
  CN="${2:-50}"
  ROUNDS="${3:-3}"
  WARM=2
fi
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -n "$SMOKE" ]; then
  [ -f "$PEER_RIG_ROOT/ca/nginx.pem" ] && command -v oha >/dev/null || bash "$rig/setup.sh"
else
  [ -f "$PEER_RIG_ROOT/ca/nginx.pem" ] && [ -x "$PEER_RIG_ROOT/venv/bin/mitmdump" ] && command -v oha >/dev/null \
    || bash "$rig/setup.sh"
fi
bash "$rig/start.sh"
OHA="$(command -v oha)"

if [ -n "${CORDON_BIN:-}" ]; then
  BIN="$CORDON_BIN"
else
  echo "== building cordon (release)"
  (cd "$repo" && cargo build --release --locked --quiet)
  target_dir="$(cd "$repo" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
  BIN="$target_dir/release/cordon"
fi

work="$(mktemp -d)"
out="$work/results"
mkdir -p "$out" "$work/log"
cordon_pid=""
cleanup() {
  [ -n "$cordon_pid" ] && kill "$cordon_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

TOKEN=bench-token-0123456789abcdef
HASH="$(printf %s "$TOKEN" | "$BIN" token hash)"
PROXY_PORT=14128
sed -e "s#@WORK@#$work#g" -e "s#@ROOT@#$PEER_RIG_ROOT#g" -e "s#@HASH@#$HASH#g" -e "s#@PORT@#$PROXY_PORT#g" \
  "$repo/benches/load/cordon.yaml.in" > "$work/cordon.yaml"
# The upstream token is a credential's source: check refuses what run would, an unset variable included.
export BENCH_UPSTREAM_TOKEN=bench-upstream-token-7f3a91c2e4d5b6a8
"$BIN" check --config "$work/cordon.yaml" > /dev/null
"$BIN" ca export --config "$work/cordon.yaml" --sandbox bench > "$work/bench-ca.pem"
"$BIN" ca export --config "$work/cordon.yaml" --sandbox inject > "$work/inject-ca.pem"
"$BIN" ca export --config "$work/cordon.yaml" --sandbox masked > "$work/masked-ca.pem"
"$BIN" run --config "$work/cordon.yaml" > "$work/cordon.out" 2> "$work/cordon.err" &
cordon_pid=$!
for _ in $(seq 100); do up "$PROXY_PORT" && break; sleep 0.1; done
up "$PROXY_PORT" || { echo "cordon did not start; its log:" >&2; cat "$work/cordon.err" >&2; exit 1; }

CA="$PEER_RIG_ROOT/ca/upstream-ca.pem"
SQCA="$PEER_RIG_ROOT/ca/squid-ca.pem"
MCA="$PEER_RIG_ROOT/mitm/conf/mitmproxy-ca-cert.pem"
HTTP_DIRECT=http://127.0.0.1:18080/1k.txt
HTTPS_DIRECT=https://localhost:18443/1k.txt
HTTP_NAMED=http://upstream.test:18080/1k.txt
HTTPS_NAMED=https://upstream.test:18443/1k.txt
HTTPS_IP=https://127.0.0.1:18443/1k.txt
# oha sends proxy credentials as a header (not from the proxy URL's userinfo).
CORDON=(-x "http://127.0.0.1:$PROXY_PORT" --proxy-header "Proxy-Authorization: Basic $(printf %s "bench:$TOKEN" | base64 -w0)")
CORDON_INJECT=(-x "http://127.0.0.1:$PROXY_PORT" --proxy-header "Proxy-Authorization: Basic $(printf %s "inject:$TOKEN" | base64 -w0)")
CORDON_MASKED=(-x "http://127.0.0.1:$PROXY_PORT" --proxy-header "Proxy-Authorization: Basic $(printf %s "masked:$TOKEN" | base64 -w0)")

# oha resolves the target name itself even through a proxy (and cordon refuses `localhost` by design), so it
# runs with a private /etc/hosts naming upstream.test (a mount namespace: nothing on the host changes).
cp /etc/hosts "$work/hosts"
echo "127.0.0.1 upstream.test" >> "$work/hosts"
oha_() {
  if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    unshare --mount -- sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$work/hosts" "$OHA" "$@"
  else
    grep -q "upstream.test" /etc/hosts || { echo "run as root, or add '127.0.0.1 upstream.test' to /etc/hosts" >&2; exit 2; }
    "$OHA" "$@"
  fi
}
run() { # name, connections, duration, oha args...
  local name=$1 c=$2 d=$3; shift 3
  echo ">> round $round: $name (c=$c, $d): $*"
  [ "$WARM" = 0 ] || oha_ -z "${WARM}s" -c "$c" --no-tui "$@" > /dev/null 2>&1 || true   # warm-up: caches, pools
  oha_ -z "$d" -c "$c" --no-tui --output-format json "$@" > "$out/$name.$round.json" 2> "$out/$name.$round.err" || true
  [ -n "$SMOKE" ] || sleep 1
}

for round in $(seq 1 "$ROUNDS"); do
  run direct-http "$CN" "$D" "$HTTP_DIRECT"
  run direct-https "$CN" "$D" --cacert "$CA" "$HTTPS_DIRECT"
  run direct-https-newconn "$CN" "$D" --disable-keepalive --cacert "$CA" "$HTTPS_DIRECT"
  run cordon-http "$CN" "$D" "${CORDON[@]}" "$HTTP_NAMED"
  run cordon-tunnel "$CN" "$D" "${CORDON[@]}" --cacert "$CA" "$HTTPS_IP"
  run cordon-intercept "$CN" "$D" "${CORDON[@]}" --cacert "$work/bench-ca.pem" "$HTTPS_NAMED"
  run cordon-intercept-inject "$CN" "$D" "${CORDON_INJECT[@]}" --cacert "$work/inject-ca.pem" "$HTTPS_NAMED"
  run cordon-intercept-masked "$CN" "$D" "${CORDON_MASKED[@]}" --cacert "$work/masked-ca.pem" "$HTTPS_NAMED"
  run cordon-intercept-newconn "$CN" "$D" --disable-keepalive "${CORDON[@]}" --cacert "$work/bench-ca.pem" "$HTTPS_NAMED"
  if [ -z "$SMOKE" ] && up 13128; then
    run squid-http "$CN" "$D" -x http://127.0.0.1:13128 "$HTTP_DIRECT"
    run squid-splice "$CN" "$D" -x http://127.0.0.1:13128 --cacert "$CA" "$HTTPS_DIRECT"
  fi
  if [ -z "$SMOKE" ] && up 13129; then
    run squid-bump "$CN" "$D" -x http://127.0.0.1:13129 --cacert "$SQCA" "$HTTPS_DIRECT"
    run squid-bump-newconn "$CN" "$D" --disable-keepalive -x http://127.0.0.1:13129 --cacert "$SQCA" "$HTTPS_DIRECT"
  fi
  if [ -z "$SMOKE" ] && up 18081; then
    run mitmdump-mitm "$CN" "$D" -x http://127.0.0.1:18081 --cacert "$MCA" "$HTTPS_DIRECT"
  fi
  # Added latency at one connection.
  C1="5s"; [ -z "$SMOKE" ] || C1="$D"
  run direct-https-c1 1 "$C1" --cacert "$CA" "$HTTPS_DIRECT"
  run cordon-intercept-c1 1 "$C1" "${CORDON[@]}" --cacert "$work/bench-ca.pem" "$HTTPS_NAMED"
  if [ -z "$SMOKE" ] && up 13129; then run squid-bump-c1 1 "$C1" -x http://127.0.0.1:13129 --cacert "$SQCA" "$HTTPS_DIRECT"; fi
done

echo "== memory: ${IDLE:-10000} idle intercepted connections"
ulimit -n 65536 2>/dev/null || true   # for 10,000 idle connections, where the hard limit allows
AUTH="$(printf %s "bench:$TOKEN" | base64 -w0)"
python3 "$repo/benches/load/idle.py" "$cordon_pid" "$PROXY_PORT" "$AUTH" upstream.test 18443 "$work/bench-ca.pem" \
  "${IDLE:-10000}" > "$out/idle.txt" 2> "$out/idle.err" || true
cat "$out/idle.txt" "$out/idle.err"

if [ -n "$SMOKE" ]; then
  # Every scenario ran, answered 200 and nothing else; the idle connections were held.
  python3 "$repo/benches/load/smoke_check.py" "$out"
  exit
fi

python3 "$repo/benches/load/summarize.py" "$out" "$D" "$CN" > "$work/table.md"
cat "$work/table.md"
python3 - "$repo/BENCHMARKS.md" "$work/table.md" <<'PY'
import sys
path, table = sys.argv[1], open(sys.argv[2]).read()
start, end = "<!-- load:begin -->", "<!-- load:end -->"
text = open(path).read()
i, j = text.index(start) + len(start), text.index(end)
open(path, "w").write(text[:i] + "\n" + table + "\n" + text[j:])
PY
echo "== BENCHMARKS.md updated"
