#!/usr/bin/env bash
# Build cordon's container image from scratch with buildah, without any network: nothing is pulled from a
# registry. The image holds only files taken from this machine:
#
#   /usr/bin/cordon                  the binary given (its debug information stripped from the copy)
#   the shared libraries it links    as ldd resolves them here (glibc, libgcc_s ...), at the same paths
#   /bin/busybox + /bin/sh ...       Debian's busybox, for prepare.sh in Kubernetes (the init container
#                                    cordon-prepare): sh, cp, chmod, mv, mkdir, grep, sed, wc, tr, cat ...
#   /usr/sbin/xtables-*-multi        Debian's iptables (both backends: iptables, iptables-nft,
#                                    iptables-legacy and their ip6tables twins) and its extensions, for
#                                    redirect.sh (the sidecar's init container cordon-redirect)
#   /etc/ssl/certs/ca-certificates.crt   Debian's CA bundle (prepare.sh puts it in front of a sandbox's CA)
#   /etc/passwd, /etc/group          root, cordon (UID and GID 1337, the UID redirect.sh exempts) and nobody
#   /etc/cordon/cordon.yaml          deploy/image/cordon.yaml: listeners and absolute state paths
#   /var/lib/cordon                  the state folder (0700, UID 1337), a volume
#
# It runs as UID 1337 and works on a read-only root file system (`--read-only`; readOnlyRootFilesystem in
# Kubernetes): everything cordon writes is under /var/lib/cordon.
#
#   deploy/image/build.sh BINARY ARCHIVE [NAME]        NAME defaults to localhost/cordon:VERSION
#
# Writes the image to ARCHIVE (an OCI archive: `podman load -i ARCHIVE`, `skopeo copy oci-archive:ARCHIVE
# docker://REGISTRY/cordon:VERSION`), replaces the local image NAME by the archive's, and prints
# NAME@sha256:DIGEST on its last line: the digest of the archive's manifest, which is the image's digest after a
# load and in a registry it is copied to as it is. The image's time stamps come from SOURCE_DATE_EPOCH (default:
# the commit's date), so the same binary and the same files give the same digest (.ci/image.sh builds twice to
# check); a new binary (every commit: `cordon --version` names it) gives a new one.
# Needs buildah, busybox, iptables and ca-certificates (Debian packages). docs/src/deploying/containers.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${1:?usage: deploy/image/build.sh BINARY ARCHIVE [NAME]}
archive=${2:?usage: deploy/image/build.sh BINARY ARCHIVE [NAME]}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
name=${3:-localhost/cordon:$version}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)

for tool in buildah podman busybox xtables-nft-multi xtables-legacy-multi ldd objcopy; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "deploy/image/build.sh: $tool is missing (apt-get install buildah podman busybox iptables binutils)" >&2
        exit 1
    }
done
bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$bundle" ] || { echo "deploy/image/build.sh: no $bundle (apt-get install ca-certificates)" >&2; exit 1; }

ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
root=$(buildah mount "$ctr")

# copy FILE [DEST]: FILE into the image at DEST (default: the same path), with every library it needs.
copy() {
    local file=$1 dest=${2:-$1}
    install -D -m 0755 "$file" "$root$dest"
    libs "$file"
}
# libs FILE: the shared libraries FILE needs, as ldd resolves them here, at the same paths (symlinks
# followed: the file lands under the name the loader asks for).
libs() {
    local lib
    for lib in $(ldd "$1" 2>/dev/null | grep -oE '/[^ ]+' || true); do
        [ -e "$root$lib" ] && continue
        install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
    done
}

# cordon, without its debug information (the release keeps it in cordon.debug: docs/src/releasing.md).
install -d "$root/usr/bin"
objcopy --strip-debug --strip-unneeded "$bin" "$root/usr/bin/cordon"
chmod 0755 "$root/usr/bin/cordon"
libs "$bin"

