#!/usr/bin/env bash
# Stops what start.sh started (by the recorded pids), politely first.
set -uo pipefail
ROOT="${PEER_RIG_ROOT:?set PEER_RIG_ROOT to the rig folder}"
for name in mitmdump squid nginx; do
  pidfile="$ROOT/run/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    if [ "$name" = nginx ]; then kill -QUIT "$pid"; else kill -TERM "$pid"; fi
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$pidfile"
  echo "$name stopped"
done
