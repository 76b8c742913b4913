#!/bin/sh
# redirect.sh: force every connection a pod makes through its cordon sidecar (the Istio init-container
# pattern). See docs/src/deploying/kubernetes.md.
#
# It runs once, as root with only NET_ADMIN and NET_RAW, in the pod's network namespace, before cordon and
# the app start (the init container `cordon-redirect`). For IPv4, and for IPv6 when the kernel has it:
#
#   nat    OUTPUT -> CORDON_OUTPUT   rewrites where the app's new connections go
#     from cordon's UID (1337)          RETURN    cordon's own upstream connections and lookups leave as they are
#     to loopback (127.0.0.0/8, ::1)    RETURN    the app talking to itself, or to cordon's explicit proxy
#     UDP and TCP port 53               REDIRECT  to 15053, cordon's DNS responder
#     every other TCP                   REDIRECT  to 15001, cordon's transparent listener (SO_ORIGINAL_DST)
#   filter OUTPUT -> CORDON_EGRESS   drops what was not redirected
#     to the loopback admin port, not from cordon's UID   REJECT  the app may not drive cordon's admin API
#     from cordon's UID                                   RETURN
#     to loopback (every redirected connection: REDIRECT rewrote it to 127.0.0.1 / ::1)   RETURN
#     routed through lo (the pod's own addresses)         RETURN
#     replies to connections made to the pod on CORDON_INBOUND_PORTS (conntrack, reply direction, original
#     destination port one of them)                    RETURN     every other inbound connection gets no
#                                                                 answer, so no peer can pull data out of the app
#     IPv6 neighbour discovery (sent by the kernel)       RETURN
#     other UDP (QUIC then falls back to TCP), ICMP, anything else (TCP that escaped the nat table as an
#     INVALID packet, SCTP, raw IP)                       DROP
#
# Idempotent: it owns the chains CORDON_OUTPUT (nat) and CORDON_EGRESS (filter), flushes them before filling
# them, and keeps exactly one jump to each at the top of OUTPUT, so running it twice leaves the same rules.
#
# Usage: redirect.sh [--dry-run]     --dry-run prints the commands without running them (no root needed)
# Environment (defaults in brackets; they must match cordon.yaml and the pod spec):
#   CORDON_UID [1337]                cordon's UID: its traffic is exempt. No other container may run as it.
#   CORDON_TRANSPARENT_PORT [15001]  listen.transparent
#   CORDON_DNS_PORT [15053]          listen.dns
#   CORDON_ADMIN_PORT [9090]         listen.admin's port, closed to the app on loopback ("" = leave open)
#   CORDON_INBOUND_PORTS []          the TCP ports the app serves (a Service's targetPort, the app's probes),
#                                    separated by commas or spaces: only connections made to the pod on these
#                                    ports are answered by the app ("" = none)
#   CORDON_IPTABLES                  force one binary (iptables, iptables-nft or iptables-legacy); by default
#                                    the first of these that can program the nat table here is used
set -eu

PROXY_UID=${CORDON_UID:-1337}
TRANSPARENT_PORT=${CORDON_TRANSPARENT_PORT:-15001}
DNS_PORT=${CORDON_DNS_PORT:-15053}
ADMIN_PORT=${CORDON_ADMIN_PORT-9090}
INBOUND_PORTS=$(printf '%s' "${CORDON_INBOUND_PORTS:-}" | tr ',' ' ')
DRY_RUN=false

say() { printf 'cordon-redirect: %s\n' "$*"; }
die() {
    printf 'cordon-redirect: error: %s\n' "$*" >&2
    exit 1
}

for arg in "$@"; do
    case $arg in
        --dry-run) DRY_RUN=true ;;
        -h | --help)
            sed -n '2,/^set -eu$/p' "$0" | sed '$d'
            exit 0
            ;;
        *)
            printf 'cordon-redirect: unknown argument %s (usage: redirect.sh [--dry-run])\n' "$arg" >&2
            exit 2
            ;;
    esac
done