# busybox, and the applets prepare.sh (and a person debugging the pod) uses.
copy "$(command -v busybox)" /bin/busybox
for applet in sh cat chmod cp mv mkdir rm ls grep sed wc tr env basename dirname head id printf sleep; do
    ln -s busybox "$root/bin/$applet"
done

# iptables, both backends, and the extensions they load at run time (dlopen: not in ldd's answer).
for multi in xtables-nft-multi xtables-legacy-multi; do
    copy "$(command -v "$multi")" "/usr/sbin/$multi"
done
for cmd in iptables ip6tables; do
    for kind in "" -save -restore; do
        ln -s xtables-nft-multi "$root/usr/sbin/$cmd$kind"
        ln -s xtables-nft-multi "$root/usr/sbin/$cmd-nft$kind"
        ln -s xtables-legacy-multi "$root/usr/sbin/$cmd-legacy$kind"
    done
done
libxtables=$(ldd "$(command -v xtables-nft-multi)" | grep -oE '/[^ ]*libxtables[^ ]*')
xtables=$(dirname "$(readlink -f "$libxtables")")/xtables
[ -d "$xtables" ] || { echo "deploy/image/build.sh: no iptables extensions at $xtables" >&2; exit 1; }
install -d "$root$xtables"
for ext in "$xtables"/*.so; do
    install -m 0644 "$ext" "$root$ext"
    libs "$ext"
done

# Who is who, the CA bundle, the configuration, the state folder and a /tmp.
install -d -m 0755 "$root/etc" "$root/etc/ssl/certs" "$root/etc/cordon" "$root/usr/share/cordon" \
    "$root/usr/share/doc/cordon"
cat > "$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
cordon:x:1337:1337:cordon:/var/lib/cordon:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
PASSWD
cat > "$root/etc/group" <<'GROUP'
root:x:0:
cordon:x:1337:
nogroup:x:65534:
GROUP
echo 'hosts: files dns' > "$root/etc/nsswitch.conf"
install -m 0644 "$bundle" "$root/etc/ssl/certs/ca-certificates.crt"
install -m 0644 deploy/image/cordon.yaml "$root/etc/cordon/cordon.yaml"
install -m 0644 docs/cordon.schema.json "$root/usr/share/cordon/cordon.schema.json"
install -m 0644 LICENSE "$root/usr/share/doc/cordon/LICENSE"
install -d -m 0700 -o 1337 -g 1337 "$root/var/lib/cordon"
install -d -m 1777 "$root/tmp"
# Every file's time is the source's date, so that the layer is the same from the same inputs.
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
buildah umount "$ctr" >/dev/null

buildah config \
    --user 1337:1337 \
    --workingdir /var/lib/cordon \
    --env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    --env CORDON_CONFIG=/etc/cordon/cordon.yaml \
    --entrypoint '["/usr/bin/cordon"]' \
    --cmd '["run"]' \
    --volume /var/lib/cordon \
    --port 3128 --port 9090 --port 15001 --port 15053 --port 15053/udp \
    --label org.opencontainers.image.title=cordon \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    --label org.opencontainers.image.licenses=Apache-2.0 \
    --label org.opencontainers.image.source=https://github.com/cordon-proxy/cordon \
    --label "org.opencontainers.image.created=$created" \
    --created-by "deploy/image/build.sh" \
    "$ctr"
buildah commit --quiet --timestamp "$SOURCE_DATE_EPOCH" --rm "$ctr" "$name" >/dev/null
trap - EXIT

# The archive (its layer compressed), then the local image made from it, so that both have one digest.
rm -f "$archive"
buildah push --quiet --digestfile "$archive.digest-tmp" "$name" "oci-archive:$archive:${name#*/}" >/dev/null
digest=$(cat "$archive.digest-tmp")
rm -f "$archive.digest-tmp"
podman rmi --force "$name" >/dev/null
podman load --quiet --input "$archive" >/dev/null
[ "$(podman image inspect --format '{{.Digest}}' "$name")" = "$digest" ] ||
    { echo "deploy/image/build.sh: the loaded image is not the archive's ($digest)" >&2; exit 1; }
echo "$name@$digest"
