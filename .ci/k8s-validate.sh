#!/usr/bin/env bash
# .ci/k8s-validate.sh: check the Kubernetes deployment files under deploy/kubernetes.
#
#   bash .ci/k8s-validate.sh            (exit 0 when everything passes, 1 naming each failure)
#
# 1. every manifest (each document of each .yaml under deploy/kubernetes but kustomization.yaml) against
#    the Kubernetes $K8S_VERSION schemas, strictly (an unknown field fails), with PyPI kubernetes-validate;
#    a kind it has no schema for fails too (the tool itself only warns). The Prometheus Operator's
#    PodMonitor and ServiceMonitor (deploy/kubernetes/monitoring/, in files of their own) against their CRDs'
#    schemas vendored in .ci/schemas/ (prometheus-operator v0.93.0), as strictly, by .ci/monitor-validate.py
#    (PyPI jsonschema), which is shown to refuse an unknown field;
# 2. when kubectl is installed: each kustomization rendered (`kubectl kustomize`, offline), validated the same;
# 3. the files agree with each other: the ports and UID redirect.sh is given are the ones cordon.yaml listens
#    on and cordon runs as, the app never runs as cordon's UID, the exported sandbox exists, ...; the gateway
#    runs at least 3 replicas on PostgreSQL (control.store a postgres:// URL with sslmode=require) with no
#    volume shared between pods, and every Secret key it references is in the example Secret; the probes'
#    scheme is the admin port's (HTTPS with admin.tls), and the gateway, whose admin API the platform calls
#    off loopback, has admin.tls with its certificate and key brought from the Secret by prepare.sh;
#    the monitors scrape the port cordon.yaml's listen.admin is on, by its name, at /metrics (which
#    docs/openapi.yaml says takes no token: they send no credentials), with the admin port's scheme; the
#    gateway's verifies the admin Service's name with a CA from a Secret, and its NetworkPolicy lets only
#    Prometheus pods of the namespace `monitoring` in, to the admin port only;
#    with CORDON_BIN=path/to/cordon also `cordon check` on every embedded cordon.yaml (stand-ins for the
#    files it reads), which must describe the admin listener as HTTPS or probes-only as the file says;
# 4. redirect.sh and prepare.sh parse as POSIX sh, prepare.sh stops on a REPLACE-ME value in its environment,
#    and `redirect.sh --dry-run` prints the expected rules;
# 5. when run as root with unshare, ip and iptables: redirect.sh for real in a private network namespace made
#    for the test (veth, documentation addresses, nothing leaves it), with each iptables backend installed:
#    twice (the same rules: idempotent), then an app UID and cordon's UID try TCP, DNS, UDP, ICMP and the
#    admin port. CORDON_K8S_NETNS=0 skips this;
# 6. with CORDON_BIN as well (a cordon built from this tree): the sidecar end to end in such a namespace:
#    redirect.sh, prepare.sh and `cordon run` with the shipped cordon.yaml (its state moved to a temporary
#    folder, one local upstream opened), then the app's UID fetches over HTTP and intercepted HTTPS (trusting
#    the CA the way the pod's variables say), resolves names (a raw query, dig and glibc's getent), tries the
#    admin port (and /v1 on it, which a plain listener off loopback does not serve), and a peer outside the pod
#    connects in to an allowed port and to others, and scrapes /metrics as the PodMonitor says (Prometheus);
# 7. the admission policy's CEL (cel-python, .ci/admission-check.py) against the shipped sidecar pod
#    (admitted) and every way to run a second container as cordon's UID (refused).
set -euo pipefail
cd "$(dirname "$0")/.."

# Kubernetes 1.33: native sidecar containers (an init container with restartPolicy: Always, which the sidecar
# pod uses) are GA from this version on. kubernetes-validate 1.37.0 has schemas for 1.25 to 1.37.
K8S_VERSION=1.33.0
KV_VERSION=1.37.0
# cel-python evaluates the admission policy's CEL expressions (step 7).
CEL_VERSION=0.5.0
# jsonschema validates the monitors against .ci/schemas/ (step 1; kubernetes-validate depends on it too).
JSONSCHEMA_VERSION=4.26.0
DEPLOY=deploy/kubernetes
SCRIPTS=$DEPLOY/scripts