for pair in "CORDON_UID=$PROXY_UID" "CORDON_TRANSPARENT_PORT=$TRANSPARENT_PORT" "CORDON_DNS_PORT=$DNS_PORT" \
    "CORDON_ADMIN_PORT=${ADMIN_PORT:-0}"; do
    case ${pair#*=} in
        '' | *[!0-9]*) die "${pair%%=*} must be a number, not '${pair#*=}'" ;;
    esac
done

for port in $INBOUND_PORTS; do
    case $port in
        '' | *[!0-9]*) die "CORDON_INBOUND_PORTS must list port numbers, not '$port'" ;;
    esac
done

# run BINARY ARGS...: print the command, then run it unless this is a dry run.
run() {
    printf '%s\n' "$*"
    if [ "$DRY_RUN" = false ]; then
        "$@"
    fi
}

# new_chain BINARY TABLE CHAIN: create the chain, or empty it if an earlier run made it.
new_chain() {
    if [ "$DRY_RUN" = false ] && "$1" -t "$2" -S "$3" >/dev/null 2>&1; then
        run "$1" -t "$2" -F "$3"
    else
        run "$1" -t "$2" -N "$3"
    fi
}

# hook BINARY TABLE CHAIN: exactly one jump from OUTPUT to CHAIN, as OUTPUT's first rule.
hook() {
    if [ "$DRY_RUN" = false ]; then
        while "$1" -t "$2" -D OUTPUT -j "$3" 2>/dev/null; do :; done
    fi
    run "$1" -t "$2" -I OUTPUT 1 -j "$3"
}

# nat_rules BINARY LOOPBACK: send the app's new connections to cordon.
nat_rules() {
    new_chain "$1" nat CORDON_OUTPUT
    run "$1" -t nat -A CORDON_OUTPUT -m owner --uid-owner "$PROXY_UID" -j RETURN
    run "$1" -t nat -A CORDON_OUTPUT -d "$2" -j RETURN
    run "$1" -t nat -A CORDON_OUTPUT -p udp --dport 53 -j REDIRECT --to-ports "$DNS_PORT"
    run "$1" -t nat -A CORDON_OUTPUT -p tcp --dport 53 -j REDIRECT --to-ports "$DNS_PORT"
    run "$1" -t nat -A CORDON_OUTPUT -p tcp -j REDIRECT --to-ports "$TRANSPARENT_PORT"
    hook "$1" nat CORDON_OUTPUT
}

# filter_rules BINARY LOOPBACK ICMP-PROTOCOL: drop whatever the nat rules did not send to cordon.
# (After a REDIRECT the filter table still sees the interface the packet was first routed to, not lo:
# redirected connections are recognised by their new, loopback destination.)
filter_rules() {
    new_chain "$1" filter CORDON_EGRESS
    if [ -n "$ADMIN_PORT" ]; then
        run "$1" -t filter -A CORDON_EGRESS -o lo -p tcp --dport "$ADMIN_PORT" \
            -m owner ! --uid-owner "$PROXY_UID" -j REJECT --reject-with tcp-reset
    fi
    run "$1" -t filter -A CORDON_EGRESS -m owner --uid-owner "$PROXY_UID" -j RETURN
    run "$1" -t filter -A CORDON_EGRESS -d "$2" -j RETURN
    run "$1" -t filter -A CORDON_EGRESS -o lo -j RETURN
    # Replies only to connections made to the ports the app serves: a peer connecting in elsewhere gets nothing,
    # so it cannot pull the app's data out past cordon (replies to cordon's own connections left above).
    for port in $INBOUND_PORTS; do
        run "$1" -t filter -A CORDON_EGRESS -p tcp -m conntrack --ctstate ESTABLISHED,RELATED --ctdir REPLY \
            --ctorigdstport "$port" -j RETURN
    done
    if [ "$3" = ipv6-icmp ]; then
        # Neighbour discovery and multicast listener reports come from the kernel, not from a socket with
        # cordon's UID; without them IPv6 stops working for cordon too.
        for type in router-solicitation neighbour-solicitation neighbour-advertisement 143; do
            run "$1" -t filter -A CORDON_EGRESS -p ipv6-icmp --icmpv6-type "$type" -j RETURN
        done
    fi
    run "$1" -t filter -A CORDON_EGRESS -p udp -j DROP
    run "$1" -t filter -A CORDON_EGRESS -p "$3" -j DROP
    run "$1" -t filter -A CORDON_EGRESS -j DROP
    hook "$1" filter CORDON_EGRESS
}

