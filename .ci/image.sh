#!/usr/bin/env bash
# CI: the container image (deploy/image/build.sh) as a person gets it: loaded from the release's archive, then
# run read-only, as UID 1337, with a request through it (docs/src/deploying/containers.md, "The image").
#
#   bash .ci/image.sh ARCHIVE DIGEST_FILE [DEBUG_FILE BINARY]
#
# with the files of deploy/release.sh (dist/cordon-image-VERSION.oci.tar and .digest, the binary's .debug) and
# the binary the image was built from.
# 0. with BINARY: deploy/image/build.sh again from it gives the same digest (the build is reproducible);
# 1. the image is loaded from the archive (after removing any copy, so the load is what a new machine does);
#    its digest is the one the build printed;
# 2. its layout, checked without a container runtime (buildah mount, chroot): the configuration (user 1337,
#    entrypoint, CORDON_CONFIG, the state volume), only the files deploy/image/build.sh puts there (no package
#    manager, no shell beyond busybox), cordon stripped and of the build the debug file describes (build-id), and
#    cordon, iptables (both backends) and busybox's sh running from the image's own libraries; prepare.sh and
#    redirect.sh parse with the image's sh; the Kubernetes kustomizations name this image;
# 3. when this machine can run a container (podman with runc; crun refuses the hybrid cgroups some hosts have):
#    cordon in the image, `--read-only`, as the image's user, in a network namespace made for the test (loopback
#    only), configured as the README's walkthrough (a secret put in the vault through the image, the state on a
#    volume); intercepted HTTPS gets the credential added, a POST its policy does not allow is refused; the
#    root file system refuses a write; `podman stop` ends it with status 0; and redirect.sh, the sidecar's init
#    container, run from the image as the pod runs it, leaves its rules with both iptables backends. Where a
#    container cannot run, the test says why and ends after step 2 (CORDON_REQUIRE_CONTAINER=1, which CI sets,
#    makes that a failure).
# It prints how long the load, the start and the first intercepted request took.
# Needs root, podman, buildah, runc, ip, curl, openssl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
usage="usage: .ci/image.sh ARCHIVE DIGEST_FILE [DEBUG_FILE BINARY]"
archive=$(readlink -f "${1:?$usage}")
expected=$(cat "${2:?$usage}")
debug=${3:-}
binary=${4:-}
name=${expected%@*}
digest=${expected#*@}

passed=0
ok() {
    passed=$((passed + 1))
    printf '  ok   %s\n' "$*"
}
fail() {
    printf '  FAIL %s\n' "$*"
    exit 1
}
step() { printf '== %s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
deadline() { # deadline SECONDS WHAT COMMAND...: run COMMAND every 0.1 s until it succeeds, or fail after SECONDS.
    local limit=$1 what=$2
    shift 2
    local end=$((SECONDS + limit))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || fail "$what: not within $limit s"
        sleep 0.1
    done
}

work=$(mktemp -d)
ns=cordon-img-$$
ctr=
volume=cordon-img-state-$$
container=cordon-img-$$
upstream_pid=
cleanup() {
    local rc=$?
    set +e
    [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
    podman rm -f -t 0 "$container" >/dev/null 2>&1
    podman volume rm -f "$volume" >/dev/null 2>&1
    [ -n "$upstream_pid" ] && kill -9 "$upstream_pid" 2>/dev/null && wait "$upstream_pid" 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    ip netns del "$ns-redirect" 2>/dev/null
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT

# podman's limits, given: its defaults ask for more open files and processes than this machine's hard limits,
# which runc is refused. Open files: the systemd unit's 65536, or this machine's hard limit when lower.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
run=(podman --runtime runc run --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)

if [ -n "$binary" ]; then
    step "built again from the same binary"
    again=$(deploy/image/build.sh "$binary" "$work/again.oci.tar" "$name" | tail -n 1)
    [ "$again" = "$expected" ] || fail "a second build gives $again, the first gave $expected"
    ok "the same digest: $digest"
fi

step "loaded from the archive"
podman rmi -f "$name" >/dev/null 2>&1 || true
t_load=$(now)
podman load -q -i "$archive" > "$work/load.txt" || fail "podman load -i $archive"
load_s=$(since "$t_load")
loaded=$(sed -n 's/^Loaded image: //p' "$work/load.txt" | head -n 1)
[ "$loaded" = "$name" ] || fail "the archive holds $loaded, the build named $name"
got=$(podman image inspect --format '{{.Digest}}' "$name")
[ "$got" = "$digest" ] || fail "the loaded image's digest is $got, the build printed $digest"
size=$(podman image inspect --format '{{.Size}}' "$name")
ok "$name@$digest loaded in ${load_s} s ($((size / 1000000)) MB)"

step "the image's layout"
inspect() { podman image inspect --format "$1" "$name"; }
[ "$(inspect '{{.Config.User}}')" = 1337:1337 ] || fail "the image's user is $(inspect '{{.Config.User}}')"
entrypoint=$(inspect '{{json .Config.Entrypoint}}')
[ "$entrypoint" = '["/usr/bin/cordon"]' ] || fail "entrypoint $entrypoint"
[ "$(inspect '{{json .Config.Cmd}}')" = '["run"]' ] || fail "cmd $(inspect '{{json .Config.Cmd}}')"
inspect '{{json .Config.Env}}' | grep -q '"CORDON_CONFIG=/etc/cordon/cordon.yaml"' || fail "no CORDON_CONFIG"
inspect '{{json .Config.Volumes}}' | grep -q '"/var/lib/cordon"' || fail "/var/lib/cordon is not a volume"
[ "$(inspect '{{len .RootFS.Layers}}')" = 1 ] || fail "more than one layer: not built from scratch"
ok "user 1337:1337, entrypoint cordon, CORDON_CONFIG, /var/lib/cordon a volume, one layer (from scratch)"
ctr=$(buildah from --pull-never "$name")
root=$(buildah mount "$ctr")
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort) > "$work/files.txt"
unexpected=$(grep -vE '^\./(bin|bin/[a-z0-9]+|etc|etc/(passwd|group|nsswitch\.conf|ssl|ssl/certs|ssl/certs/ca-certificates\.crt|cordon|cordon/cordon\.yaml)|usr|usr/bin|usr/bin/cordon|usr/sbin|usr/sbin/(x|ip6?)tables[a-z0-9-]*|usr/share|usr/share/cordon|usr/share/cordon/cordon\.schema\.json|usr/share/doc|usr/share/doc/cordon|usr/share/doc/cordon/LICENSE|var|var/lib|var/lib/cordon|tmp|lib|usr/lib|lib64|lib64/ld-linux-x86-64\.so\.2|(usr/)?lib/x86_64-linux-gnu(/[^/]+\.so[.0-9]*|/xtables(/lib[A-Za-z0-9_]+\.so)?)?)$' "$work/files.txt" || true)
[ -z "$unexpected" ] || fail "files the build does not put there: $unexpected"
ok "$(wc -l < "$work/files.txt") paths, each one deploy/image/build.sh puts there (no package manager, no other shell)"
if readelf -S "$root/usr/bin/cordon" | grep -q '\.debug_info'; then fail "the image's cordon has .debug_info"; fi
build_id() { readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'; }
if [ -n "$debug" ]; then
    [ "$(build_id "$root/usr/bin/cordon")" = "$(build_id "$debug")" ] ||
        fail "the image's cordon is not the build $debug describes"
    ok "cordon is stripped; its build-id is the one of $(basename "$debug")"
else
    ok "cordon is stripped"
fi
version=$(chroot "$root" /usr/bin/cordon --version) || fail "cordon does not run from the image's libraries"
chroot "$root" /usr/sbin/iptables-nft --version | grep -q nf_tables || fail "iptables-nft in the image"
chroot "$root" /usr/sbin/iptables-legacy --version | grep -q legacy || fail "iptables-legacy in the image"
chroot "$root" /usr/sbin/ip6tables --version > /dev/null || fail "ip6tables in the image"
[ "$(chroot "$root" /bin/sh -c 'echo ok')" = ok ] || fail "busybox's sh in the image"
for script in prepare.sh redirect.sh; do
    chroot "$root" /bin/sh -n < "deploy/kubernetes/scripts/$script" || fail "$script does not parse with the image's sh"
done
ok "from the image's own libraries: $version; iptables (nft, legacy, ip6tables); sh parses prepare.sh and redirect.sh"
buildah umount "$ctr" >/dev/null
buildah rm "$ctr" >/dev/null
ctr=
for kustomization in deploy/kubernetes/sidecar/kustomization.yaml deploy/kubernetes/gateway/kustomization.yaml; do
    named=$(python3 - "$kustomization" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
[image] = [i for i in doc["images"] if i["name"] == "cordon"]
print(f'{image["newName"]}:{image["newTag"]}')
PY
)
    [ "$named" = "$name" ] || fail "$kustomization names $named, the build makes $name"
done
ok "the Kubernetes kustomizations name $name"

step "running it"
if ! "${run[@]}" --rm --network none "$name" --version > "$work/trial.txt" 2>&1; then
    reason=$(tr '\n' ' ' < "$work/trial.txt")
    if [ "${CORDON_REQUIRE_CONTAINER:-0}" = 1 ]; then
        fail "no container runs on this machine: $reason"
    fi
    echo "  not run: this machine cannot run a container (podman --runtime runc said: $reason)."
    echo "  The image's layout is checked above; running it is not."
    echo "image: $passed passed, 0 failed"
    exit 0
fi
ok "a container runs here (podman --runtime runc)"

(
    cd "$work"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=image-ca \
        -keyout upstream-ca.key -out upstream-ca.pem 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=api.local.test \
        -addext subjectAltName=DNS:api.local.test -keyout api.key -out api.csr 2>/dev/null
    openssl x509 -req -in api.csr -CA upstream-ca.pem -CAkey upstream-ca.key -days 1 -copy_extensions copy \
        -out api.pem 2>/dev/null
    chmod 0644 upstream-ca.pem
)
# The image's own configuration with the walkthrough's sandbox, policy and credential in place of its empty
# lists: its listeners and absolute state paths are the image's.
podman image inspect "$name" > /dev/null
{
    sed '/^sandboxes: \[\]$/,$d' deploy/image/cordon.yaml
    cat .ci/walkthrough-policy.yaml
} > "$work/cordon.yaml"
chmod 0644 "$work/cordon.yaml"
chmod 0755 "$work"
mounts=(-v "$volume:/var/lib/cordon" -v "$work/cordon.yaml:/etc/cordon/cordon.yaml:ro"
    -v "$work/upstream-ca.pem:/etc/cordon/upstream-ca.pem:ro")
podman volume create "$volume" > /dev/null
printf %s 'sk-demo-1234' | "${run[@]}" --rm -i --read-only --network none "${mounts[@]}" "$name" \
    vault set demo-api-key > "$work/vault.log" 2>&1 \
    || fail "cordon vault set through the image: $(cat "$work/vault.log")"
ok "a secret in the vault on the state volume, set through the image"

ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" python3 "$repo/config/examples/echo_https.py" "$work/api.pem" "$work/api.key" 8443 \
    > /dev/null 2>&1 &
upstream_pid=$!
t_start=$(now)
"${run[@]}" -d --name "$container" --read-only --network "ns:/run/netns/$ns" "${mounts[@]}" "$name" > /dev/null \
    || fail "podman run"
listening() { ip netns exec "$ns" bash -c 'echo > /dev/tcp/127.0.0.1/3128' 2>/dev/null; }
deadline 30 "cordon in the container to listen (podman logs $container)" listening
start_s=$(since "$t_start")
ok "listening ${start_s} s after podman run"
[ "$(podman exec "$container" id -u)" = 1337 ] || fail "the container runs as $(podman exec "$container" id -u)"
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$container")" = true ] || fail "not read-only"
if podman exec "$container" sh -c 'echo x > /etc/cordon/written' 2>/dev/null; then
    fail "the root file system took a write"
fi
ok "UID 1337, read-only root file system (a write to /etc is refused)"
podman exec "$container" cordon ca export --sandbox demo > "$work/demo-ca.pem" || fail "cordon ca export"
proxy=http://demo:demo-token@127.0.0.1:3128
t_request=$(now)
ip netns exec "$ns" curl -s --max-time 20 --cacert "$work/demo-ca.pem" -x "$proxy" \
    https://api.local.test:8443/v1/models > "$work/answer.json" || fail "the intercepted request"
request_s=$(since "$t_request")
grep -q '"authorization": "Bearer sk-demo-1234"' "$work/answer.json" ||
    fail "the API did not get the credential: $(cat "$work/answer.json")"
ok "intercepted HTTPS through the image: the API got the credential the sandbox never held (${request_s} s)"
got=$(ip netns exec "$ns" curl -s --max-time 20 -o /dev/null -w '%{http_code} %header{x-cordon-reason}' \
    --cacert "$work/demo-ca.pem" -x "$proxy" -X POST https://api.local.test:8443/v1/models)
[ "$got" = "403 method_not_allowed" ] || fail "a POST its policy does not allow: $got"
ok "refused inside TLS: a POST (403 method_not_allowed)"
podman stop -t 30 "$container" > /dev/null || fail "podman stop"
code=$(podman inspect --format '{{.State.ExitCode}}' "$container")
[ "$code" = 0 ] || fail "cordon exited $code on stop: $(podman logs --tail 5 "$container" 2>&1)"
ok "podman stop: exit 0"

# The sidecar's init container: redirect.sh run from the image, as the pod runs it (root with only NET_ADMIN
# and NET_RAW), with each iptables backend, each in a fresh namespace; the rules it leaves are read from the host.
for backend in iptables-nft iptables-legacy; do
    ip netns add "$ns-redirect"
    ip -n "$ns-redirect" link set lo up
    "${run[@]}" --rm --read-only --user 0:0 --cap-drop all --cap-add NET_ADMIN --cap-add NET_RAW \
        --network "ns:/run/netns/$ns-redirect" -v "$repo/deploy/kubernetes/scripts:/opt/cordon/scripts:ro" \
        -e CORDON_IPTABLES="$backend" --entrypoint /bin/sh "$name" /opt/cordon/scripts/redirect.sh \
        > "$work/redirect.log" 2>&1 || fail "redirect.sh with $backend in the image: $(tail -n 3 "$work/redirect.log")"
    rules=$(ip netns exec "$ns-redirect" "$backend" -t nat -S CORDON_OUTPUT 2>&1)
    grep -q -- '-p tcp -j REDIRECT --to-ports 15001' <<<"$rules" || fail "$backend: no redirect to 15001: $rules"
    rules6=$(ip netns exec "$ns-redirect" "${backend/iptables/ip6tables}" -t filter -S CORDON_EGRESS 2>&1)
    grep -q -- '-j DROP' <<<"$rules6" || fail "${backend/iptables/ip6tables}: IPv6 egress not dropped: $rules6"
    ip netns del "$ns-redirect"
done
ok "redirect.sh from the image (root, NET_ADMIN and NET_RAW only): its rules with both backends, IPv4 and IPv6"

total=$(awk -v a="$load_s" -v b="$start_s" -v c="$request_s" 'BEGIN { printf "%.2f", a + b + c }')
echo "image timings: podman load ${load_s} s, run to listening ${start_s} s, first intercepted request" \
    "${request_s} s; ${total} s in all (the configuration is an administrator's, not timed)"
echo "image: $passed passed, 0 failed"
