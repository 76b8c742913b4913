#!/usr/bin/env bash
# CI: the Debian package as a person installs and removes it (docs/src/deploying/systemd.md, "The Debian package").
#
#   bash .ci/package.sh path/to/cordon_VERSION-1_ARCH.deb [path/to/cordon-VERSION-TARGET.debug]
#
# 1. lintian: no error and no warning (every tag shown; the overridden ones have their reason in
#    deploy/debian/lintian-overrides);
# 2. the machine has nothing of cordon before (no package, user, /etc/cordon, /var/lib/cordon), and the list of
#    files under the system folders is taken;
# 3. `dpkg -i`: the binary (stripped; the release's .debug file, when given, is its debug information by
#    build-id; --version naming the version, commit, date and target), the units, the conffile, the man pages
#    and completions, a `cordon` system user with no login, /var/lib/cordon 0700 and the user's;
# 4. the packaged `cordon check` passes on the packaged configuration as the unit's user (as root it refuses
#    the cordon user's state folder, saying so), and writes nothing; `systemd-analyze verify` on the installed
#    units;
# 5. cordon.service started as systemd would start it (this machine's init is not systemd): its User and Group
#    (setpriv, no capabilities, no-new-privs, as CapabilityBoundingSet= and NoNewPrivileges= say), its
#    WorkingDirectory and UMask, ExecStartPre then ExecStart, with a NOTIFY_SOCKET that must hear READY=1;
#    inside a network namespace made for the test (loopback only), so nothing here meets another listener;
#    configured as an administrator would (the README's walkthrough: a secret in the vault, set as the cordon
#    user; an HTTPS API on loopback under a local CA), then intercepted HTTPS through it gets the credential
#    added, a request its policy does not allow is refused inside TLS, and one without a credential is 407;
#    the audit record names the credential, every file cordon wrote is the cordon user's and private;
#    SIGTERM: STOPPING=1, exit 0;
# 6. `dpkg --remove` keeps the configuration, the state and the user; `dpkg --purge` removes them, and the
#    list of files is the one of step 2 (nothing left, nothing removed), with no cordon user or group.
# It prints how long install, start and the first intercepted request took. Whatever fails, the package is
# purged and every process and namespace it started is gone, so the tests after it see the machine as before.
# Needs root, dpkg, lintian, ip, setpriv, runuser, curl, openssl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
deb=$(readlink -f "${1:?usage: .ci/package.sh path/to/cordon.deb [path/to/cordon.debug]}")
[ -f "$deb" ] || { echo "package: no $deb" >&2; exit 2; }
debug=${2:+$(readlink -f "$2")}

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
# now: seconds since the epoch, with nanoseconds, for the timings.
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

work=$(mktemp -d)
chmod 0711 "$work"
ns=cordon-pkg-$$
cordon_pid=
upstream_pid=
notify_pid=
# Root's `cordon jail` keeps its state in /var/lib/cordon too (jails.db, jail/): the tests that ran before this
# leave it there. It is set aside while the package is tested, and put back whatever happens.
aside=
cleanup() {
    local rc=$?
    set +e
    for pid in $cordon_pid $upstream_pid $notify_pid; do
        kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    done
    ip netns del "$ns" 2>/dev/null
    if dpkg-query -W -f='${Status}' cordon 2>/dev/null | grep -qv 'not-installed'; then
        echo "package: purging the package after a failure"
        dpkg --purge cordon >/dev/null 2>&1
    fi
    rm -f /etc/cordon/upstream-ca.pem
    rmdir /etc/cordon 2>/dev/null
    if [ -n "$aside" ] && [ -e "$aside" ]; then
        rm -rf /var/lib/cordon
        mv "$aside" /var/lib/cordon
    fi
    rm -rf "$work"
    exit $rc
}
trap cleanup EXIT

# The files under the system folders (not their contents): what a package can leave behind. Folders that other
# programs change while this runs (logs, caches, dpkg's and apt's own records, containers, databases) are left
# out; dpkg's records are checked through dpkg itself.
snapshot() {
    find /etc /usr /lib /var/lib /var/spool /opt /srv -xdev \
        \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/containers -o -path /var/lib/postgresql \
        -o -path /var/lib/systemd/deb-systemd-helper-enabled -o -path /var/lib/systemd/deb-systemd-helper-masked \
        -o -path /var/cache -o -path /var/log -o -path /etc/ld.so.cache \) -prune -o -print | LC_ALL=C sort
}

