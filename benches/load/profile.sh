#!/usr/bin/env bash
# Drive one scenario against a release cordon with oha, optionally under perf, and print req/s and p50.
#
#   PEER_RIG_ROOT=/some/scratch bash benches/load/profile.sh SCENARIO [seconds]
#     SCENARIO: direct | directs | http | tunnel | intercept | inject (a header credential) | masked (the same,
#               mask_echo: every answer masked) | newconn (intercept, a new connection per request) |
#               tunnel-bulk (a 4 MiB download through a blind tunnel) | squid-bulk (the same through squid's
#               splice, for comparison) | idle (IDLE=10000 idle intercepted connections held open by
#               idle.py: cordon's memory per connection) | post (intercept, a 2 KiB MCP tools/call POSTed to
#               /mcp under a plain rule) | mcp (the same under a rule with an mcp: section: read and judged) |
#               sse (a streamed model call, 200 events back, under a plain rule) | llm (the same under a rule with
#               model_api: and a budget: metered, priced, charged)
#     RESOLVE=dns   cordon resolves upstream.test through a real DNS server (dnsmasq on 127.0.0.153, TTL 60 s,
#                   named by a resolv.conf of cordon's own mount namespace) instead of network.hosts
#     PERF=1        also `perf record -g` cordon (-> /tmp/perf-SCENARIO.data)
#     PERF=1 ALL=1  `perf record -a` instead, the whole machine (-> /tmp/perf-all-SCENARIO.data;
#                   `perf report --sort comm` shows where the cores go)
#     C=50          connections
#     CALLGRAPH=...  perf's call-graph option (default -g; `--call-graph dwarf` for full stacks)
#     AUDIT='...'   one more key of the configuration's `audit:` (e.g. 'chain: false', or a signing_key)
# Prints requests per second, p50, and cordon's CPU time per request (steadier than req/s on a noisy machine).
# Needs the rig running (benches/load/rig/setup.sh sets it up, benches/load/rig/start.sh starts it) and a
# release build (cargo build --release).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
: "${PEER_RIG_ROOT:?set PEER_RIG_ROOT to the folder of the peer rig}"
BIN=${BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/cordon}
work=$(mktemp -d); mkdir -p "$work/log"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
pid=""
trap '[ -n "$pid" ] && { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }; rm -rf "$work"' EXIT
TOKEN=bench-token-0123456789abcdef
HASH="$(printf %s "$TOKEN" | "$BIN" token hash)"
PORT=14129
audit_extra=${AUDIT:-}; audit_extra=${audit_extra//@WORK@/$work}
sed -e "s#@WORK@#$work#g" -e "s#@ROOT@#$PEER_RIG_ROOT#g" -e "s#@HASH@#$HASH#g" -e "s#@PORT@#$PORT#g" \
  -e "s%#@AUDIT@.*%${audit_extra}%" \
  "$repo/benches/load/cordon.yaml.in" > "$work/cordon.yaml"
"$BIN" ca export --config "$work/cordon.yaml" --sandbox bench > "$work/bench-ca.pem"
wrap=()
if [ "${RESOLVE:-hosts}" = dns ]; then
  # upstream.test from a real DNS server instead of network.hosts: cordon's resolv.conf names it.
  # An AAAA record too: a NODATA answer without an SOA (all dnsmasq gives for a local name) must not be
  # cached (RFC 2308), which would make every lookup ask again; real resolvers send the SOA.
  sed -i -e '/^  hosts:/d' -e '/^    upstream.test: 127.0.0.1/d' \
    -e 's|allow_cidrs: \["127.0.0.0/8"\]|allow_cidrs: ["127.0.0.0/8", "::1/128"]|' "$work/cordon.yaml"
  dnsmasq --conf-file=/dev/null --no-resolv --no-hosts --listen-address=127.0.0.153 --bind-interfaces \
    --port=53 --user=root --pid-file="$work/dnsmasq.pid" --local-ttl=60 --host-record=upstream.test,127.0.0.1,::1
  printf 'nameserver 127.0.0.153\n' > "$work/resolv.conf"
  wrap=(unshare --mount -- sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"' "$work/resolv.conf")
  trap '[ -n "$pid" ] && { kill $pid 2>/dev/null; wait $pid 2>/dev/null; }; kill "$(cat "$work/dnsmasq.pid")"; rm -rf "$work"' EXIT
fi
BENCH_UPSTREAM_TOKEN=bench-upstream-token-7f3a91c2e4d5b6a8 "${wrap[@]}" "$BIN" run --config "$work/cordon.yaml" > /dev/null 2>&1 &
pid=$!
sleep 1
cp /etc/hosts "$work/hosts"; echo "127.0.0.1 upstream.test" >> "$work/hosts"
AUTH="Proxy-Authorization: Basic $(printf %s "bench:$TOKEN" | base64 -w0)"
CA="$PEER_RIG_ROOT/ca/upstream-ca.pem"
case ${1:?scenario} in
  direct) args=(http://127.0.0.1:18080/1k.txt);;
  directs) args=(--cacert "$CA" https://localhost:18443/1k.txt);;
  http) args=(-x "http://127.0.0.1:$PORT" --proxy-header "$AUTH" http://upstream.test:18080/1k.txt);;
  tunnel) args=(-x "http://127.0.0.1:$PORT" --proxy-header "$AUTH" --cacert "$CA" https://127.0.0.1:18443/1k.txt);;
  intercept) args=(-x "http://127.0.0.1:$PORT" --proxy-header "$AUTH" --cacert "$work/bench-ca.pem" https://upstream.test:18443/1k.txt);;
  newconn) args=(--disable-keepalive -x "http://127.0.0.1:$PORT" --proxy-header "$AUTH" --cacert "$work/bench-ca.pem" https://upstream.test:18443/1k.txt);;
  tunnel-bulk) args=(-x "http://127.0.0.1:$PORT" --proxy-header "$AUTH" --cacert "$CA" https://127.0.0.1:18443/4m.bin);;
  idle) ;;
  squid-bulk) args=(-x http://127.0.0.1:13128 --cacert "$CA" https://127.0.0.1:18443/4m.bin);;
  post|mcp)
    # A 2 KiB tools/call of read_file, as benches/protocols.rs judges it.
    python3 -c 'import json; print(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": "/srv/notes.txt", "note": "lorem ipsum dolor sit amet " * 70}}}), end="")' > "$work/call.json"
    who=bench; [ "$1" = mcp ] && who=mcp
    [ "$1" = mcp ] && "$BIN" ca export --config "$work/cordon.yaml" --sandbox mcp > "$work/mcp-ca.pem"
    ca="$work/bench-ca.pem"; [ "$1" = mcp ] && ca="$work/mcp-ca.pem"
    args=(-m POST -T application/json -H "accept: application/json, text/event-stream" -D "$work/call.json"
      -x "http://127.0.0.1:$PORT" --proxy-header "Proxy-Authorization: Basic $(printf %s "$who:$TOKEN" | base64 -w0)"
      --cacert "$ca" https://upstream.test:18443/mcp);;
  sse|llm)
    # A streamed Anthropic messages call (200 events back), through a plain rule (sse) or a model_api rule with a
    # budget and a price (llm: every event read, the usage priced, charged and recorded).
    printf %s '{"model":"claude-bench","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"hello"}]}' > "$work/call.json"
    who=bench; [ "$1" = llm ] && who=llm
    "$BIN" ca export --config "$work/cordon.yaml" --sandbox "$who" > "$work/$who-ca.pem"
    args=(-m POST -T application/json -D "$work/call.json"
      -x "http://127.0.0.1:$PORT" --proxy-header "Proxy-Authorization: Basic $(printf %s "$who:$TOKEN" | base64 -w0)"
      --cacert "$work/$who-ca.pem" https://upstream.test:18443/v1/messages);;
  inject|masked)
    "$BIN" ca export --config "$work/cordon.yaml" --sandbox "$1" > "$work/$1-ca.pem"
    SANDBOX_AUTH="Proxy-Authorization: Basic $(printf %s "$1:$TOKEN" | base64 -w0)"
    args=(-x "http://127.0.0.1:$PORT" --proxy-header "$SANDBOX_AUTH" --cacert "$work/$1-ca.pem" https://upstream.test:18443/1k.txt);;
  *) echo "unknown scenario $1" >&2; exit 2;;
