#!/usr/bin/env bash
# Starts the rig set up by setup.sh (nginx, squid, mitmdump) in the background, each recorded in
# $PEER_RIG_ROOT/run/NAME.pid, and waits until every port answers. Already running parts are left alone.
set -euo pipefail
ROOT="${PEER_RIG_ROOT:?set PEER_RIG_ROOT to the rig folder}"
run="$ROOT/run"
mkdir -p "$run"
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start() { # name, port, command...
  local name=$1 port=$2; shift 2
  if up "$port"; then
    # Only this rig's own server may be reused: another one on the port (another rig's nginx, with another CA)
    # would fail every request with a certificate error far from its cause.
    local pid; pid=$(cat "$run/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "$name: already up on $port"; return; fi
    echo "$name: port $port is taken by a process this rig ($ROOT) did not start; stop it first:" >&2
    (ss -ltnp "sport = :$port" 2>/dev/null || true) >&2
    exit 1
  fi
  "$@" > "$run/$name.out" 2>&1 &
  echo $! > "$run/$name.pid"
}
start nginx 18443 nginx -c "$ROOT/nginx/nginx.conf"
ports=(18080 18443)
if [ "${LOAD_RIG_PEERS:-1}" != 0 ]; then
  start squid 13128 squid -N -f "$ROOT/squid/squid.conf"
  start mitmdump 18081 "$ROOT/venv/bin/mitmdump" -q --listen-host 127.0.0.1 -p 18081 \
    --set confdir="$ROOT/mitm/conf" --set ssl_verify_upstream_trusted_ca="$ROOT/ca/upstream-ca.pem"
  ports+=(13128 13129 18081)
fi
for port in "${ports[@]}"; do
  for _ in $(seq 100); do
    up "$port" && break
    for name in nginx squid mitmdump; do
      pid=$(cat "$run/$name.pid" 2>/dev/null || true)
      if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
        echo "$name exited; its output:" >&2; cat "$run/$name.out" >&2; exit 1
      fi
    done
    sleep 0.1
  done
  up "$port" || { echo "port $port did not come up; see $run/*.out" >&2; exit 1; }
done
echo "rig up on ports ${ports[*]} (nginx 18080/18443, squid 13128/13129, mitmdump 18081)"