step "lintian"
# --fail-on error,warning: an info tag is shown but does not fail. The overridden tags are not shown (with
# --show-overrides lintian counts them towards --fail-on); each has its reason in deploy/debian/lintian-overrides.
lintian --fail-on error,warning --display-info --tag-display-limit 0 "$deb" \
    || fail "lintian found errors or warnings (above)"
overrides=$(grep -c '^cordon: ' deploy/debian/lintian-overrides)
ok "lintian: no error, no warning, no info ($overrides overrides, each with its reason)"

step "the machine before"
if dpkg-query -W -f='${Status}' cordon 2>/dev/null | grep -q 'installed'; then
    trap - EXIT
    rm -rf "$work"
    fail "cordon is installed on this machine already: this test installs and purges it, so it needs a machine without"
fi
for path in /etc/cordon /usr/bin/cordon; do
    [ ! -e "$path" ] || { trap - EXIT; rm -rf "$work"; fail "$path exists before the package is installed"; }
done
getent passwd cordon >/dev/null && { trap - EXIT; rm -rf "$work"; fail "a cordon user exists already"; }
if [ -e /var/lib/cordon ]; then
    aside=/var/lib/cordon.package-test-$$
    mv /var/lib/cordon "$aside"
    echo "  (/var/lib/cordon, root's jails' state, is set aside as $aside until the end)"
fi
snapshot > "$work/before.txt"
ok "no cordon package, user, configuration or state; $(wc -l < "$work/before.txt") paths listed"

step "dpkg -i"
t_install=$(now)
dpkg -i "$deb" > "$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log"; fail "dpkg -i"; }
install_s=$(since "$t_install")
ok "installed in ${install_s} s"
version=$(dpkg-deb -f "$deb" Version)
upstream_version=${version%-*}
said='commit [0-9a-f]{12}, built [0-9]{4}-[0-9]{2}-[0-9]{2}, x86_64-unknown-linux-gnu'
/usr/bin/cordon --version | grep -qE "^cordon $upstream_version \($said\)$" \
    || fail "cordon --version: $(/usr/bin/cordon --version)"
ok "$(/usr/bin/cordon --version)"
if readelf -S /usr/bin/cordon | grep -q '\.debug_info'; then fail "/usr/bin/cordon still has .debug_info"; fi
build_id() { readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'; }
[ -n "$(build_id /usr/bin/cordon)" ] || fail "/usr/bin/cordon has no build-id"
if [ -n "$debug" ]; then
    [ "$(build_id "$debug")" = "$(build_id /usr/bin/cordon)" ] || fail "$debug is not the packaged binary's"
    readelf -S "$debug" 2>/dev/null | grep -q '\.debug_line' || fail "$debug has no line tables"
    ok "the binary is stripped ($(stat -c %s /usr/bin/cordon) bytes); $(basename "$debug") has its line tables"
else
    ok "the binary is stripped ($(stat -c %s /usr/bin/cordon) bytes)"
fi
for unit in cordon.service cordon-gateway.service; do
    path=$(dpkg -L cordon | grep "/systemd/system/$unit\$") || fail "the package has no $unit"
    grep -q '^ExecStart=/usr/bin/cordon run --config /etc/cordon/cordon.yaml$' "$path" || fail "$path: ExecStart"
done
ok "units: $(dpkg -L cordon | grep -c '/systemd/system/') (cordon.service, cordon-gateway.service)"
dpkg-query -W -f='${Conffiles}\n' cordon | grep -q '^ /etc/cordon/cordon.yaml ' \
    || fail "/etc/cordon/cordon.yaml is not a conffile"
ok "/etc/cordon/cordon.yaml is a conffile"
pages=$(dpkg -L cordon | grep -c '^/usr/share/man/man1/cordon.*\.1\.gz$')
[ "$pages" -ge 20 ] || fail "only $pages manual pages"
man -w cordon-sandbox-create >/dev/null || fail "man cannot find cordon-sandbox-create"
zcat /usr/share/man/man1/cordon-run.1.gz | grep -q '^\.TH cordon-run 1' || fail "cordon-run.1.gz"
ok "$pages manual pages (man -w cordon-sandbox-create: $(man -w cordon-sandbox-create))"
for f in /usr/share/bash-completion/completions/cordon /usr/share/zsh/vendor-completions/_cordon \
    /usr/share/fish/vendor_completions.d/cordon.fish; do
    grep -q 'sandbox' "$f" || fail "$f is not cordon's completion"
done
bash -c 'source /usr/share/bash-completion/completions/cordon && complete -p cordon' >/dev/null \
    || fail "the bash completion does not register"
ok "completions for bash, zsh and fish"
entry=$(getent passwd cordon) || fail "no cordon user"
IFS=: read -r _ _ uid gid _ home shell <<<"$entry"
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/cordon ] && [ "$shell" = /usr/sbin/nologin ] \
    || fail "the cordon user is not a system user without login: $entry"
