#!/usr/bin/env bash
# CI: the field's own suites against cordon (issue 53): sslyze on every TLS listener, pkilint on the
# certificates cordon makes, HTTP/2 abuse through the interception (the h2 library's framing), and request
# smuggling probes through cordon to nginx. Each prints a case per line and a closing 'N passed, N failed', and
# exits non-zero on a failure or when it ran no case; this prints the seconds each took.
#
# Usage: CORDON_BIN=path/to/cordon bash .ci/suites.sh [SUITE...]   (suites: tls_scan pki_lint h2_abuse smuggling)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CORDON_BIN:?set CORDON_BIN to the cordon binary to test}"
export CORDON_BIN
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(tls_scan pki_lint h2_abuse smuggling)
failed=()
times=()
for s in "${suites[@]}"; do
  echo "== $s (.ci/suites/$s.py)"
  start=$(date +%s)
  if ! timeout 600 python3 ".ci/suites/$s.py"; then
    failed+=("$s")
  fi
  times+=("$s $(($(date +%s) - start))s")
done
echo "suites took: ${times[*]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "suites FAILED: ${failed[*]}"
  exit 1
fi