esac
if [ "$1" = idle ]; then
  python3 "$repo/benches/load/idle.py" "$pid" "$PORT" "$(printf %s "bench:$TOKEN" | base64 -w0)" upstream.test 18443 \
    "$work/bench-ca.pem" "${IDLE:-10000}"
  exit 0
fi
D=${2:-8}
oha_() { unshare --mount -- sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$work/hosts" oha "$@"; }
oha_ -z 2s -c "${C:-50}" --no-tui "${args[@]}" > /dev/null 2>&1 || true
rec=""
if [ "${PERF:-0}" = 1 ]; then
  if [ "${ALL:-0}" = 1 ]; then perf record -F 499 -a -o "/tmp/perf-all-$1.data" -- sleep "$D" > /dev/null 2>&1 &
  else perf record -F 999 ${CALLGRAPH:--g} -p "$pid" -o "/tmp/perf-$1.data" -- sleep "$D" > /dev/null 2>&1 & fi
  rec=$!
fi
# cordon's CPU time (user + system, in clock ticks) around the measured run: CPU per request is far steadier
# than requests per second on a shared machine.
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(ticks)
oha_ -z "${D}s" -c "${C:-50}" --no-tui --output-format json "${args[@]}" 2>/dev/null > "$work/oha.json"
t1=$(ticks)
python3 - "$work/oha.json" "$t0" "$t1" "$(getconf CLK_TCK)" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t0, t1, hz = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = d["summary"]
n = sum(d.get("statusCodeDistribution", {}).values()) or 1
cpu = (t1 - t0) / hz / n * 1e6
extra = "" if sys.argv[5] in ("direct", "directs", "squid-bulk") else " cordon_cpu_us_per_req=%.1f" % cpu
if "bulk" in sys.argv[5]:
    extra += " MiB_per_s=%.0f" % (s["requestsPerSec"] * 4)
codes = d.get("statusCodeDistribution", {})
other = {k: v for k, v in codes.items() if k != "200"}
if other:
    extra += " NON-200=%s" % other
print("rps=%.0f p50=%.2fms%s" % (s["requestsPerSec"], d["latencyPercentiles"]["p50"] * 1000, extra))
PY
[ -n "$rec" ] && wait "$rec" || true
