#!/usr/bin/env bash
# Intercepted HTTPS for a sandbox created at run time, with the SQLite store against the PostgreSQL store, in
# alternating runs (so both see the same machine weather). The request path reads neither store, so the two should
# be within noise; this measures that claim.
#
#   PEER_RIG_ROOT=/some/scratch bash benches/load/store.sh [rounds] [seconds]
#
# Starts a throwaway PostgreSQL cluster (Debian's postgresql; as the `postgres` user when run as root) on a free
# loopback port, removed afterwards. Needs the rig running (benches/load/rig/start.sh) and a release build.
# Prints each run, then the medians of req/s and of cordon's CPU time per request, and PostgreSQL/SQLite ratios.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
: "${PEER_RIG_ROOT:?set PEER_RIG_ROOT to the folder of the peer rig}"
rounds=${1:-4}; secs=${2:-6}
BIN=${BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/cordon}
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
work=$(mktemp -d); chmod 755 "$work"; mkdir -p "$work/log"
as_pg=(); [ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/pg"; [ ${#as_pg[@]} -gt 0 ] && chown postgres "$work/pg"
"${as_pg[@]}" "$pgbin/initdb" -D "$work/pg" -A trust -U postgres --no-sync > /dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/log" -w \
  -o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" start > /dev/null
"${as_pg[@]}" "$pgbin/psql" -h 127.0.0.1 -p "$pgport" -U postgres -qc "CREATE DATABASE cordon" > /dev/null

TOKEN=bench-token-0123456789abcdef
HASH="$(printf %s "$TOKEN" | "$BIN" token hash)"
PORT=14129; ADMIN=14130
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/store-key"
cp /etc/hosts "$work/hosts"; echo "127.0.0.1 upstream.test" >> "$work/hosts"
oha_() { unshare --mount -- sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$work/hosts" oha "$@"; }

# One run: cordon on `store` ($1: sqlite | postgres), a sandbox created through the admin API, oha for $secs.
run() {
  local store=$1 conf="$work/$1.yaml"
  rm -rf "$work/certs" "$work/state"; mkdir -m 700 "$work/state"
  sed -e "s#@WORK@#$work#g" -e "s#@ROOT@#$PEER_RIG_ROOT#g" -e "s#@HASH@#$HASH#g" -e "s#@PORT@#$PORT#g" \
    "$repo/benches/load/cordon.yaml.in" > "$conf"
  python3 - "$conf" "$store" "$work" "$pgport" "$ADMIN" <<'PY'
import sys
conf, store, work, pgport, admin = sys.argv[1:]
text = open(conf).read()
text = text.replace("listen:\n", f"listen:\n  admin: 127.0.0.1:{admin}\n", 1)
if store == "postgres":
    db = (f'  store: "postgres://postgres@127.0.0.1:{pgport}/cordon"\n'
          f"  store_key: {{ file: {work}/store-key }}\n")
else:
    db = f"  store: {work}/state/cordon.db\n"
text += ("control:\n"
         f"  admin_token: {{ file: {work}/state/admin-token }}\n"
         f"  signing_key: {{ file: {work}/state/signing-key }}\n" + db + "  watch: false\n")
open(conf, "w").write(text)
PY
  "$BIN" run --config "$conf" > "$work/log/$store.out" 2>&1 &
  pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ADMIN/healthz" > /dev/null && break; sleep 0.1; done
  local made
  made=$(curl -sf -H "Authorization: Bearer $(cat "$work/state/admin-token")" \
    -d '{"user":"bench","policy":"plain"}' "http://127.0.0.1:$ADMIN/v1/sandboxes")
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); open(sys.argv[2],"w").write(d["ca_certificate"]); print(d["id"]+":"+d["credential"])' \
    "$made" "$work/run-ca.pem" > "$work/who"
  local auth="Proxy-Authorization: Basic $(base64 -w0 < <(tr -d '\n' < "$work/who"))"
  local args=(-x "http://127.0.0.1:$PORT" --proxy-header "$auth" --cacert "$work/run-ca.pem" https://upstream.test:18443/1k.txt)
  oha_ -z 2s -c "${C:-50}" --no-tui "${args[@]}" > /dev/null 2>&1 || true
  local t0 t1
  t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  oha_ -z "${secs}s" -c "${C:-50}" --no-tui --output-format json "${args[@]}" 2>/dev/null > "$work/oha.json"
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  python3 - "$work/oha.json" "$t0" "$t1" "$(getconf CLK_TCK)" "$store" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t0, t1, hz = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
codes = d.get("statusCodeDistribution", {})
n = sum(codes.values()) or 1
other = {k: v for k, v in codes.items() if k != "200"}
print("%s rps=%.0f p50=%.2fms cordon_cpu_us_per_req=%.1f%s" % (
    sys.argv[5], d["summary"]["requestsPerSec"], d["latencyPercentiles"]["p50"] * 1000,
    (t1 - t0) / hz / n * 1e6, " NON-200=%s" % other if other else ""))
PY
}

out="$work/runs"
for _ in $(seq 1 "$rounds"); do
  for store in sqlite postgres; do run "$store" | tee -a "$out"; done
done
python3 - "$out" <<'PY'
import re, statistics, sys
rows = {"sqlite": [], "postgres": []}
for line in open(sys.argv[1]):
    store, rest = line.split(" ", 1)
    rows[store].append((float(re.search(r"rps=([\d.]+)", rest).group(1)),
                        float(re.search(r"cordon_cpu_us_per_req=([\d.]+)", rest).group(1))))
med = {k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
for k in ("sqlite", "postgres"):
    print("median %-8s rps=%.0f cpu_us=%.1f" % (k, *med[k]))
print("postgres/sqlite: rps %.3f, cpu per request %.3f" % (
    med["postgres"][0] / med["sqlite"][0], med["postgres"][1] / med["sqlite"][1]))
PY