passed=0
failed=0
ok() {
    passed=$((passed + 1))
    printf '  ok   %s\n' "$*"
}
bad() {
    failed=$((failed + 1))
    printf '  FAIL %s\n' "$*"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== tools"
python3 -m pip install --quiet --disable-pip-version-check "kubernetes-validate==$KV_VERSION" \
    "cel-python==$CEL_VERSION" "jsonschema==$JSONSCHEMA_VERSION" 2>&1 |
    grep -v "Running pip as the 'root' user" || true
KV=(python3 -m kubernetes_validate)
"${KV[@]}" --version >/dev/null 2>&1 || KV=(kubernetes-validate)
have=$("${KV[@]}" --version 2>&1 || true)
if [ "$have" = "$KV_VERSION" ]; then
    ok "kubernetes-validate $have, Kubernetes $K8S_VERSION schemas"
else
    bad "kubernetes-validate $KV_VERSION is not usable (got: $have)"
    echo "k8s-validate: $passed passed, $failed failed"
    exit 1
fi
have=$(python3 -c 'import jsonschema, importlib.metadata as m; print(m.version("jsonschema"))' 2>&1 || true)
if [ "$have" = "$JSONSCHEMA_VERSION" ]; then
    ok "jsonschema $have, for the monitors' schemas in .ci/schemas/"
else
    bad "jsonschema $JSONSCHEMA_VERSION is not usable (got: $have)"
fi
MV=(python3 .ci/monitor-validate.py --k8s "$K8S_VERSION")

# validate LABEL FILE...: strict schema validation; any ERROR or WARN line (no schema for a kind) fails.
validate() {
    local label=$1
    shift
    local rc=0
    "${KV[@]}" --strict -k "$K8S_VERSION" "$@" >"$work/kv.out" 2>&1 || rc=$?
    local count
    count=$(grep -c ' passed for resource ' "$work/kv.out" || true)
    if [ "$rc" -eq 0 ] && ! grep -qE '^(WARN|ERROR)' "$work/kv.out" && [ "$count" -gt 0 ]; then
        ok "$label: $count resources valid (kubernetes-validate --strict -k $K8S_VERSION)"
    else
        bad "$label (kubernetes-validate exit $rc, $count resources passed):"
        grep -vE ' passed for resource |^$' "$work/kv.out" | sed 's/^/         /'
    fi
}

# validate_monitors LABEL FILE...: the Prometheus Operator's kinds against .ci/schemas/, strictly; with
# OTHERS=path set, every other document is written there (for validate).
validate_monitors() {
    local label=$1
    shift
    local rc=0
    "${MV[@]}" ${OTHERS:+--others "$OTHERS"} "$@" >"$work/mv.out" 2>&1 || rc=$?
    local count
    count=$(grep -c '^valid ' "$work/mv.out" || true)
    if [ "$rc" -eq 0 ]; then
        ok "$label: $count monitors valid (.ci/schemas/, unknown fields refused)"
    else
        bad "$label (monitor-validate.py exit $rc):"
        grep -v '^valid ' "$work/mv.out" | sed 's/^/         /'
    fi
}

echo "== 1. manifests, file by file"
mapfile -t manifests < <(find "$DEPLOY" -type f \( -name '*.yaml' -o -name '*.yml' \) \
    ! -name kustomization.yaml ! -name kustomization.yml | sort)
if [ "${#manifests[@]}" -eq 0 ]; then
    bad "no manifests under $DEPLOY"
else
    # Every document must be a Kubernetes object: kubernetes-validate cannot say so about one without a kind.
    # Files of the Prometheus Operator's kinds (listed in monitors.list) hold nothing else: they are checked
    # against .ci/schemas/, the others by kubernetes-validate.
    if python3 - "$work/monitors.list" "${manifests[@]}" >"$work/shape.out" 2>&1 <<'EOF'; then
import sys, yaml
bad = 0
monitors = []
for path in sys.argv[2:]:
    try:
        docs = list(yaml.safe_load_all(open(path)))
    except yaml.YAMLError as e:
        print(f"{path}: not YAML: {e}")
        bad += 1
        continue
    groups = set()
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
            print(f"{path}: document {i + 1} is not a Kubernetes object (no apiVersion/kind)")
            bad += 1
            continue
        groups.add(str(doc["apiVersion"]).startswith("monitoring.coreos.com/"))
    if groups == {True}:
        monitors.append(path)
    elif len(groups) > 1:
        print(f"{path}: mixes monitoring.coreos.com objects with others: put them in a file of their own")
        bad += 1
open(sys.argv[1], "w").write("".join(p + "\n" for p in monitors))
sys.exit(1 if bad else 0)
EOF
        ok "${#manifests[@]} files, every document a Kubernetes object"
    else
        bad "not Kubernetes objects:"
        sed 's/^/         /' "$work/shape.out"
    fi
    mapfile -t monitor_files <"$work/monitors.list"
    core_files=()
    for f in "${manifests[@]}"; do
        grep -qxF -- "$f" "$work/monitors.list" || core_files+=("$f")
    done
    validate "${#core_files[@]} manifest files" "${core_files[@]}"
    if [ "${#monitor_files[@]}" -eq 0 ]; then
        bad "no PodMonitor or ServiceMonitor under $DEPLOY (deploy/kubernetes/monitoring/)"
    else
        validate_monitors "${#monitor_files[@]} monitor files" "${monitor_files[@]}"
        # The check is strict: a misspelt field (which the API server would prune and Prometheus never see)
        # fails, and so does one of the wrong type.
        python3 - "${monitor_files[0]}" >"$work/wrong.yaml" <<'EOF'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
key = "endpoints" if doc["kind"] == "ServiceMonitor" else "podMetricsEndpoints"
doc["spec"][key][0]["shceme"] = doc["spec"][key][0].pop("scheme")
doc["metadata"]["labels"] = ["not", "a", "map"]
print(yaml.safe_dump(doc))
EOF
        rc=0
        "${MV[@]}" "$work/wrong.yaml" >"$work/wrong.out" 2>&1 || rc=$?
        if [ "$rc" -eq 1 ] && grep -q "'shceme' was unexpected" "$work/wrong.out" &&
            grep -q 'metadata.labels: .* is not of type' "$work/wrong.out"; then
            ok "monitor-validate.py refuses a misspelt field (shceme) and a field of the wrong type"
        else
            bad "monitor-validate.py let a misspelt field or a wrong type through (exit $rc):"
            sed 's/^/         /' "$work/wrong.out"
        fi
    fi
fi

echo "== 2. kustomizations, rendered"
if command -v kubectl >/dev/null 2>&1; then
    mapfile -t kustomizations < <(find "$DEPLOY" -name kustomization.yaml -printf '%h\n' | sort)
    for dir in "${kustomizations[@]}"; do
        name=${dir#"$DEPLOY"/}
        name=${name//\//-}
        if kubectl kustomize "$dir" >"$work/$name.yaml" 2>"$work/$name.err"; then
            # The monitors (deploy/kubernetes/monitoring/*) against .ci/schemas/, the rest with kubernetes-validate.
            if grep -q '^apiVersion: monitoring.coreos.com/' "$work/$name.yaml"; then
                OTHERS="$work/$name.core.yaml" validate_monitors "kubectl kustomize $dir" "$work/$name.yaml"
                validate "kubectl kustomize $dir" "$work/$name.core.yaml"
            else
                validate "kubectl kustomize $dir" "$work/$name.yaml"
            fi
        else
            bad "kubectl kustomize $dir:"
            sed 's/^/         /' "$work/$name.err"
        fi
    done
else
    echo "  skipped: kubectl is not installed (the files were validated one by one above)"
fi

echo "== 3. the files agree with each other"
if python3 - "$DEPLOY" >"$work/agree.out" 2>&1 <<'EOF'; then
import sys, urllib.parse, yaml

root = sys.argv[1]
problems = []
checks = 0


def load(path):
    return [d for d in yaml.safe_load_all(open(f"{root}/{path}")) if d]


def one(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        problems.append(what)


def port(addr):
    return int(str(addr).rsplit(":", 1)[1])


def env(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def containers(pod):
    return pod.get("initContainers", []) + pod["containers"]


def by_name(pod, name):
    return next(c for c in containers(pod) if c["name"] == name)


def secret_refs(container):
    """{variable: its secretKeyRef} for the variables a container takes from a Secret."""
    return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container.get("env", [])
            if "secretKeyRef" in e.get("valueFrom", {})}


def secret_keys(secret):
    return set(secret.get("stringData", {})) | set(secret.get("data", {}))


def under(path, folder):
    """Whether path is folder or lies inside it."""
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


for flavour, cm_name in (("sidecar", "cordon-agent-config"), ("gateway", "cordon-gateway-config")):
    cm = one(load(f"{flavour}/configmap.yaml"), "ConfigMap")
    expect(cm["metadata"]["name"] == cm_name, f"{flavour}: ConfigMap is not named {cm_name}")
    config = yaml.safe_load(cm["data"]["cordon.yaml"])
    pod = one(load(f"{flavour}/deployment.yaml"), "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    expect(volumes["config"]["configMap"]["name"] == cm_name, f"{flavour}: the pod does not mount {cm_name}")
    cordon = by_name(pod, "cordon")
    expect(cordon["args"] == ["run", "--config", "/etc/cordon/cordon.yaml"], f"{flavour}: cordon's args")
    for c in containers(pod):
        sc = c.get("securityContext", {})
        r = c.get("resources", {})
        expect("requests" in r and "limits" in r, f"{flavour}/{c['name']}: resources need requests and limits")
        expect(sc.get("allowPrivilegeEscalation") is False, f"{flavour}/{c['name']}: allowPrivilegeEscalation")
        expect(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{flavour}/{c['name']}: drop ALL capabilities")
        if c["image"] == "cordon" and c["name"] != "cordon-redirect":
            expect(sc.get("runAsUser") == 1337 and sc.get("readOnlyRootFilesystem") is True,
                   f"{flavour}/{c['name']}: cordon runs as 1337 on a read-only root")
    probes = {p: cordon[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")}
    expect(probes == {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/healthz"},
           f"{flavour}: cordon's probes are {probes}")
    # admin.tls makes everything on the admin port HTTPS, probes included; without it the port is plain HTTP.
    admin_tls = (config.get("admin") or {}).get("tls")
    schemes = {p: cordon[p]["httpGet"].get("scheme", "HTTP") for p in probes}
    want = "HTTPS" if admin_tls else "HTTP"
    expect(set(schemes.values()) == {want},
           f"{flavour}: cordon's probes use {schemes}, but the admin port is {want} "
           f"({'with' if admin_tls else 'without'} admin.tls)")
    admin_port = next(p["containerPort"] for p in cordon["ports"] if p["name"] == "admin")
    expect(admin_port == port(config["listen"]["admin"]), f"{flavour}: admin port differs from listen.admin")
    expect(str(config["listen"]["admin"]).startswith("0.0.0.0:"),
           f"{flavour}: listen.admin must be reachable by the kubelet's probes (0.0.0.0)")
    for key in ("transparent", "dns"):
        expect(key in config["listen"], f"{flavour}: listen.{key} missing")
    prepare = by_name(pod, "cordon-prepare")
    ca_dir = env(prepare).get("CORDON_CA_DIR", "/var/lib/cordon/ca")
    expect(config["ca"]["dir"] == ca_dir, f"{flavour}: ca.dir {config['ca']['dir']} != prepare's {ca_dir}")
    expect(config["vault"]["file"]["key_file"] == "/var/lib/cordon/vault/cordon.key",
           f"{flavour}: vault.file.key_file is not where prepare.sh copies the key")
    ids = [s["id"] for s in config.get("sandboxes", [])]

    if flavour == "sidecar":
        redirect = by_name(pod, "cordon-redirect")
        e = env(redirect)
        expect(int(e["CORDON_TRANSPARENT_PORT"]) == port(config["listen"]["transparent"]),
               "sidecar: redirect.sh's transparent port differs from listen.transparent")
        expect(int(e["CORDON_DNS_PORT"]) == port(config["listen"]["dns"]),
               "sidecar: redirect.sh's DNS port differs from listen.dns")
        expect(int(e["CORDON_ADMIN_PORT"]) == admin_port, "sidecar: redirect.sh's admin port differs")
        expect(int(e["CORDON_UID"]) == cordon["securityContext"]["runAsUser"],
               "sidecar: redirect.sh exempts another UID than cordon runs as")
        caps = redirect["securityContext"]["capabilities"]
        expect(sorted(caps.get("add", [])) == ["NET_ADMIN", "NET_RAW"],
               "sidecar: cordon-redirect needs exactly NET_ADMIN and NET_RAW")
        expect(cordon.get("restartPolicy") == "Always", "sidecar: cordon is not a native sidecar")
        expect(env(prepare).get("CORDON_EXPORT_SANDBOX") in ids, "sidecar: CORDON_EXPORT_SANDBOX is no sandbox")
        for app in pod["containers"]:
            sc = app.get("securityContext", {})
            expect(sc.get("runAsUser") not in (None, 0, int(e["CORDON_UID"])),
                   f"sidecar/{app['name']}: must run as a fixed UID other than root and cordon's")
            expect(not sc.get("capabilities", {}).get("add"), f"sidecar/{app['name']}: adds capabilities")
            variables = env(app)
            for var in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE",
                        "GIT_SSL_CAINFO", "PIP_CERT", "CARGO_HTTP_CAINFO"):
                expect(str(variables.get(var, "")).startswith("/etc/cordon-ca/"),
                       f"sidecar/{app['name']}: {var} does not point at the sandbox's CA")
            mounts = {m["name"]: m for m in app.get("volumeMounts", [])}
            expect(mounts.get("cordon-ca", {}).get("readOnly") is True,
                   f"sidecar/{app['name']}: must mount cordon-ca read-only")
            expect(set(mounts) == {"cordon-ca"}, f"sidecar/{app['name']}: mounts {sorted(mounts)}")
        expect(config["sandboxes"][0].get("source_cidrs") == ["0.0.0.0/0", "::/0"],
               "sidecar: the sandbox must be known by any source address")
    else:
        svc = {s["metadata"]["name"]: s for s in load("gateway/service.yaml")}
        ports = {p["name"]: p for p in svc["cordon-gateway"]["spec"]["ports"]}
        expect(set(ports) == {"proxy", "transparent", "dns", "dns-tcp"}, f"gateway: Service ports {sorted(ports)}")
        expect(ports["dns"]["protocol"] == "UDP" and ports["dns-tcp"]["protocol"] == "TCP",
               "gateway: DNS needs UDP and TCP")
        expect(all(p["port"] != admin_port for p in ports.values()), "gateway: admin port on the traffic Service")
        cports = {p["name"]: p["containerPort"] for p in cordon["ports"]}
        for key, name in (("proxy", "proxy"), ("transparent", "transparent"), ("dns", "dns")):
            expect(cports[name] == port(config["listen"][key]), f"gateway: container port {name} != listen.{key}")
            expect(str(config["listen"][key]).startswith("0.0.0.0:"), f"gateway: listen.{key} is not 0.0.0.0")
        deployment = one(load("gateway/deployment.yaml"), "Deployment")
        replicas = deployment["spec"]["replicas"]
        expect(replicas >= 3, f"gateway: the Deployment runs {replicas} replicas, fewer than 3")
        hpa = one(load("gateway/hpa.yaml"), "HorizontalPodAutoscaler")
        expect(hpa["spec"]["scaleTargetRef"]["name"] == "cordon-gateway", "gateway: HPA targets another name")
        least = hpa["spec"]["minReplicas"]
        expect(least >= 3, f"gateway: HPA minReplicas {least}, fewer than 3")
        expect(hpa["spec"]["maxReplicas"] >= least, "gateway: HPA maxReplicas below minReplicas")
        # The PodDisruptionBudget selects the gateway's pods, lets a drain proceed (one pod at least may go at the
        # smallest size) and keeps two serving meanwhile.
        pdb = one(load("gateway/pdb.yaml"), "PodDisruptionBudget")["spec"]
        expect(pdb["selector"] == deployment["spec"]["selector"], "gateway: the PDB selects other pods")
        smallest = min(replicas, least)
        may_go = pdb["maxUnavailable"] if "maxUnavailable" in pdb else smallest - pdb["minAvailable"]
        expect(isinstance(may_go, int) and may_go >= 1 and smallest - may_go >= 2,
               f"gateway: the PDB lets {may_go} of {smallest} replicas go (needs at least 1, and 2 left serving)")

        # The store: PostgreSQL over TLS, no password in the URL (it comes from the Secret).
        control = config["control"]
        store = str(control.get("store", ""))
        url = urllib.parse.urlsplit(store)
        expect(url.scheme in ("postgres", "postgresql"), f"gateway: control.store {store!r} is not a postgres:// URL")
        expect(bool(url.hostname), "gateway: control.store names no host")
        expect(url.password is None, "gateway: control.store carries a password (use control.store_password)")
        expect(urllib.parse.parse_qs(url.query).get("sslmode") == ["require"],
               "gateway: control.store lacks sslmode=require")
        for field in ("store_password", "store_key", "signing_key", "admin_token"):
            expect(field in control, f"gateway: control.{field} is not set")

        # The platform creates sandboxes through cordon-gateway-admin, off loopback: /v1 is served there only
        # with admin.tls (otherwise 403 admin_needs_tls). Its files are in a volume of the cordon container; one
        # in the state volume is a key of the Secret's volume that prepare.sh copies there.
        tls = (config.get("admin") or {}).get("tls") or {}
        expect("cert" in tls and "key" in tls,
               "gateway: admin.tls (cert and key) is not set: /v1 on listen.admin would answer 403 admin_needs_tls")
        state_mount = next((m["mountPath"] for m in cordon.get("volumeMounts", []) if m["name"] == "state"), "")
        brought = {item["path"] for v in pod["volumes"] if "secret" in v for item in v["secret"].get("items", [])}
        prepare_text = open(f"{root}/scripts/prepare.sh").read()
        for field, ref in tls.items():
            if not (isinstance(ref, dict) and "file" in ref):
                continue
            path = ref["file"]
            expect(any(under(path, m["mountPath"]) and m["name"] != "tmp" for m in cordon.get("volumeMounts", [])),
                   f"gateway: no volume of the cordon container holds admin.tls.{field} ({path})")
            if state_mount and under(path, state_mount):
                name = path[len(state_mount.rstrip("/")) + 1:]
                expect(name in brought and f'"$STATE/{name}"' in prepare_text,
                       f"gateway: admin.tls.{field} is {path}, in the state volume, but the Secret's volume and "
                       f"prepare.sh do not bring {name} there")

        # No volume shared between pods: only ConfigMaps, Secrets and the pod's own emptyDirs; none mounted for
        # the store or ca.dir, which lies in the pod's private state volume.
        for v in pod["volumes"]:
            kind = sorted(set(v) - {"name"})
            expect(kind in (["configMap"], ["secret"], ["emptyDir"]),
                   f"gateway: volume {v['name']} is {kind}: only configMap, secret and a pod's own emptyDir")
        expect("shared" not in volumes, "gateway: a volume named shared is back (replicas share PostgreSQL)")
        ca_dir = config["ca"]["dir"]
        for c in containers(pod):
            mounts = c.get("volumeMounts", [])
            holding = [m for m in mounts if under(ca_dir, m["mountPath"])]
            deepest = max(holding, key=lambda m: len(m["mountPath"]), default=None)
            expect(deepest is not None and deepest["name"] == "state" and deepest["mountPath"] != ca_dir,
                   f"gateway/{c['name']}: ca.dir {ca_dir} must lie in the state volume, not on a volume of its own")
            expect(not any(under(m["mountPath"], ca_dir) for m in mounts),
                   f"gateway/{c['name']}: a volume is mounted for ca.dir {ca_dir}")
        expect(volumes["state"].get("emptyDir") is not None, "gateway: the state volume is not the pod's own")
        if "store_ca_file" in control:
            expect(any(under(control["store_ca_file"], m["mountPath"]) and m["name"] not in ("state", "tmp")
                       for m in cordon.get("volumeMounts", [])),
                   "gateway: no volume of the cordon container holds control.store_ca_file")

        # Every Secret key referenced is in the example Secret, which holds only placeholders.
        secrets = {d["metadata"]["name"]: d for d in load("gateway/secret.yaml") if d["kind"] == "Secret"}
        secret_text = open(f"{root}/gateway/secret.yaml").read()
        for c in containers(pod):
            for var, ref in secret_refs(c).items():
                expect(ref["key"] in secret_keys(secrets.get(ref["name"], {})),
                       f"gateway/{c['name']}: {var} takes key {ref['key']} of Secret {ref['name']}, "
                       "which secret.yaml lacks")
                expect(not ref.get("optional"), f"gateway/{c['name']}: {var}'s secretKeyRef must not be optional")
        for v in pod["volumes"]:
            if "secret" in v:
                name = v["secret"]["secretName"]
                expect(name in secrets, f"gateway: volume {v['name']} mounts Secret {name}, not in secret.yaml")
                for item in v["secret"].get("items", []):
                    # A key the example lacks only if it is optional: named in secret.yaml's comments (which
                    # say how to add it) and mounted from an optional volume (the kubelet then skips it).
                    expect(item["key"] in secret_keys(secrets.get(name, {})) or (
                        v["secret"].get("optional") is True and f" {item['key']}" in secret_text),
                           f"gateway: volume {v['name']} takes key {item['key']}, which {name} lacks")
        for name, secret in secrets.items():
            values = {**secret.get("stringData", {}), **secret.get("data", {})}
            expect(all(str(val).startswith("REPLACE-ME") for val in values.values()),
                   f"gateway: Secret {name} in secret.yaml holds a value that is not a REPLACE-ME placeholder")

        # The config's `{ env: X }` under control.* is set in cordon's environment from a Secret, and given to
        # cordon-prepare too (which stops the pod on a placeholder).
        cordon_refs, prepare_refs = secret_refs(cordon), secret_refs(prepare)
        for field, ref in control.items():
            if isinstance(ref, dict) and "env" in ref:
                var = ref["env"]
                expect(var in cordon_refs, f"gateway: control.{field} reads {var}, which no secretKeyRef sets")
                expect(prepare_refs.get(var) == cordon_refs.get(var),
                       f"gateway: cordon-prepare does not get {var} as cordon does (its placeholder check)")

# The monitors (monitoring/<flavour>, each a kustomization of the base and its monitor): they scrape the port
# listen.admin is on, by the name the pod gives it, at /metrics, with the admin port's scheme, and send no
# credentials: /metrics takes none (docs/openapi.yaml), and the admin token would open the whole admin API.
openapi = yaml.safe_load(open("docs/openapi.yaml"))
metrics = (openapi["paths"].get("/metrics") or {}).get("get") or {}
expect(metrics.get("security") == [], "docs/openapi.yaml: GET /metrics is not open (security: []), yet the "
       "monitors send no credentials")
CREDENTIALS = ("authorization", "basicAuth", "bearerTokenSecret", "bearerTokenFile", "oauth2")
for flavour, kind, file, key in (("sidecar", "PodMonitor", "podmonitor.yaml", "podMetricsEndpoints"),
                                 ("gateway", "ServiceMonitor", "servicemonitor.yaml", "endpoints")):
    where = f"monitoring/{flavour}"
    kust = yaml.safe_load(open(f"{root}/{where}/kustomization.yaml"))
    base = yaml.safe_load(open(f"{root}/{flavour}/kustomization.yaml"))
    expect(f"../../{flavour}" in kust["resources"] and file in kust["resources"],
           f"{where}: the kustomization must list ../../{flavour} and {file}")
    expect(kust.get("namespace") == base.get("namespace"),
           f"{where}: namespace {kust.get('namespace')} is not the base's ({base.get('namespace')})")
    monitor = one(load(f"{where}/{file}"), kind)
    config = yaml.safe_load(one(load(f"{flavour}/configmap.yaml"), "ConfigMap")["data"]["cordon.yaml"])
    deployment = one(load(f"{flavour}/deployment.yaml"), "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    cordon = by_name(pod, "cordon")
    admin_port = port(config["listen"]["admin"])
    admin_tls = bool((config.get("admin") or {}).get("tls"))
    expect("namespace" not in monitor["metadata"] and "namespaceSelector" not in monitor["spec"],
           f"{where}: {kind} must stay in the namespace it is applied to, the pods' (no namespace, no "
           "namespaceSelector)")
    endpoints = monitor["spec"][key]
    expect(len(endpoints) == 1, f"{where}: {kind} has {len(endpoints)} endpoints, not one")
    ep = endpoints[0]
    expect(ep.get("path") == "/metrics", f"{where}: {kind} scrapes {ep.get('path')}, not /metrics")
    want = "https" if admin_tls else "http"
    expect(ep.get("scheme") == want, f"{where}: {kind} scrapes with scheme {ep.get('scheme')}, but the admin port "
           f"is {want} ({'with' if admin_tls else 'without'} admin.tls)")
    for field in CREDENTIALS:
        expect(field not in ep, f"{where}: {kind} sends credentials ({field}); /metrics takes none")
    tls_config = ep.get("tlsConfig") or {}
    expect(not tls_config.get("insecureSkipVerify"), f"{where}: {kind} does not verify the admin certificate")
    # The port by name: the cordon container's port on listen.admin, and no other container's.
    named = [(c["name"], p["containerPort"]) for c in containers(pod) for p in c.get("ports", [])
             if p.get("name") == ep.get("port")]
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    if flavour == "sidecar":
        expect(named == [("cordon", admin_port)],
               f"{where}: PodMonitor port {ep.get('port')} is {named}, not cordon's listen.admin ({admin_port})")
        selector = monitor["spec"]["selector"]
        expect(set(selector) == {"matchLabels"} and selector["matchLabels"].items() <= template_labels.items(),
               f"{where}: PodMonitor selects {selector}, not the agent pods ({template_labels})")
        expect(not tls_config, f"{where}: PodMonitor has a tlsConfig for a plain admin port")
    else:
        # The Services the ServiceMonitor selects with a port of that name: the admin Service alone, whose port
        # leads to cordon's listen.admin.
        services = [d for d in load("gateway/service.yaml") if d["kind"] == "Service"]
        selector = monitor["spec"]["selector"]
        expect(set(selector) == {"matchLabels"}, f"{where}: ServiceMonitor selector {selector}: matchLabels only")
        chosen = [(svc["metadata"]["name"], p) for svc in services
                  if selector.get("matchLabels", {}).items() <= svc["metadata"].get("labels", {}).items()
                  for p in svc["spec"]["ports"] if p.get("name") == ep.get("port")]
        expect(len(chosen) == 1, f"{where}: ServiceMonitor port {ep.get('port')} is on {len(chosen)} Services")
        if chosen:
            svc_name, svc_port = chosen[0]
            target = svc_port.get("targetPort", svc_port["port"])
            to = [p["containerPort"] for p in cordon.get("ports", []) if target in (p.get("name"), p["containerPort"])]
            expect(to == [admin_port], f"{where}: Service {svc_name} port {ep.get('port')} leads to {to}, not "
                   f"listen.admin ({admin_port})")
            server_name = f"{svc_name}.{base['namespace']}.svc"
            expect(tls_config.get("serverName") == server_name,
                   f"{where}: tlsConfig.serverName is {tls_config.get('serverName')}, not {server_name}, the name "
                   "the admin certificate carries (secret.yaml)")
            expect(server_name in open(f"{root}/gateway/secret.yaml").read(),
                   f"gateway/secret.yaml does not say the admin certificate is for {server_name}")
        ca = (tls_config.get("ca") or {}).get("secret") or {}
        expect(bool(ca.get("name")) and bool(ca.get("key")),
               f"{where}: tlsConfig.ca must come from a Secret (name and key)")
        # Prometheus through the NetworkPolicy: its pods, from the namespace monitoring, to the admin port only.
        policy = one(load(f"{where}/networkpolicy.yaml"), "NetworkPolicy")
        gateway_labels = deployment["spec"]["selector"]["matchLabels"]
        expect(policy["spec"]["podSelector"] == {"matchLabels": gateway_labels},
               f"{where}: the NetworkPolicy selects {policy['spec']['podSelector']}, not the gateway pods")
        expect(policy["spec"].get("policyTypes") == ["Ingress"] and len(policy["spec"]["ingress"]) == 1,
               f"{where}: the NetworkPolicy must have one Ingress rule")
        rule = policy["spec"]["ingress"][0]
        peers = rule.get("from", [])
        expect(len(peers) == 1 and peers[0].get("namespaceSelector") == {
            "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}} and bool(peers[0].get("podSelector")),
               f"{where}: the NetworkPolicy must admit Prometheus pods (a podSelector) of the namespace "
               f"monitoring only, in one peer: {peers}")
        expect(rule.get("ports") == [{"port": admin_port, "protocol": "TCP"}],
               f"{where}: the NetworkPolicy must open the admin port {admin_port}/TCP only: {rule.get('ports')}")

print(f"{checks} checks")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
EOF
    ok "sidecar, gateway and their monitors: $(head -n 1 "$work/agree.out")"
else
    bad "the files disagree:"
    sed 's/^/         /' "$work/agree.out"
fi
if [ -n "${CORDON_BIN:-}" ]; then
    # cordon reads control.store_ca_file and admin.tls's files when it loads the configuration: certificates
    # made here stand in for the ones the pod gets (a PostgreSQL CA; the admin listener's certificate and key,
    # which the Secret's admin-tls.crt and admin-tls.key hold), so that the configuration can be checked.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/store-ca.key" \
        -out "$work/store-ca.pem" -days 1 -subj /CN=postgres-ca >/dev/null 2>&1 || true
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=cordon-gateway-admin.cordon.svc -addext subjectAltName=DNS:cordon-gateway-admin.cordon.svc \
        -keyout "$work/admin-tls.key" -out "$work/admin-tls.crt" >/dev/null 2>&1 ||
        bad "openssl could not make a stand-in certificate for admin.tls"
    for cm in "$DEPLOY"/*/configmap.yaml; do
        # The configuration with those files swapped in; and, in $work/admin.expect, how `cordon check` must
        # describe the admin listener: HTTPS with admin.tls, plain HTTP (probes and /metrics only) off loopback
        # without it.
        python3 - "$cm" "$work" >"$work/cordon.yaml" <<'EOF'
import ipaddress, sys, yaml
cm, work = sys.argv[1:]
text = yaml.safe_load(open(cm))["data"]["cordon.yaml"]
config = yaml.safe_load(text)
swap = {}
ca_file = (config.get("control") or {}).get("store_ca_file")
if ca_file:
    swap[ca_file] = f"{work}/store-ca.pem"
tls = (config.get("admin") or {}).get("tls") or {}
for field, stand_in in (("cert", "admin-tls.crt"), ("key", "admin-tls.key"), ("client_ca", "store-ca.pem")):
    ref = tls.get(field)
    if isinstance(ref, dict) and "file" in ref:
        swap[ref["file"]] = f"{work}/{stand_in}"
for path in sorted(swap, key=len, reverse=True):
    text = text.replace(path, swap[path])
print(text, end="")
admin = str((config.get("listen") or {}).get("admin", ""))
if tls:
    how = "HTTPS, /v1 callers need a client certificate" if tls.get("client_ca") else "HTTPS"
elif admin and ipaddress.ip_address(admin.rsplit(":", 1)[0].strip("[]")).is_loopback:
    how = "plain HTTP on loopback"
else:
    how = "plain HTTP off loopback: /healthz, /readyz and /metrics only; /v1 needs admin.tls"
with open(f"{work}/admin.expect", "w") as f:
    f.write(f"admin {admin} ({how})" if admin else "(no admin API)")
EOF
        # cordon check reads every secret a start reads; the pod gets the `env:` ones from its Secret
        # (secretKeyRef, compared with the manifests above), so stand-ins are set here.
        python3 - "$work/cordon.yaml" >"$work/check.env" <<'EOF'
import sys, yaml
def walk(v):
    if isinstance(v, dict):
        if isinstance(v.get("env"), str):
            print(f"{v['env']}=stand-in-for-the-pod-secret")
        for x in v.values():
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(yaml.safe_load(open(sys.argv[1])))
EOF
        # shellcheck disable=SC2046  # one NAME=value word per line, no spaces
        if env $(cat "$work/check.env") "$CORDON_BIN" check --config "$work/cordon.yaml" >"$work/check.out" 2>&1; then
            ok "cordon check: $cm"
            if grep -qF -- "$(cat "$work/admin.expect")" "$work/check.out"; then
                ok "cordon check: $cm: $(cat "$work/admin.expect")"
            else
                bad "cordon check: $cm does not say: $(cat "$work/admin.expect")"
                sed 's/^/         /' "$work/check.out"
            fi
        else
            bad "cordon check: $cm:"
            sed 's/^/         /' "$work/check.out"
        fi
    done
else
    echo "  (set CORDON_BIN=path/to/cordon to also run \`cordon check\` on each embedded cordon.yaml)"
fi

echo "== 4. scripts"
for script in "$SCRIPTS/redirect.sh" "$SCRIPTS/prepare.sh"; do
    for shell in sh dash; do
        command -v "$shell" >/dev/null 2>&1 || continue
        if "$shell" -n "$script" 2>"$work/sh.err"; then
            ok "$shell -n $script"
        else
            bad "$shell -n $script: $(cat "$work/sh.err")"
        fi
    done
    if head -n 1 "$script" | grep -qx '#!/bin/sh' && grep -qx 'set -eu' "$script"; then
        ok "$script: #!/bin/sh and set -eu"
    else
        bad "$script: must start with #!/bin/sh and set -eu"
    fi
done
if sh "$SCRIPTS/redirect.sh" --dry-run >"$work/dry.out" 2>&1; then
    missing=0
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        grep -qxF -- "$line" "$work/dry.out" || {
            bad "redirect.sh --dry-run does not print: $line"
            missing=$((missing + 1))
        }
    done <<'EOF'
iptables -t nat -N CORDON_OUTPUT
iptables -t nat -A CORDON_OUTPUT -m owner --uid-owner 1337 -j RETURN
iptables -t nat -A CORDON_OUTPUT -d 127.0.0.0/8 -j RETURN
iptables -t nat -A CORDON_OUTPUT -p udp --dport 53 -j REDIRECT --to-ports 15053
iptables -t nat -A CORDON_OUTPUT -p tcp --dport 53 -j REDIRECT --to-ports 15053
iptables -t nat -A CORDON_OUTPUT -p tcp -j REDIRECT --to-ports 15001
iptables -t nat -I OUTPUT 1 -j CORDON_OUTPUT
iptables -t filter -N CORDON_EGRESS
iptables -t filter -A CORDON_EGRESS -o lo -p tcp --dport 9090 -m owner ! --uid-owner 1337 -j REJECT --reject-with tcp-reset
iptables -t filter -A CORDON_EGRESS -m owner --uid-owner 1337 -j RETURN
iptables -t filter -A CORDON_EGRESS -d 127.0.0.0/8 -j RETURN
iptables -t filter -A CORDON_EGRESS -o lo -j RETURN
iptables -t filter -A CORDON_EGRESS -p udp -j DROP
iptables -t filter -A CORDON_EGRESS -p icmp -j DROP
iptables -t filter -A CORDON_EGRESS -j DROP
iptables -t filter -I OUTPUT 1 -j CORDON_EGRESS
ip6tables -t nat -A CORDON_OUTPUT -m owner --uid-owner 1337 -j RETURN
ip6tables -t nat -A CORDON_OUTPUT -d ::1/128 -j RETURN
ip6tables -t nat -A CORDON_OUTPUT -p udp --dport 53 -j REDIRECT --to-ports 15053
ip6tables -t nat -A CORDON_OUTPUT -p tcp -j REDIRECT --to-ports 15001
ip6tables -t nat -I OUTPUT 1 -j CORDON_OUTPUT
ip6tables -t filter -A CORDON_EGRESS -m owner --uid-owner 1337 -j RETURN
ip6tables -t filter -A CORDON_EGRESS -d ::1/128 -j RETURN
ip6tables -t filter -A CORDON_EGRESS -p ipv6-icmp --icmpv6-type neighbour-solicitation -j RETURN
ip6tables -t filter -A CORDON_EGRESS -p udp -j DROP
ip6tables -t filter -A CORDON_EGRESS -p ipv6-icmp -j DROP
ip6tables -t filter -A CORDON_EGRESS -j DROP
ip6tables -t filter -I OUTPUT 1 -j CORDON_EGRESS
EOF
    [ "$missing" -ne 0 ] || ok "redirect.sh --dry-run prints the expected IPv4 and IPv6 rules"
    # Nothing but comments and iptables commands: the dry run is a script one could run.
    if grep -vE '^(cordon-redirect: |ip6?tables )' "$work/dry.out" >"$work/stray.out"; then
        bad "redirect.sh --dry-run printed unexpected lines:"
        sed 's/^/         /' "$work/stray.out"
    else
        ok "redirect.sh --dry-run prints only commands and cordon-redirect: notes"
    fi
else
    bad "redirect.sh --dry-run failed:"
    sed 's/^/         /' "$work/dry.out"
fi
# prepare.sh stops the pod on a template's placeholder handed over as an environment variable (a secretKeyRef).
prepare_env=(env -i "PATH=$PATH" "CORDON_STATE=$work/prepare-state" "CORDON_SECRETS=$work/none")
mkdir "$work/prepare-state"
rc=0
"${prepare_env[@]}" CORDON_STORE_KEY=REPLACE-ME-with-openssl-rand-hex-32 sh "$SCRIPTS/prepare.sh" \
    >"$work/prepare.out" 2>&1 || rc=$?
if [ "$rc" -eq 1 ] && grep -q 'CORDON_STORE_KEY still hold' "$work/prepare.out"; then
    ok "prepare.sh stops the pod on a REPLACE-ME placeholder in its environment"
else
    bad "prepare.sh with CORDON_STORE_KEY=REPLACE-ME... exited $rc: $(cat "$work/prepare.out")"
fi
rc=0
"${prepare_env[@]}" CORDON_STORE_KEY=0123456789abcdef0123456789abcdef sh "$SCRIPTS/prepare.sh" \
    >"$work/prepare.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] && ok "prepare.sh runs with real values in its environment" ||
    bad "prepare.sh with a real CORDON_STORE_KEY exited $rc: $(cat "$work/prepare.out")"
rc=0
sh "$SCRIPTS/redirect.sh" --no-such-flag >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] && ok "redirect.sh refuses an unknown argument (exit 2)" || bad "redirect.sh --no-such-flag exited $rc"
rc=0
CORDON_DNS_PORT=x sh "$SCRIPTS/redirect.sh" --dry-run >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] && ok "redirect.sh refuses a port that is not a number" || bad "CORDON_DNS_PORT=x exited $rc"

echo "== 5. redirect.sh for real, in a private network namespace"
netns_skip=
if [ "${CORDON_K8S_NETNS:-1}" = 0 ]; then
    netns_skip="CORDON_K8S_NETNS=0"
elif [ "$(id -u)" != 0 ]; then
    netns_skip="not root"
else
    for tool in unshare ip iptables ip6tables; do
        command -v "$tool" >/dev/null 2>&1 || netns_skip="$tool is not installed"
    done
    [ -n "$netns_skip" ] || unshare -n true 2>/dev/null || netns_skip="unshare -n is not permitted here"
fi
if [ -n "$netns_skip" ]; then
    echo "  skipped: $netns_skip"
else
    cat >"$work/probe.py" <<'EOF'
"""Drive the rules redirect.sh installed, as the app's UID and as cordon's, inside the private netns."""
import os, socket, struct, sys

APP, CORDON = 1000, 1337
TARGET4, TARGET6 = "192.0.2.10", "2001:db8::10"   # documentation addresses, routed into a veth of this netns
SO_ORIGINAL_DST = 80
failures = []


def check(name, good, detail=""):
    print(f"{'ok  ' if good else 'FAIL'} {name}{': ' + detail if detail and not good else ''}")
    if not good:
        failures.append(name)


def as_uid(uid, fn):
    """Run fn() in a child process with this UID; its outcome (a short string) comes back through a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out = fn()
        except Exception as e:
            out = type(e).__name__
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    return r, pid


def outcome(handle):
    r, pid = handle
    data = b""
    while chunk := os.read(r, 100):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def tcp(family, host, port, wait_reply=True):
    def go():
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(3 if wait_reply else 1)
        s.connect((host, port))
        if wait_reply:
            s.recv(1)
        return "connected"
    return go


def udp(family, host, port):
    def go():
        socket.socket(family, socket.SOCK_DGRAM).sendto(b"q", (host, port))
        return "sent"
    return go


def ping(host):
    def go():
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
        s.sendto(b"\x08\x00\xf7\xff\x00\x00\x00\x00", (host, 0))
        return "sent"
    return go


def listener(family, kind, addr):
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(addr)
    if kind == socket.SOCK_STREAM:
        s.listen(8)
    s.settimeout(3)
    return s


def original_dst(conn, family):
    if family == socket.AF_INET:
        raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        return f"{socket.inet_ntop(socket.AF_INET, raw[4:8])}:{struct.unpack_from('!H', raw, 2)[0]}"
    raw = conn.getsockopt(socket.IPPROTO_IPV6, SO_ORIGINAL_DST, 28)
    return f"{socket.inet_ntop(socket.AF_INET6, raw[8:24])}:{struct.unpack_from('!H', raw, 2)[0]}"


def redirected(family, lst, target, port, what):
    h = as_uid(APP, tcp(family, target, port))
    try:
        conn, _ = lst.accept()
        dst = original_dst(conn, family)
        conn.send(b"x")
        conn.close()
    except OSError as e:
        dst = type(e).__name__
    out = outcome(h)
    want = f"{target}:{port}"
    check(f"app TCP to {want} reaches {what}, original destination intact",
          dst == want and out == "connected", f"listener saw {dst}, client {out}")


t4 = listener(socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", 15001))
t6 = listener(socket.AF_INET6, socket.SOCK_STREAM, ("::", 15001))
d4 = listener(socket.AF_INET, socket.SOCK_DGRAM, ("0.0.0.0", 15053))
dt4 = listener(socket.AF_INET, socket.SOCK_STREAM, ("0.0.0.0", 15053))
admin = listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 9090))

redirected(socket.AF_INET, t4, TARGET4, 443, "the transparent listener")
redirected(socket.AF_INET, t4, TARGET4, 80, "the transparent listener")
redirected(socket.AF_INET6, t6, TARGET6, 443, "the transparent listener")
redirected(socket.AF_INET, dt4, TARGET4, 53, "the DNS listener")
out = outcome(as_uid(APP, udp(socket.AF_INET, TARGET4, 53)))
try:
    got = d4.recvfrom(16)[0].decode()
except OSError as e:
    got = type(e).__name__
check("app DNS over UDP reaches the DNS listener", out == "sent" and got == "q", f"client {out}, listener {got}")
out = outcome(as_uid(APP, udp(socket.AF_INET, TARGET4, 443)))
check("app UDP (QUIC) to the outside is dropped", out == "PermissionError", out)
out = outcome(as_uid(APP, udp(socket.AF_INET6, TARGET6, 443)))
check("app UDP over IPv6 is dropped", out == "PermissionError", out)
out = outcome(as_uid(APP, ping(TARGET4)))
check("app ICMP echo is dropped", out == "PermissionError", out)
out = outcome(as_uid(APP, udp(socket.AF_INET, "127.0.0.1", 5000)))
check("app UDP to loopback is allowed", out == "sent", out)
out = outcome(as_uid(APP, tcp(socket.AF_INET, "127.0.0.1", 9090, wait_reply=False)))
check("app TCP to the loopback admin port is refused", out == "ConnectionRefusedError", out)
out = outcome(as_uid(CORDON, tcp(socket.AF_INET, "127.0.0.1", 9090, wait_reply=False)))
check("cordon's UID reaches the admin port", out == "connected", out)
t4.settimeout(1.5)
out = outcome(as_uid(CORDON, tcp(socket.AF_INET, TARGET4, 443, wait_reply=False)))
try:
    t4.accept()
    seen = "redirected"
except OSError:
    seen = "not redirected"
check("cordon's UID goes out directly, not redirected", seen == "not redirected", f"{seen}, client {out}")
sys.exit(1 if failures else 0)
EOF
    cat >"$work/netns.sh" <<'EOF'
set -eu
script=$1 probe=$2 out=$3 save=$4 save6=$5
ip link set lo up
sysctl -qw net.ipv4.ping_group_range="0 2147483647"   # lets the app UID open an ICMP socket, to be dropped
ip link add cordon-v0 type veth peer name cordon-v1
ip addr add 192.0.2.1/24 dev cordon-v0
ip -6 addr add 2001:db8::1/64 dev cordon-v0 nodad
ip link set cordon-v0 up
ip link set cordon-v1 up
ip route add default dev cordon-v0
ip -6 route add default dev cordon-v0
sh "$script" >"$out.run1" 2>&1
# The rules as saved, without comments and packet counters (the kernel's own IPv6 chatter moves them).
rules() { "$save"; "$save6"; }
rules | grep -v '^#' | sed -E 's/ \[[0-9]+:[0-9]+\]$//' >"$out.rules1"
sh "$script" >"$out.run2" 2>&1
rules | grep -v '^#' | sed -E 's/ \[[0-9]+:[0-9]+\]$//' >"$out.rules2"
python3 "$probe"
EOF
    for backend in iptables-nft iptables-legacy; do
        command -v "$backend" >/dev/null 2>&1 || {
            echo "  ($backend is not installed)"
            continue
        }
        flavour=${backend#iptables}   # -nft / -legacy: read the rules back through the same backend
        out="$work/$backend"
        rc=0
        CORDON_IPTABLES=$backend timeout 120 unshare -n sh "$work/netns.sh" "$SCRIPTS/redirect.sh" \
            "$work/probe.py" "$out" "iptables$flavour-save" "ip6tables$flavour-save" >"$out.probe" 2>&1 || rc=$?
        if [ -f "$out.run1" ] && grep -q "found $backend" "$out.run1"; then
            ok "$backend: redirect.sh ran ($(grep -o "found $backend: .*" "$out.run1"))"
        else
            bad "$backend: redirect.sh did not run:"
            sed 's/^/         /' "$out.run1" "$out.probe" 2>/dev/null | tail -n 20
            continue
        fi
        if [ -s "$out.rules1" ] && cmp -s "$out.rules1" "$out.rules2"; then
            ok "$backend: a second run leaves the same rules ($(grep -c CORDON "$out.rules2") CORDON lines)"
        else
            bad "$backend: a second run changed the rules:"
            diff "$out.rules1" "$out.rules2" | sed 's/^/         /' | head -n 20
        fi
        while IFS= read -r line; do
            case $line in
                "ok   "*) ok "$backend: ${line#ok   }" ;;
                "FAIL "*) bad "$backend: ${line#FAIL }" ;;
                *) [ -z "$line" ] || echo "         $line" ;;
            esac
        done <"$out.probe"
        [ "$rc" -eq 0 ] || grep -q '^FAIL ' "$out.probe" || bad "$backend: the probe exited $rc"
    done
fi

echo "== 6. the sidecar end to end, in a private network namespace"
if [ -n "$netns_skip" ]; then
    echo "  skipped: $netns_skip"
elif [ -z "${CORDON_BIN:-}" ]; then
    echo "  skipped: set CORDON_BIN=path/to/cordon (built from this tree) to run it"
elif ! command -v openssl >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    echo "  skipped: needs openssl and curl"
else
    cat >"$work/e2e.py" <<'EOF'
"""The sidecar end to end, in a private network namespace: redirect.sh, prepare.sh and cordon as the pod runs
them, then the app's UID tries HTTP, HTTPS (trusting the exported CA), DNS and the admin port."""
import http.server, os, shutil, signal, socket, socketserver, ssl, struct, subprocess, sys, tempfile, threading
import time

import yaml

deploy, cordon_bin = sys.argv[1], sys.argv[2]
POD_IP, UPSTREAM = "192.0.2.1", "app.test"
failures = []


def check(name, good, detail=""):
    print(f"{'ok  ' if good else 'FAIL'} sidecar end to end: {name}{': ' + detail if detail and not good else ''}")
    if not good:
        failures.append(name)


def sh(*cmd):
    subprocess.run(cmd, check=True)


# The app's servers: TCP 8081 and 7777 send data to whoever connects; UDP 7778 answers every datagram.
APP_SERVER = """
import socket, sys, threading
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((sys.argv[1], port))
    s.listen()
    while True:
        c, _ = s.accept(); c.sendall(b"the app's data"); c.close()
for port in (8081, 7777):
    threading.Thread(target=tcp, args=(port,), daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], 7778))
while True:
    data, peer = u.recvfrom(100); u.sendto(b"the app's data", peer)
"""

# The peer: what it gets out of each; and, as Prometheus, the URL the PodMonitor makes (argv[2]).
PEER = """
import socket, sys, urllib.request
try:
    body = urllib.request.urlopen(sys.argv[2], timeout=5).read().decode()
    print("metrics=" + ("cordon" if "cordon_build_info" in body else "other"))
except OSError as e:
    print(f"metrics={type(e).__name__}")
for port in (8081, 7777):
    try:
        c = socket.create_connection((sys.argv[1], port), timeout=2); c.settimeout(2)
        print(f"tcp{port}=" + ("data" if c.recv(100) else "none"))
    except OSError:
        print(f"tcp{port}=none")
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
u.sendto(b"hello", (sys.argv[1], 7778))
try:
    print("udp7778=" + ("data" if u.recv(100) else "none"))
except OSError:
    print("udp7778=none")
"""


def as_uid(uid):
    def demote():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return demote


# --- the pod as deployment.yaml and configmap.yaml describe it --------------------------------------------
docs = [d for d in yaml.safe_load_all(open(f"{deploy}/sidecar/deployment.yaml")) if d]
pod = docs[0]["spec"]["template"]["spec"]
by_name = {c["name"]: c for c in pod["initContainers"] + pod["containers"]}
env_of = lambda c: {e["name"]: e["value"] for e in by_name[c].get("env", []) if "value" in e}
redirect_env, prepare_env = env_of("cordon-redirect"), env_of("cordon-prepare")
# The app below serves TCP 8081 (declared, as a Service's targetPort would be) and 7777 and UDP 7778 (not).
redirect_env["CORDON_INBOUND_PORTS"] = "8081"
cordon_uid = by_name["cordon"]["securityContext"]["runAsUser"]
app = pod["containers"][0]
app_uid = app["securityContext"]["runAsUser"]
app_env = {e["name"]: e["value"] for e in app.get("env", [])}
sandbox = prepare_env["CORDON_EXPORT_SANDBOX"]
config_text = yaml.safe_load(open(f"{deploy}/sidecar/configmap.yaml"))["data"]["cordon.yaml"]

work = tempfile.mkdtemp(prefix="cordon-e2e-")
os.chmod(work, 0o755)
paths = {p: f"{work}/{p}" for p in ("state", "public", "secrets", "www")}
for p in paths.values():
    os.mkdir(p)
os.chown(paths["state"], cordon_uid, cordon_uid)
os.chown(paths["public"], cordon_uid, cordon_uid)
with open(f"{paths['secrets']}/vault-key", "w") as f:
    f.write(os.urandom(32).hex() + "\n")
os.chmod(f"{paths['secrets']}/vault-key", 0o444)
with open(f"{paths['www']}/hello.txt", "w") as f:
    f.write("hello through cordon\n")

# The shipped configuration, with its state moved into the test folder and one local upstream opened.
config = yaml.safe_load(config_text.replace("/var/lib/cordon", paths["state"]))
config["network"] = {"allow_cidrs": ["192.0.2.0/24"], "hosts": {UPSTREAM: POD_IP}}
config["upstream"] = {"extra_roots": [f"{work}/upstream.pem"]}
config["policies"][config["sandboxes"][0]["policy"]]["allow"].append({"host": UPSTREAM, "ports": [8080, 8443]})
with open(f"{work}/cordon.yaml", "w") as f:
    yaml.safe_dump(config, f)
os.chmod(f"{work}/cordon.yaml", 0o644)
subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{work}/upstream.key", "-out", f"{work}/upstream.pem", "-days", "2",
                "-subj", f"/CN={UPSTREAM}", "-addext", f"subjectAltName=DNS:{UPSTREAM}",
                "-addext", "basicConstraints=critical,CA:FALSE"],
               check=True, capture_output=True)
os.chmod(f"{work}/upstream.pem", 0o644)

# --- the network namespace: loopback, one veth with the "pod IP", a default route into it ----------------
sh("ip", "link", "set", "lo", "up")
sh("ip", "link", "add", "cordon-v0", "type", "veth", "peer", "name", "cordon-v1")
sh("ip", "addr", "add", f"{POD_IP}/24", "dev", "cordon-v0")
sh("ip", "link", "set", "cordon-v0", "up")
sh("ip", "link", "set", "cordon-v1", "up")
sh("ip", "route", "add", "default", "dev", "cordon-v0")

# Upstreams (threads of this root process; replies to accepted connections are never redirected).
class Quiet(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=paths["www"], **k)

    def log_message(self, *a):
        pass


socketserver.TCPServer.allow_reuse_address = True
plain = socketserver.ThreadingTCPServer((POD_IP, 8080), Quiet)
tls = socketserver.ThreadingTCPServer((POD_IP, 8443), Quiet)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{work}/upstream.pem", f"{work}/upstream.key")
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
for srv in (plain, tls):
    threading.Thread(target=srv.serve_forever, daemon=True).start()

# --- the pod's containers, in order ------------------------------------------------------------------------
# The scripts and the binary are copied where UID 1337 can read them (the checkout or the build folder may
# not be), as the pod has them in a ConfigMap and in the image.
scripts = f"{work}/scripts"
os.mkdir(scripts)
for name in ("redirect.sh", "prepare.sh"):
    shutil.copy(f"{deploy}/scripts/{name}", f"{scripts}/{name}")
    os.chmod(f"{scripts}/{name}", 0o555)
os.mkdir(f"{work}/bin")
shutil.copy(cordon_bin, f"{work}/bin/cordon")
os.chmod(f"{work}/bin/cordon", 0o755)
cordon_bin = f"{work}/bin/cordon"
r = subprocess.run(["sh", f"{scripts}/redirect.sh"], env={**os.environ, **redirect_env}, capture_output=True,
                   text=True)
check("cordon-redirect installs the rules", r.returncode == 0, r.stdout[-500:] + r.stderr[-500:])
bindir = f"{work}/bin"
prep_env = {"PATH": f"{bindir}:/usr/bin:/bin", "CORDON_STATE": paths["state"], "CORDON_SECRETS": paths["secrets"],
            "CORDON_PUBLIC": paths["public"], **prepare_env, "CORDON_CONFIG": f"{work}/cordon.yaml"}
r = subprocess.run(["sh", f"{scripts}/prepare.sh"], env=prep_env, preexec_fn=as_uid(cordon_uid),
                   capture_output=True, text=True)
check("cordon-prepare exports the sandbox's CA", r.returncode == 0 and os.path.getsize(
    f"{paths['public']}/ca.pem") > 0, r.stdout[-500:] + r.stderr[-500:])
args = [a if a != "/etc/cordon/cordon.yaml" else f"{work}/cordon.yaml" for a in by_name["cordon"]["args"]]
log = open(f"{work}/cordon.log", "w")
proxy = subprocess.Popen([cordon_bin, *args], stdout=log, stderr=subprocess.STDOUT, preexec_fn=as_uid(cordon_uid))
try:
    # The kubelet's probe, with the probe's scheme (HTTPS with admin.tls: the kubelet does not verify, -k).
    scheme = by_name["cordon"]["readinessProbe"]["httpGet"].get("scheme", "HTTP").lower()
    ready = False
    for _ in range(100):
        probe = subprocess.run(["curl", "-s", "-k", "-o", "/dev/null", "-w", "%{http_code}", "-m", "1",
                                f"{scheme}://{POD_IP}:9090/readyz"], capture_output=True, text=True,
                               preexec_fn=as_uid(cordon_uid))   # the kubelet's probe is not redirected either
        if probe.stdout == "200":
            ready = True
            break
        time.sleep(0.2)
    check("cordon's readiness probe passes", ready)
    if scheme == "http":
        # A plain admin listener off loopback serves the probes and /metrics only: no admin API.
        out = subprocess.run(["curl", "-s", "-m", "5", "-w", "\n%{http_code}", f"http://{POD_IP}:9090/v1/sandboxes"],
                             capture_output=True, text=True, preexec_fn=as_uid(cordon_uid))
        check("/v1 on the plain admin port (no admin.tls) answers 403 admin_needs_tls",
              out.stdout.endswith("\n403") and "admin_needs_tls" in out.stdout, out.stdout[-300:])
        out = subprocess.run(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}",
                              f"http://{POD_IP}:9090/metrics"], capture_output=True, text=True,
                             preexec_fn=as_uid(cordon_uid))
        check("/metrics on the plain admin port is served", out.stdout == "200", out.stdout)

    # --- the app ------------------------------------------------------------------------------------------
    def app_curl(*extra, env=None):
        return subprocess.run(["curl", "-s", "-m", "5", *extra], capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", **(env or {})}, preexec_fn=as_uid(app_uid))

    ca_env = {k: v.replace("/etc/cordon-ca", paths["public"]) for k, v in app_env.items()}
    out = app_curl("-H", f"Host: {UPSTREAM}:8080", f"http://{POD_IP}:8080/hello.txt")
    check("plain HTTP to an allowed host goes through", out.stdout == "hello through cordon\n", out.stdout)
    out = app_curl("--resolve", f"{UPSTREAM}:8443:{POD_IP}", f"https://{UPSTREAM}:8443/hello.txt", env=ca_env)
    check("HTTPS, intercepted, verifies with CURL_CA_BUNDLE as the pod sets it",
          out.stdout == "hello through cordon\n", f"exit {out.returncode} {out.stdout}")
    out = app_curl("--resolve", f"{UPSTREAM}:8443:{POD_IP}", f"https://{UPSTREAM}:8443/hello.txt")
    check("HTTPS fails without the sandbox's CA", out.returncode == 60, f"exit {out.returncode}")
    out = app_curl("-i", "-H", "Host: evil.test:8080", f"http://{POD_IP}:8080/hello.txt")
    check("a host the policy does not name: 403", out.stdout.startswith("HTTP/1.1 403"), out.stdout[:80])
    out = app_curl("-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:9090/healthz")
    check("the admin port on loopback is refused", out.returncode == 7, f"exit {out.returncode} {out.stdout}")
    out = app_curl("-o", "/dev/null", "-w", "%{http_code}", f"http://{POD_IP}:9090/healthz")
    check("the admin port via the pod IP goes to cordon, which refuses it", out.stdout == "403", out.stdout)

    def dns(name):
        query = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
            bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rd)
            as_uid(app_uid)()
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.settimeout(3)
            s.sendto(query, ("198.51.100.53", 53))      # any nameserver: port 53 is redirected
            try:
                answer = s.recv(512)
                n = struct.unpack("!H", answer[6:8])[0]
                out = f"rcode {answer[3] & 15} {socket.inet_ntoa(answer[-4:]) if n else '-'}"
            except OSError as e:
                out = type(e).__name__
            os.write(wr, out.encode())
            os._exit(0)
        os.close(wr)
        out = os.read(rd, 100).decode()
        os.waitpid(pid, 0)
        return out

    got = dns(UPSTREAM)
    check("DNS for an allowed name answers its address", got == f"rcode 0 {POD_IP}", got)
    got = dns("evil.test")
    check("DNS for another name gets no address", got.startswith("rcode") and got.endswith(" -"), got)

    # Clients with a connected UDP socket accept an answer only from the address and port they asked.
    out = subprocess.run(["dig", "+time=2", "+tries=1", "+short", "@198.51.100.53", UPSTREAM],
                         capture_output=True, text=True, preexec_fn=as_uid(app_uid))
    check("dig (a connected UDP socket) gets the answer", out.stdout.strip() == POD_IP,
          f"exit {out.returncode} {out.stdout}{out.stderr}")
    with open(f"{work}/resolv.conf", "w") as f:
        f.write("nameserver 198.51.100.53\noptions timeout:2 attempts:1\n")
    os.chmod(f"{work}/resolv.conf", 0o644)
    out = subprocess.run(["unshare", "-m", "sh", "-c",
                          f"mount --bind {work}/resolv.conf /etc/resolv.conf && exec setpriv --reuid={app_uid} "
                          f"--regid={app_uid} --clear-groups getent ahostsv4 {UPSTREAM}"],
                         capture_output=True, text=True)
    check("glibc's getent resolves through cordon", out.stdout.startswith(POD_IP),
          f"exit {out.returncode} {out.stdout}{out.stderr}")

    # A peer outside the pod (the pod's link moved into a namespace of its own) connects in.
    peer = subprocess.Popen(["unshare", "-n", "sleep", "120"])
    try:
        time.sleep(0.3)
        sh("ip", "link", "set", "cordon-v1", "netns", str(peer.pid))
        into_peer = ["nsenter", "-t", str(peer.pid), "-n"]
        sh(*into_peer, "ip", "addr", "add", "192.0.2.2/24", "dev", "cordon-v1")
        sh(*into_peer, "ip", "link", "set", "cordon-v1", "up")
        server = subprocess.Popen(["python3", "-c", APP_SERVER, POD_IP], preexec_fn=as_uid(app_uid),
                                  stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        # The URL Prometheus scrapes: the PodMonitor's scheme, its port (by name) on the pod's IP, its path.
        monitor = yaml.safe_load(open(f"{deploy}/monitoring/sidecar/podmonitor.yaml"))["spec"]
        ep = monitor["podMetricsEndpoints"][0]
        ports = {p["name"]: p["containerPort"] for c in by_name.values() for p in c.get("ports", [])}
        scrape = f"{ep['scheme']}://{POD_IP}:{ports[ep['port']]}{ep['path']}"
        out = subprocess.run([*into_peer, "python3", "-c", PEER, POD_IP, scrape], capture_output=True, text=True,
                             timeout=30)
        server.kill()
        got = out.stdout.split()
        check("a peer connecting in to a port the app serves (CORDON_INBOUND_PORTS) is answered",
              "tcp8081=data" in got, out.stdout + out.stderr)
        check("a peer connecting in to any other port gets nothing out of the app",
              "tcp7777=none" in got, out.stdout + out.stderr)
        check("a peer's UDP gets no reply out of the app", "udp7778=none" in got, out.stdout + out.stderr)
        check(f"Prometheus outside the pod scrapes {scrape} as the PodMonitor says", "metrics=cordon" in got,
              out.stdout + out.stderr)
    finally:
        peer.kill()
finally:
    proxy.send_signal(signal.SIGTERM)
    try:
        proxy.wait(15)
    except subprocess.TimeoutExpired:
        proxy.kill()
    log.close()
audit = [line for line in open(f"{work}/cordon.log") if line.startswith("{")]
check("cordon audited the app as its sandbox",
      any(f'"sandbox":"{sandbox}"' in line for line in audit), f"{len(audit)} audit lines")
if failures:
    print(open(f"{work}/cordon.log").read()[-3000:])
shutil.rmtree(work, ignore_errors=True)
sys.exit(1 if failures else 0)
EOF
    rc=0
    timeout 180 unshare -n python3 "$work/e2e.py" "$DEPLOY" "$CORDON_BIN" >"$work/e2e.out" 2>&1 || rc=$?
    while IFS= read -r line; do
        case $line in
            "ok   "*) ok "${line#ok   }" ;;
            "FAIL "*) bad "${line#FAIL }" ;;
            *) [ -z "$line" ] || echo "         $line" ;;
        esac
    done <"$work/e2e.out"
    [ "$rc" -eq 0 ] || grep -q '^FAIL ' "$work/e2e.out" || bad "the sidecar end-to-end run exited $rc"
fi

echo "== 7. the admission policy's CEL, against the shipped sidecar pod and the ways around it"
rc=0
python3 .ci/admission-check.py "$DEPLOY" >"$work/admission.out" 2>&1 || rc=$?
while IFS= read -r line; do
    case $line in
        "ok   "*) ok "${line#ok   }" ;;
        "FAIL "*) bad "${line#FAIL }" ;;
        *) [ -z "$line" ] || echo "         $line" ;;
    esac
done <"$work/admission.out"
[ "$rc" -eq 0 ] || grep -q '^FAIL ' "$work/admission.out" || bad "the admission check exited $rc"

echo
echo "k8s-validate: $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    echo "k8s-validate: FAILED: see the FAIL lines above" >&2
    exit 1
fi