[ "$(getent group cordon | cut -d: -f3)" = "$gid" ] || fail "the cordon user's group is not cordon"
state=$(stat -c '%U:%G %a' /var/lib/cordon)
[ "$state" = "cordon:cordon 700" ] || fail "/var/lib/cordon: $state"
ok "user cordon ($uid, no login), /var/lib/cordon cordon:cordon 0700"

step "cordon check, as packaged"
# As the unit's ExecStartPre runs it: as the cordon user.
(cd / && runuser -u cordon -- /usr/bin/cordon check --config /etc/cordon/cordon.yaml > "$work/check.txt") \
    || { cat "$work/check.txt"; fail "cordon check as the cordon user"; }
grep -q '^/etc/cordon/cordon.yaml: ok$' "$work/check.txt" || fail "cordon check: $(head -n 1 "$work/check.txt")"
ok "the packaged configuration passes cordon check as the cordon user"
# As root it is refused, and says why: the state folder is the cordon user's, and cordon will not use a folder
# another user owns (docs/src/deploying/systemd.md says to check as the cordon user).
if (cd / && cordon check --config /etc/cordon/cordon.yaml > "$work/check-root.txt" 2>&1); then
    fail "cordon check as root passed on a state folder root does not own"
fi
grep -q 'belongs to uid '"$(id -u cordon)"', not to cordon' "$work/check-root.txt" \
    || fail "cordon check as root: $(cat "$work/check-root.txt")"
ok "as root, cordon check refuses the cordon user's state folder, and says so"
[ -z "$(ls -A /var/lib/cordon)" ] || fail "cordon check wrote into /var/lib/cordon: $(ls -A /var/lib/cordon)"
ok "cordon check wrote nothing"
if command -v systemd-analyze >/dev/null 2>&1; then
    for unit in cordon.service cordon-gateway.service; do
        systemd-analyze verify "$(dpkg -L cordon | grep "/systemd/system/$unit\$")" \
            || fail "systemd-analyze verify $unit"
    done
    ok "systemd-analyze verify: both installed units"
else
    echo "  (systemd-analyze is not installed here: the units are verified by .ci/systemd-check.sh)"
fi

step "configured as the walkthrough, and started as cordon.service would"
# The API: a local HTTPS server under a CA made here, reached as api.local.test (README's walkthrough).
(
    cd "$work"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=package-ca \
        -keyout upstream-ca.key -out upstream-ca.pem 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=api.local.test \
        -addext subjectAltName=DNS:api.local.test -keyout api.key -out api.csr 2>/dev/null
    openssl x509 -req -in api.csr -CA upstream-ca.pem -CAkey upstream-ca.key -days 1 -copy_extensions copy \
        -out api.pem 2>/dev/null
)
install -m 0644 "$work/upstream-ca.pem" /etc/cordon/upstream-ca.pem
# An administrator's edit of the packaged file: its state paths stay, a sandbox, its policy and a credential
# come in their place of the empty lists.
{
    sed '/^sandboxes: \[\]$/,$d' /etc/cordon/cordon.yaml
    cat .ci/walkthrough-policy.yaml
} > "$work/cordon.yaml"
install -m 0644 "$work/cordon.yaml" /etc/cordon/cordon.yaml
(cd / && printf %s 'sk-demo-1234' | runuser -u cordon -- /usr/bin/cordon vault set demo-api-key \
    --config /etc/cordon/cordon.yaml > /dev/null) || fail "cordon vault set as the cordon user"
ok "a secret in the vault, set as the cordon user"

# What the unit says, read from the installed file: the test starts what the package ships.
unit=$(dpkg -L cordon | grep '/systemd/system/cordon.service$')
key() { sed -n "s/^$1=//p" "$unit" | tail -n 1; }
user=$(key User)
group=$(key Group)
workdir=$(key WorkingDirectory)
umask_value=$(key UMask)
pre=$(key ExecStartPre)
start=$(key ExecStart)
nofile=$(key LimitNOFILE)
# systemd raises the open-files limit to LimitNOFILE; where this machine's hard limit is lower (and root may not
# raise it here), the test runs with that.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ -z "$nofile" ] || [ "$nofile" -le "$hard" ] || nofile=$hard
[ "$user" = cordon ] && [ "$group" = cordon ] && [ "$workdir" = /var/lib/cordon ] && [ -n "$start" ] \
    || fail "$unit: User=$user Group=$group WorkingDirectory=$workdir ExecStart=$start"
