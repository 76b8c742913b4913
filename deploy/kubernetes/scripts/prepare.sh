#!/bin/sh
# prepare.sh: lay out cordon's private state before cordon starts (the init container `cordon-prepare`, which
# runs as cordon's UID, 1337, with the cordon image). See docs/src/deploying/kubernetes.md.
#
# 1. Copies what came from Kubernetes Secrets into the state volume, with the modes cordon insists on.
#    Secret files are owned by root and readable by group or others (that is how a non-root container can read
#    them at all), but cordon refuses a vault key or a CA key that group or others can read, so they are
#    copied, 0600, into the state volume, which only cordon's containers mount:
#
#      $CORDON_SECRETS/vault-key        -> $CORDON_STATE/vault/cordon.key       vault.file.key_file (64 hex digits)
#      $CORDON_SECRETS/cordon.vault     -> $CORDON_STATE/vault/cordon.vault     vault.file.path (made by `cordon vault set`)
#      $CORDON_SECRETS/placeholder-key  -> $CORDON_STATE/vault/placeholder.key  beside the vault (exactly 32 bytes)
#      $CORDON_SECRETS/admin-token      -> $CORDON_STATE/admin-token            control.admin_token
#      $CORDON_SECRETS/signing-key      -> $CORDON_STATE/signing-key            control.signing_key (>= 32 bytes)
#      $CORDON_SECRETS/admin-tls.crt    -> $CORDON_STATE/admin-tls.crt (0644)   admin.tls.cert (the gateway's)
#      $CORDON_SECRETS/admin-tls.key    -> $CORDON_STATE/admin-tls.key          admin.tls.key
#      $CORDON_CA_SECRETS/<id>.ca.pem and <id>.ca.key
#                                       -> $CORDON_CA_DIR/<id>/ca.pem (0644) and ca.key (0600), folder 0700
#                                          (ca.dir: a sandbox's CA made ahead, the same on every replica)
#
#    A file that is not there is skipped: cordon then makes its own (random, for this pod only) on first use;
#    but admin-tls.crt and admin-tls.key, which cordon cannot make, stop the pod when $CORDON_CONFIG names
#    their copies (admin.tls) and the Secret lacks them.
#    A value still starting with REPLACE-ME (the templates' placeholders) stops the pod, and so does an
#    environment variable of this container whose value starts with REPLACE-ME: the gateway hands cordon's
#    PostgreSQL password, store key, signing key and admin token over as environment variables (secretKeyRef)
#    and gives this container the same ones, so that a template's placeholder never reaches cordon.
#
# 2. With CORDON_EXPORT_SANDBOX=<sandbox id> (the sidecar), writes into $CORDON_PUBLIC, the volume the app
#    container mounts read-only:
#      ca.pem            the sandbox's CA certificate (`cordon ca export`, which creates the CA if needed)
#      ca-bundle.pem     this image's system roots followed by that CA, for the variables that replace the
#                        roots (SSL_CERT_FILE & co.), so `tls: tunnel` destinations, which show the app their
#                        real certificate, still verify
#      placeholders.env  CORDON_PLACEHOLDER_<NAME>=... for the credentials of the sandbox's policy (maybe empty)
#    Only certificates and placeholders go there, never a key.
#
# Environment: CORDON_CONFIG (/etc/cordon/cordon.yaml), CORDON_STATE (/var/lib/cordon),
# CORDON_CA_DIR ($CORDON_STATE/ca, must be ca.dir), CORDON_SECRETS (/etc/cordon-secrets),
# CORDON_CA_SECRETS (/etc/cordon-ca-secrets),
# CORDON_PUBLIC (/etc/cordon-ca), CORDON_EXPORT_SANDBOX (unset), CORDON_SYSTEM_ROOTS
# (/etc/ssl/certs/ca-certificates.crt).
set -eu
umask 077

CONFIG=${CORDON_CONFIG:-/etc/cordon/cordon.yaml}
STATE=${CORDON_STATE:-/var/lib/cordon}
CA_DIR=${CORDON_CA_DIR:-$STATE/ca}
SECRETS=${CORDON_SECRETS:-/etc/cordon-secrets}
CA_SECRETS=${CORDON_CA_SECRETS:-/etc/cordon-ca-secrets}
PUBLIC=${CORDON_PUBLIC:-/etc/cordon-ca}
SYSTEM_ROOTS=${CORDON_SYSTEM_ROOTS:-/etc/ssl/certs/ca-certificates.crt}

say() { printf 'cordon-prepare: %s\n' "$*"; }
die() {
    printf 'cordon-prepare: error: %s\n' "$*" >&2
    exit 1
}

# private_dir DIR: a folder only cordon's UID may use (cordon refuses CA folders others can write).
private_dir() {
    mkdir -p "$1" || die "cannot create $1"
    chmod 0700 "$1" || die "cannot chmod $1"
}

