#!/usr/bin/env bash
# CI: a short run of every cargo-fuzz target (about a minute of fuzzing in all), from a copy of the seed
# corpora, so that the targets keep building and a crash the seeds reach quickly fails the build. The long run
# and what each target checks are in docs/src/fuzzing.md.
#
# Exits non-zero if a target fails to build or run, or finds a crash (the crashing input's path is printed).
# Prints, per target, the executions done, exec/s, and the coverage (cov) and features (ft) libFuzzer reached.
set -euo pipefail
cd "$(dirname "$0")/.."

# Seconds of fuzzing per target; 11 targets.
SECONDS_EACH="${FUZZ_SECONDS_EACH:-7}"
TARGETS=(framing target proxy_auth ip_guard secrets sni dns_query config graphql mcp websocket)
CARGO_FUZZ_VERSION=0.13.2

# CI builds the targets in the dev profile (debug assertions and overflow checks on, no optimisation): a cold
# build takes about 10 minutes on 2 cores against about 31 for the release profile, which dominated a cold CI
# run. The short run still builds every target and runs every seed; it makes about a sixteenth of the
# executions. FUZZ_PROFILE=release gives the figures of docs/src/fuzzing.md.
PROFILE="${FUZZ_PROFILE:-dev}"
case "$PROFILE" in
  dev) PROFILE_FLAG=(--dev) ;;
  release) PROFILE_FLAG=() ;;
  *) echo "FUZZ_PROFILE must be dev or release, not '$PROFILE'" >&2; exit 2 ;;
esac
export CARGO_TARGET_DIR="${CARGO_FUZZ_TARGET_DIR:-$HOME/.cache/cordon-fuzz-target}"
export CARGO_TERM_COLOR=never

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"

echo "== cargo fuzz build ($PROFILE profile)"
cargo +nightly fuzz build "${PROFILE_FLAG[@]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
printf '%-11s %12s %9s %7s %7s  %s\n' target executions exec/s cov ft result
for t in "${TARGETS[@]}"; do
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  cp -R "fuzz/corpus/$t/." "$work/corpus/$t/"
  log="$work/$t.log"
  status=ok
  # Later libFuzzer flags win: the artifacts (crashes) go to the temporary folder, not into fuzz/.
  if ! cargo +nightly fuzz run "${PROFILE_FLAG[@]}" "$t" "$work/corpus/$t" -- \
    -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t/" >"$log" 2>&1; then
    status=FAILED
  fi
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | cut -d' ' -f2)"
  ft="$(grep -o 'ft: [0-9]*' "$log" | tail -n1 | cut -d' ' -f2)"
  printf '%-11s %12s %9s %7s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$status"
  if [ "$status" != ok ]; then
    failed+=("$t")
    mkdir -p "fuzz/artifacts/$t"
    cp -R "$work/artifacts/$t/." "fuzz/artifacts/$t/" 2>/dev/null || true
    grep -E 'panicked at|^SUMMARY|ERROR: libFuzzer' -A3 "$log" | head -n 20 || tail -n 30 "$log"
    for crash in "$work/artifacts/$t/"*; do
      [ -e "$crash" ] && echo "crash input: fuzz/artifacts/$t/$(basename "$crash")" \
        "(reproduce: cargo +nightly fuzz run $t fuzz/artifacts/$t/$(basename "$crash"))"
    done
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzzing: no crash in ${#TARGETS[@]} targets (${SECONDS_EACH}s each, $PROFILE profile)"