# Which iptables: the first candidate that is installed and can program the nat table in this namespace.
IPT=
if [ -n "${CORDON_IPTABLES:-}" ]; then
    candidates=$CORDON_IPTABLES
else
    candidates="iptables iptables-nft iptables-legacy"
fi
for candidate in $candidates; do
    command -v "$candidate" >/dev/null 2>&1 || continue
    if [ "$DRY_RUN" = true ] || "$candidate" -t nat -S OUTPUT >/dev/null 2>&1; then
        IPT=$candidate
        break
    fi
    say "$candidate is installed but cannot program the nat table here: $("$candidate" -t nat -S OUTPUT 2>&1 | head -n 1)"
done
if [ -z "$IPT" ]; then
    if [ "$DRY_RUN" = true ]; then
        IPT=iptables
        say "dry run: no iptables installed here; printing the commands for 'iptables'"
    else
        die "no usable iptables among: $candidates (is NET_ADMIN granted, and iptables in the image?)"
    fi
else
    version=$("$IPT" --version 2>/dev/null || true)
    case $version in
        *nf_tables*) backend="nft backend" ;;
        *legacy*) backend="legacy backend" ;;
        *) backend="backend unknown" ;;
    esac
    say "found $IPT: ${version:-no version} ($backend)"
fi
IP6T=ip6tables${IPT#iptables}

if [ "$DRY_RUN" = true ]; then
    say "dry run: the commands for a fresh pod (nothing is run)"
fi
say "cordon UID $PROXY_UID; TCP -> :$TRANSPARENT_PORT, DNS (port 53) -> :$DNS_PORT; admin port ${ADMIN_PORT:-(not closed)}; inbound TCP ports answered: ${INBOUND_PORTS:-none}"

say "IPv4 ($IPT)"
nat_rules "$IPT" 127.0.0.0/8
filter_rules "$IPT" 127.0.0.0/8 icmp

# IPv6: a kernel without it has no /proc/net/if_inet6. With it, leaving ip6tables alone would leave IPv6
# egress open, so it is required; if only its nat table is missing, the filter rules still drop IPv6 TCP.
ipv6=none
if [ "$DRY_RUN" = true ]; then
    ipv6=full
    say "IPv6 ($IP6T; applied when the kernel has IPv6)"
elif [ -e /proc/net/if_inet6 ]; then
    command -v "$IP6T" >/dev/null 2>&1 ||
        die "the kernel has IPv6 but $IP6T is not installed: IPv6 egress would bypass cordon"
    "$IP6T" -t filter -S OUTPUT >/dev/null 2>&1 ||
        die "the kernel has IPv6 but $IP6T cannot program it: $("$IP6T" -t filter -S OUTPUT 2>&1 | head -n 1)"
    if "$IP6T" -t nat -S OUTPUT >/dev/null 2>&1; then
        ipv6=full
        say "IPv6 ($IP6T)"
    else
        ipv6=filter
        say "IPv6 ($IP6T): no IPv6 nat table in this kernel; IPv6 egress is dropped, not redirected"
    fi
else
    say "IPv6: not in this kernel; nothing to do"
fi
if [ "$ipv6" = full ]; then
    nat_rules "$IP6T" ::1/128
fi
if [ "$ipv6" != none ]; then
    filter_rules "$IP6T" ::1/128 ipv6-icmp
fi

if [ "$DRY_RUN" = true ]; then
    say "dry run: done, nothing was changed"
    exit 0
fi

say "installed:"
"$IPT" -t nat -S CORDON_OUTPUT
"$IPT" -t filter -S CORDON_EGRESS
if [ "$ipv6" = full ]; then
    "$IP6T" -t nat -S CORDON_OUTPUT
fi
if [ "$ipv6" != none ]; then
    "$IP6T" -t filter -S CORDON_EGRESS
fi
say "done: every connection not from UID $PROXY_UID now goes through cordon or nowhere"
