#!/usr/bin/env bash
# Make a release's artifacts in one folder, with their checksums and a detached signature (docs/src/releasing.md):
#
#   cordon-VERSION-TARGET              the binary, stripped, with a .gnu_debuglink to:
#   cordon-VERSION-TARGET.debug        its debug information (for crash reports: gdb and addr2line read it)
#   cordon_VERSION-1_ARCH.deb          the Debian package (deploy/debian/build.sh)
#   cordon-image-VERSION.oci.tar       the container image as an OCI archive (deploy/image/build.sh), and
#   cordon-image-VERSION.digest        its name and digest as built, NAME@sha256:...
#   SHA256SUMS                         sha256sum of each of the above
#   SHA256SUMS.minisig                 minisign's detached signature of SHA256SUMS
#
#   deploy/release.sh --key SECRET_KEY --pubkey PUBLIC_KEY [--profile release] [--out dist]
#   deploy/release.sh --dry-run [--profile release] [--no-build] [--fast] [--out DIR]
#
# A release needs a clean tree whose HEAD is tagged vVERSION (Cargo.toml's version); minisign asks for the key's
# password. --dry-run skips those checks and signs with a throwaway key made for the run (the artifacts are
# then good for testing only: CI runs it so). Either way the signature and every checksum are verified before
# the script ends. --no-build packages the binary the profile already has; --fast compresses the .deb less.
# Needs cargo, cargo-deb, buildah, busybox, iptables, binutils, dpkg-dev and minisign.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
out=dist
build=1
dry=0
key=
pubkey=
fast=()
while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) dry=1; shift ;;
    --profile) profile=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --fast) fast=(--fast); shift ;;
    --key) key=$2; shift 2 ;;
    --pubkey) pubkey=$2; shift 2 ;;
    *) echo "deploy/release.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
say() { printf 'release: %s\n' "$*"; }
die() { printf 'release: error: %s\n' "$*" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
target_triple=$(rustc -vV | sed -n 's/^host: //p')
commit=$(git rev-parse --short=12 HEAD)
if [ "$dry" = 0 ]; then
    [ -n "$key" ] && [ -n "$pubkey" ] || die "a release is signed: give --key and --pubkey (or --dry-run)"
    [ -z "$(git status --porcelain)" ] || die "the tree has changes that are not committed"
    git describe --exact-match --tags HEAD 2>/dev/null | grep -qx "v$version" ||
        die "HEAD is not tagged v$version (docs/src/releasing.md: bump, changelog, tag, then this)"
fi

target=${CARGO_TARGET_DIR:-target}
if [ "$profile" = dev ]; then
    [ "$dry" = 1 ] || die "a release is built with the release profile, not dev"
    bin=$target/debug/cordon
else
    bin=$target/$profile/cordon
fi
if [ "$build" = 1 ]; then
    say "building cordon with the $profile profile"
    cargo build --profile "$profile" --locked --bin cordon
fi
[ -x "$bin" ] || die "no $bin (build it, or drop --no-build)"
# The binary must be this commit's: --version names the commit it was built from.
"$bin" --version | grep -qF "commit $commit" ||
    die "$bin is not built from HEAD ($commit): $("$bin" --version)"

rm -rf "$out"
mkdir -p "$out"
name=cordon-$version-$target_triple

say "the binary, stripped, and its debug information"
objcopy --only-keep-debug "$bin" "$out/$name.debug"
objcopy --strip-debug --strip-unneeded "$bin" "$out/$name"
# The link names the file without its folder, so gdb finds it beside the binary or under /usr/lib/debug.
(cd "$out" && objcopy --add-gnu-debuglink="$name.debug" "$name")
chmod 0755 "$out/$name"
chmod 0644 "$out/$name.debug"
"$out/$name" --version | grep -qF "$version (commit $commit" || die "the stripped binary does not run"

say "the Debian package"
deb=$(deploy/debian/build.sh --profile "$profile" --no-build "${fast[@]}" --output "$out" | tail -n 1)
[ -f "$deb" ] || die "deploy/debian/build.sh made no package ($deb)"

say "the container image"
image=$(deploy/image/build.sh "$bin" "$out/cordon-image-$version.oci.tar" "localhost/cordon:$version" | tail -n 1)
echo "$image" > "$out/cordon-image-$version.digest"

say "checksums and signature"
(cd "$out" && sha256sum -- * > SHA256SUMS)
if [ "$dry" = 1 ]; then
    keys=$(mktemp -d)
    trap 'rm -rf "$keys"' EXIT
    minisign -G -W -p "$keys/throwaway.pub" -s "$keys/throwaway.key" > /dev/null
    key=$keys/throwaway.key
    pubkey=$keys/throwaway.pub
    cp "$pubkey" "$out/THROWAWAY-KEY.pub"
fi
minisign -S -s "$key" -m "$out/SHA256SUMS" -t "cordon $version ($commit, $target_triple)" > /dev/null
minisign -V -p "$pubkey" -m "$out/SHA256SUMS" > /dev/null || die "the signature does not verify"
(cd "$out" && sha256sum --quiet -c SHA256SUMS) || die "a checksum does not match"

say "made in $out/ (verified: signature and checksums)"
(cd "$out" && ls -l)
if [ "$dry" = 1 ]; then
    say "DRY RUN: signed with a throwaway key ($out/THROWAWAY-KEY.pub); nothing here is a release"
fi
