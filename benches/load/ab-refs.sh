#!/usr/bin/env bash
# The intercept path's A/B between two commits, in one command: build each commit's release binary once (in a
# git worktree of its own, removed afterwards; binaries kept in $BINS by commit, so a re-run builds nothing it
# already has), set up and start the rig (nginx and oha only), then run ab.sh, alternating A and B, for the
# keep-alive and the new-connection intercept scenarios.
#
#   bash benches/load/ab-refs.sh [REF_A=6dece48] [REF_B=HEAD] [ROUNDS=8] [SECONDS=6]
#     SCENARIOS='intercept newconn'   the profile.sh scenarios to compare
#     BINS=/root/.cache/bench-bins    where the binaries are kept (cordon-<commit>)
#     PEER_RIG_ROOT=/root/.cache/bench-rig
#     CARGO_BUILD_BUILD_DIR           shared with other builds when set (compiled dependencies are reused)
# The data plane's rework: `bash benches/load/ab-refs.sh 6dece48 main` (BENCHMARKS.md, "The shape, measured").
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
ref_a=${1:-6dece48}; ref_b=${2:-HEAD}; rounds=${3:-8}; secs=${4:-6}
BINS=${BINS:-/root/.cache/bench-bins}
export PEER_RIG_ROOT=${PEER_RIG_ROOT:-/root/.cache/bench-rig}
mkdir -p "$BINS"

build() { # commit -> path of its release binary
  local sha bin wt out
  sha=$(git -C "$repo" rev-parse --short=10 "$1^{commit}")
  bin="$BINS/cordon-$sha"
  if [ ! -x "$bin" ]; then
    wt="$(mktemp -d)/src"; out="${BENCH_OUT:-/root/.cache}/out-ab-$sha"
    git -C "$repo" worktree add --detach "$wt" "$sha" >&2
    (cd "$wt" && CARGO_TARGET_DIR="$out" cargo build --release --locked --quiet) >&2
    cp "$out/release/cordon" "$bin"
    git -C "$repo" worktree remove --force "$wt" >&2
    rm -rf "$out"   # only the binary is kept (disk is tight)
  fi
  echo "$bin"
}
bin_a=$(build "$ref_a"); bin_b=$(build "$ref_b")
echo "== A: $ref_a ($bin_a)"; echo "== B: $ref_b ($bin_b)"
[ -f "$PEER_RIG_ROOT/ca/nginx.pem" ] && command -v oha >/dev/null || LOAD_RIG_PEERS=0 bash "$repo/benches/load/rig/setup.sh"
LOAD_RIG_PEERS=0 bash "$repo/benches/load/rig/start.sh"
# What it started is stopped when the A/B ends, however it ends: a rig left up holds its ports for the next one.
trap 'bash "$repo/benches/load/rig/stop.sh" >/dev/null' EXIT
echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for scenario in ${SCENARIOS:-intercept newconn}; do
  echo "== $scenario: $rounds rounds of ${secs} s, A B alternating"
  bash "$repo/benches/load/ab.sh" "$bin_a" "$bin_b" "$scenario" "$rounds" "$secs"
done
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