grep -q '^CapabilityBoundingSet=$' "$unit" && grep -q '^NoNewPrivileges=yes$' "$unit" \
    || fail "$unit: cordon.service is meant to have no capability and no new privileges"

ip netns add "$ns"
ip -n "$ns" link set lo up
ip netns exec "$ns" python3 "$repo/config/examples/echo_https.py" "$work/api.pem" "$work/api.key" 8443 \
    > /dev/null 2>&1 &
upstream_pid=$!

# systemd's side of Type=notify: a datagram socket the unit's user may write to; each message on its own line.
mkdir -m 0711 "$work/notify"
python3 - "$work/notify/socket" > "$work/notify.log" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o666)
s.settimeout(120)
while True:
    try:
        data = s.recv(4096)
    except socket.timeout:
        break
    print(data.decode(errors="replace").replace("\n", " "), flush=True)
PY
notify_pid=$!
deadline() { # deadline SECONDS WHAT COMMAND...: run COMMAND every 0.1 s until it succeeds, or fail after SECONDS.
    local limit=$1 what=$2
    shift 2
    local end=$((SECONDS + limit))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || fail "$what: not within $limit s"
        sleep 0.1
    done
}
deadline 10 "the notify socket" test -S "$work/notify/socket"

# As the unit: its user and group (with their supplementary groups), no capability in any set, no new
# privileges, its folder, umask and open-files limit (set as root first, as systemd does), and the environment
# systemd gives a service.
as_unit() {
    ip netns exec "$ns" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        HOME=/var/lib/cordon USER=cordon LOGNAME=cordon SHELL=/usr/sbin/nologin \
        STATE_DIRECTORY=/var/lib/cordon CONFIGURATION_DIRECTORY=/etc/cordon \
        NOTIFY_SOCKET="$work/notify/socket" \
        sh -c "ulimit -n ${nofile:-1024} && cd '$workdir' && umask $umask_value && exec setpriv --reuid=$user \
            --regid=$group --init-groups --no-new-privs --inh-caps=-all --bounding-set=-all -- $1"
}
t_start=$(now)
as_unit "$pre" > "$work/pre.log" 2>&1 || { cat "$work/pre.log"; fail "ExecStartPre ($pre)"; }
ok "ExecStartPre: $pre"
as_unit "$start" > "$work/cordon.out" 2> "$work/cordon.log" &
cordon_pid=$!
deadline 30 "READY=1 from cordon (its log: $work/cordon.log)" grep -q 'READY=1' "$work/notify.log"
start_s=$(since "$t_start")
ok "READY=1 after ${start_s} s: $(grep -m1 'READY=1' "$work/notify.log")"
pid=$(pgrep -u "$uid" -x cordon) || fail "no cordon process of the cordon user"
status=/proc/$pid/status
[ "$(awk '/^Uid:/ { print $2 }' "$status")" = "$uid" ] || fail "cordon runs as $(awk '/^Uid:/ { print $2 }' "$status")"
[ "$(awk '/^CapEff:/ { print $2 }' "$status")" = 0000000000000000 ] || fail "cordon has capabilities"
[ "$(awk '/^NoNewPrivs:/ { print $2 }' "$status")" = 1 ] || fail "cordon may gain privileges"
ok "cordon runs as uid $uid, no capabilities, no new privileges"

(cd / && runuser -u cordon -- /usr/bin/cordon ca export --sandbox demo --config /etc/cordon/cordon.yaml \
    > "$work/demo-ca.pem") || fail "cordon ca export"
proxy=http://demo:demo-token@127.0.0.1:3128
t_request=$(now)
ip netns exec "$ns" curl -s --max-time 20 --cacert "$work/demo-ca.pem" -x "$proxy" \
    https://api.local.test:8443/v1/models > "$work/answer.json" || fail "the intercepted request"
request_s=$(since "$t_request")
grep -q '"authorization": "Bearer sk-demo-1234"' "$work/answer.json" \
    || fail "the API did not get the credential: $(cat "$work/answer.json")"
