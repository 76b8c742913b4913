#!/usr/bin/env bash
# Make the Debian package, cordon_VERSION-1_ARCH.deb, with cargo-deb (Cargo.toml's [package.metadata.deb]):
# builds cordon with the cargo profile named (unless --no-build), stages what is made from the binary (the
# manual pages of every command, gzipped, and the bash, zsh and fish completions), then packages it. cargo-deb
# strips the binary (--strip); its debug information is the release's cordon-VERSION-TARGET.debug
# (deploy/release.sh), which gdb matches to it by build-id.
#
#   deploy/debian/build.sh [--profile release] [--no-build] [--output DIR] [--fast]
#
# Makes cordon_VERSION-1_ARCH.deb in DIR (default: the target folder's debian/) and prints its path on its last
# line. --fast compresses less (CI: the same files, a larger package, made in a fraction of the time).
# Needs cargo-deb (`cargo install --locked cargo-deb@3.8.0`), dpkg-dev (dpkg-shlibdeps, for the library
# dependencies) and binutils (strip). docs/src/releasing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

profile=release
build=1
output=
fast=()
while [ $# -gt 0 ]; do
    case "$1" in
    --profile) profile=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --output) output=$2; shift 2 ;;
    --fast) fast=(--fast); shift ;;
    *) echo "deploy/debian/build.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

target=${CARGO_TARGET_DIR:-target}
# The dev profile's folder is debug/. cargo-deb packages it with a warning that it is meant for releases: CI
# packages the binary its tests built (docs/src/releasing.md says why), and a release never does.
case "$profile" in
dev) dir=$target/debug ;;
*) dir=$target/$profile ;;
esac
output=${output:-$target/debian}

if [ "$build" = 1 ]; then
    cargo build --profile "$profile" --locked --bin cordon >&2
fi
bin=$dir/cordon
[ -x "$bin" ] || { echo "deploy/debian/build.sh: no $bin (build it, or drop --no-build)" >&2; exit 1; }

# What the binary says about itself, staged where Cargo.toml's assets name it (target/release/deb-staging/,
# which cargo-deb maps to this profile's folder).
stage=$dir/deb-staging
rm -rf "$stage"
mkdir -p "$stage/man" "$stage/completions"

# One manual page per command, following the pages each page lists as its subcommands (`cordon-sandbox(1)`;
# clap's own `help` commands left out). gzip -n: no name or time stamp in the archive, so the same binary gives
# the same package.
man_pages() {
    local name=$1
    shift
    "$bin" man "$@" > "$stage/man/$name.1"
    local child
    for child in $(sed -n 's/\\-/-/g; s/^\(cordon-[a-z0-9-]*\)(1)$/\1/p' "$stage/man/$name.1"); do
        local word=${child#"$name"-}
        [ "$word" != "$child" ] || continue
        [ "$word" = help ] && continue
        man_pages "$child" "$@" "$word"
    done
}
man_pages cordon
gzip -9n "$stage"/man/*.1

"$bin" completions bash > "$stage/completions/cordon.bash"
"$bin" completions zsh > "$stage/completions/_cordon"
"$bin" completions fish > "$stage/completions/cordon.fish"

# The Debian changelog (usr/share/doc/cordon/changelog.Debian.gz): one entry for this build of the upstream
# version; the changes themselves are CHANGELOG.md, installed as changelog.gz.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
maintainer=$(sed -n 's/^maintainer = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
{
    echo "cordon ($version-1) unstable; urgency=medium"
    echo
    echo "  * cordon $version, built from commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)."
    echo "    The changes are in /usr/share/doc/cordon/changelog.gz."
    echo
    echo " -- $maintainer  $(LC_ALL=C date -u -R -d "@$epoch")"
} > "$stage/changelog.Debian"
gzip -9n "$stage/changelog.Debian"

mkdir -p "$output"
rm -f "$output"/cordon_*.deb
cargo deb --profile "$profile" --no-build --strip "${fast[@]}" --output "$output" >&2
ls "$output"/cordon_"$version"-1_*.deb