# copy SOURCE DEST MODE: copy a Secret file if it is there (status 1 if it is not; any failure stops the pod).
copy() {
    if [ ! -e "$1" ]; then
        return 1
    fi
    if grep -q '^REPLACE-ME' "$1"; then
        die "$1 still holds the template's placeholder value: put a real value in the Secret (docs/src/deploying/kubernetes.md)"
    fi
    # A temporary name of this pod's own: replicas may share ca.dir.
    tmp="$2.tmp-${HOSTNAME:-$$}"
    cp "$1" "$tmp" || die "cannot copy $1 to $tmp"
    chmod "$3" "$tmp" || die "cannot chmod $tmp"
    mv -f "$tmp" "$2" || die "cannot rename $tmp to $2"
    say "$2 <- $1"
}

# Secret values given as environment variables (secretKeyRef) are checked here, since nothing is copied for them.
placeholders=$(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=REPLACE-ME.*$/\1/p' | tr '\n' ' ')
if [ -n "$placeholders" ]; then
    die "${placeholders% } still hold the template's placeholder value: put real values in the Secret" \
        "(docs/src/deploying/kubernetes.md)"
fi

[ -d "$STATE" ] && [ -w "$STATE" ] || die "$STATE is not a writable folder: mount the state volume there"
private_dir "$STATE/vault"
private_dir "$CA_DIR"

if [ -d "$SECRETS" ]; then
    if [ -e "$SECRETS/cordon.vault" ] && [ ! -e "$SECRETS/vault-key" ]; then
        die "$SECRETS has cordon.vault but no vault-key to open it with"
    fi
    copy "$SECRETS/vault-key" "$STATE/vault/cordon.key" 0600 || say "no vault-key: cordon makes one for this pod"
    copy "$SECRETS/cordon.vault" "$STATE/vault/cordon.vault" 0600 || say "no cordon.vault: the vault starts empty"
    if copy "$SECRETS/placeholder-key" "$STATE/vault/placeholder.key" 0600; then
        [ "$(wc -c <"$STATE/vault/placeholder.key")" -eq 32 ] ||
            die "placeholder-key must be exactly 32 bytes, with no trailing newline (e.g. openssl rand -hex 16)"
    else
        say "no placeholder-key: placeholders are this pod's own"
    fi
    copy "$SECRETS/admin-token" "$STATE/admin-token" 0600 || say "no admin-token: cordon makes one for this pod"
    copy "$SECRETS/signing-key" "$STATE/signing-key" 0600 || say "no signing-key: cordon makes one for this pod"
    copy "$SECRETS/admin-tls.crt" "$STATE/admin-tls.crt" 0644 || true
    copy "$SECRETS/admin-tls.key" "$STATE/admin-tls.key" 0600 || true
else
    say "no $SECRETS: cordon makes its own keys for this pod"
fi
# The admin listener's certificate and key (admin.tls): cordon cannot make them, so a missing one stops the pod
# here, naming the Secret's key, rather than cordon at its start.
for name in admin-tls.crt admin-tls.key; do
    if [ ! -e "$STATE/$name" ] && grep -qF "$STATE/$name" "$CONFIG" 2>/dev/null; then
        die "$CONFIG names $STATE/$name (admin.tls) but $SECRETS has no $name: put the admin listener's" \
            "certificate and key in the Secret (docs/src/deploying/kubernetes.md)"
    fi
done

if [ -d "$CA_SECRETS" ]; then
    for cert in "$CA_SECRETS"/*.ca.pem; do
        [ -e "$cert" ] || continue
        id=$(basename "$cert" .ca.pem)
        [ -e "$CA_SECRETS/$id.ca.key" ] || die "$cert has no key beside it ($CA_SECRETS/$id.ca.key)"
        private_dir "$CA_DIR/$id"
        copy "$CA_SECRETS/$id.ca.key" "$CA_DIR/$id/ca.key" 0600 || die "cannot read $CA_SECRETS/$id.ca.key"
        copy "$cert" "$CA_DIR/$id/ca.pem" 0644 || die "cannot read $cert"
    done
fi

if [ -n "${CORDON_EXPORT_SANDBOX:-}" ]; then
    id=$CORDON_EXPORT_SANDBOX
    [ -d "$PUBLIC" ] || die "$PUBLIC is missing: mount the volume the app container reads the CA from"
    cordon ca export --config "$CONFIG" --sandbox "$id" >"$PUBLIC/.ca.pem.tmp"
    [ -s "$PUBLIC/.ca.pem.tmp" ] || die "cordon ca export printed nothing for sandbox $id"
    if [ -s "$SYSTEM_ROOTS" ]; then
        cat "$SYSTEM_ROOTS" "$PUBLIC/.ca.pem.tmp" >"$PUBLIC/.ca-bundle.pem.tmp"
    else
        say "no system roots at $SYSTEM_ROOTS: ca-bundle.pem holds only the sandbox's CA"
        cp "$PUBLIC/.ca.pem.tmp" "$PUBLIC/.ca-bundle.pem.tmp"
    fi
    cordon placeholders --config "$CONFIG" --sandbox "$id" >"$PUBLIC/.placeholders.env.tmp"
    for name in ca.pem ca-bundle.pem placeholders.env; do
        chmod 0644 "$PUBLIC/.$name.tmp"
        mv -f "$PUBLIC/.$name.tmp" "$PUBLIC/$name"
    done
    say "exported sandbox $id's CA to $PUBLIC/ca.pem (and ca-bundle.pem, placeholders.env)"
fi
say "done"