ok "intercepted HTTPS through the packaged cordon: the API got the credential the sandbox never held (${request_s} s)"
R='%{http_code} %header{x-cordon-reason}'
got=$(ip netns exec "$ns" curl -s --max-time 20 -o /dev/null -w "$R" --cacert "$work/demo-ca.pem" -x "$proxy" \
    -X POST https://api.local.test:8443/v1/models)
[ "$got" = "403 method_not_allowed" ] || fail "a POST its policy does not allow: $got"
got=$(ip netns exec "$ns" curl -s --max-time 20 -o /dev/null -w "$R" -x http://127.0.0.1:3128 \
    http://api.local.test:8443/)
[ "$got" = "407 auth_missing" ] || fail "a request without a credential: $got"
ok "refused: a POST inside TLS (403 method_not_allowed), no credential (407 auth_missing)"

kill -TERM "$pid"
deadline 40 "cordon to stop after SIGTERM" sh -c "! kill -0 $pid 2>/dev/null"
wait "$cordon_pid" && code=0 || code=$?
cordon_pid=
[ "$code" = 0 ] || fail "cordon exited $code after SIGTERM (its log: $(tail -n 5 "$work/cordon.log"))"
grep -q 'STOPPING=1' "$work/notify.log" || fail "no STOPPING=1"
ok "SIGTERM: STOPPING=1, exit 0"
grep '"path":"/v1/models"' /var/lib/cordon/audit.jsonl | head -n 1 | grep -q '"credentials":\["demo-api"\]' \
    || fail "the audit record does not name the credential"
ok "the audit record names the credential: /var/lib/cordon/audit.jsonl"
foreign=$(find /var/lib/cordon ! -user cordon)
[ -z "$foreign" ] || fail "files in /var/lib/cordon not owned by cordon: $foreign"
# Every file private (UMask=0077 and cordon's own modes) but a sandbox CA's certificate, which is public (0644,
# in 0700 folders).
open_to_others=$(find /var/lib/cordon -perm /077 ! -type l ! -path '/var/lib/cordon/certs/*/ca.pem')
[ -z "$open_to_others" ] || fail "files in /var/lib/cordon others may read: $open_to_others"
ok "$(find /var/lib/cordon | wc -l) paths in /var/lib/cordon, all the cordon user's, private but CA certificates"
kill "$upstream_pid" "$notify_pid" 2>/dev/null || true
wait "$upstream_pid" "$notify_pid" 2>/dev/null || true
upstream_pid=
notify_pid=
ip netns del "$ns"

step "dpkg --remove, then --purge"
# The test's own file in /etc/cordon is an administrator's: no package removes it.
rm /etc/cordon/upstream-ca.pem
dpkg --remove cordon > "$work/dpkg-r.log" 2>&1 || { cat "$work/dpkg-r.log"; fail "dpkg --remove"; }
[ ! -e /usr/bin/cordon ] || fail "/usr/bin/cordon is still there after remove"
[ -f /etc/cordon/cordon.yaml ] && [ -f /var/lib/cordon/audit.jsonl ] && getent passwd cordon >/dev/null \
    || fail "remove took the configuration, the state or the user"
ok "remove: the binary is gone; the configuration, the state and the user are kept"
dpkg --purge cordon > "$work/dpkg-p.log" 2>&1 || { cat "$work/dpkg-p.log"; fail "dpkg --purge"; }
snapshot > "$work/after.txt"
if ! diff "$work/before.txt" "$work/after.txt" > "$work/diff.txt"; then
    cat "$work/diff.txt"
    fail "the files under the system folders differ from before the install (< before, > after)"
fi
ok "purge: the same $(wc -l < "$work/after.txt") paths as before the install"
! getent passwd cordon >/dev/null && ! getent group cordon >/dev/null || fail "the cordon user or group is left"
! grep -q '^cordon:' /etc/passwd /etc/group /etc/shadow /etc/gshadow || fail "cordon is left in the account files"
dpkg-query -W -f='${Status}' cordon 2>/dev/null | grep -q 'installed' && fail "dpkg still knows the package"
ok "no cordon user or group, and dpkg no longer knows the package"

total=$(awk -v a="$install_s" -v b="$start_s" -v c="$request_s" 'BEGIN { printf "%.2f", a + b + c }')
echo "package timings: dpkg -i ${install_s} s, start to READY=1 ${start_s} s, first intercepted request" \
    "${request_s} s; ${total} s in all (the configuration is an administrator's edit, not timed)"
echo "package: $passed passed, 0 failed"
