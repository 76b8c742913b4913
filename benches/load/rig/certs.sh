#!/usr/bin/env bash
# The rig's test PKI, in folder $1:
#   upstream-ca.pem/.key   the CA the upstream's certificate chains to (what a real origin's CA is; every proxy,
#                          and the direct runs, trust it)
#   nginx.pem/.key         the upstream's certificate: localhost, upstream.test, 127.0.0.1
#   squid-ca.pem/.key      squid's ssl_bump CA (the analogue of cordon's per-sandbox CA)
# Test material only; squid's workers run as user proxy and must read it.
set -euo pipefail
dir="${1:?folder}"
mkdir -p "$dir"
cd "$dir"
ca() { # name, common name
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
ca upstream-ca "cordon load rig upstream CA"
ca squid-ca "cordon load rig squid bump CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=upstream.test" \
  -keyout nginx.key -out nginx.csr 2>/dev/null
printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" \
  "subjectAltName=DNS:localhost,DNS:upstream.test,IP:127.0.0.1" > nginx.ext
openssl x509 -req -in nginx.csr -CA upstream-ca.pem -CAkey upstream-ca.key -CAcreateserial -days 825 \
  -extfile nginx.ext -out nginx.pem 2>/dev/null
rm -f nginx.csr nginx.ext upstream-ca.srl
chmod 0644 ./*.pem ./*.key
