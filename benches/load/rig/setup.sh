#!/usr/bin/env bash
# Sets up the load harness's rig in $PEER_RIG_ROOT (a scratch folder): the upstream every run shares and the
# peer proxies cordon is measured against, all on 127.0.0.1.
#
#   nginx       :18080 HTTP, :18443 HTTPS (h2 and HTTP/1.1), serving /1k.txt (1024 bytes), /4m.bin and /health
#   squid       :13128 HTTP forward and CONNECT splice; :13129 ssl_bump (TLS interception with its own CA)
#   mitmdump    :18081 TLS interception (mitmproxy from PyPI, in a venv under the rig)
#   oha         the load generator (crates.io)
#
# Installs from the registries (Debian: nginx, squid-openssl, dnsmasq-base; PyPI: mitmproxy; crates.io: oha), writes the
# configurations and a test PKI, and is safe to run again. Then: start.sh, and stop.sh when done.
# With LOAD_RIG_PEERS=0 (run.sh --smoke) only nginx, the PKI and oha: no squid, no mitmproxy.
set -euo pipefail
ROOT="${PEER_RIG_ROOT:?set PEER_RIG_ROOT to a scratch folder for the rig}"
here="$(cd "$(dirname "$0")" && pwd)"

PEERS="${LOAD_RIG_PEERS:-1}"
missing=()
command -v nginx >/dev/null 2>&1 || missing+=(nginx)
[ "$PEERS" = 0 ] || [ -x /usr/lib/squid/security_file_certgen ] || missing+=(squid-openssl)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v dnsmasq >/dev/null 2>&1 || missing+=(dnsmasq-base)
python3 -c 'import venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Debian starts the packaged services on install; the rig runs its own instances on its own ports.
for unit in nginx squid; do
  systemctl stop "$unit" >/dev/null 2>&1 || service "$unit" stop >/dev/null 2>&1 || true
done

mkdir -p "$ROOT"/{ca,nginx/tmp,squid,mitm/conf,www,run}
for f in nginx squid; do sed "s#@ROOT@#$ROOT#g" "$here/$f.conf.in" > "$ROOT/$f/$f.conf"; done
[ -s "$ROOT/www/1k.txt" ] || head -c 768 /dev/urandom | base64 -w0 > "$ROOT/www/1k.txt"
# A bulk download (the tunnel-bulk scenario: what splice(2) changes is the cost per byte, not per request).
[ -s "$ROOT/www/4m.bin" ] || head -c 4194304 /dev/urandom > "$ROOT/www/4m.bin"
# A streamed model answer of 200 events (the sse and llm scenarios: the same answer, metered or not).
python3 - "$ROOT/www/messages-200.sse" <<'PY'
import json, sys
ev = lambda name, data: "event: %s\ndata: %s\n\n" % (name, json.dumps(data, separators=(",", ":")))
out = [ev("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-bench", "content": [], "usage": {"input_tokens": 40, "output_tokens": 1}}})]
out.append(ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
out += [ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "w%d " % i}})
        for i in range(198)]
out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 198}}))
out.append(ev("message_stop", {"type": "message_stop"}))
open(sys.argv[1], "w").write("".join(out))
PY
[ -f "$ROOT/ca/nginx.pem" ] || bash "$here/certs.sh" "$ROOT/ca"
command -v oha >/dev/null 2>&1 || cargo install --locked --quiet oha@1.16.0
if [ "$PEERS" = 0 ]; then
  echo "rig ready in $ROOT without peers (start it with $here/start.sh)"
  exit 0
fi
# mitmdump's own CA, made once by mitmdump itself on first start, lives in $ROOT/mitm/conf.
[ -x "$ROOT/venv/bin/mitmdump" ] || {
  python3 -m venv "$ROOT/venv"
  "$ROOT/venv/bin/pip" install --quiet 'mitmproxy==11.0.2'
}
# squid's certificate generator keeps minted leaves in a database of its own.
[ -d "$ROOT/squid/ssl_db" ] || /usr/lib/squid/security_file_certgen -c -s "$ROOT/squid/ssl_db" -M 16MB >/dev/null
chown -R proxy:proxy "$ROOT/squid"
echo "rig ready in $ROOT (start it with $here/start.sh)"
