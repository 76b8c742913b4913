"""How long `cordon jail -- CMD` takes to start and to tear down, in both jails (as root, and `--project` as
a user without root): median and range of 10 runs after one warm-up. Start-up is from launching cordon to the
command's first instruction (it writes the time), tear-down from then to cordon's exit, so a command that does
nothing costs start + tear-down.

    sudo python3 benches/jail/startup.py target/release/cordon [USER]

USER (default cordon-jail-t, made if missing) runs the jail without root. Run as root; it writes under a
temporary folder in /tmp and removes it.
"""
import os, subprocess, sys, time, statistics, hashlib, shutil, pwd, tempfile
BIN = os.path.abspath(sys.argv[1])
USER = sys.argv[2] if len(sys.argv) > 2 else "cordon-jail-t"
if subprocess.run(["id", USER], capture_output=True).returncode != 0:
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
base = tempfile.mkdtemp(prefix="cordon-jail-bench-", dir="/tmp")
root_dir = base + "/root"; os.makedirs(root_dir + "/work", exist_ok=True)
h = hashlib.sha256(b"unused").hexdigest()
def cfg(d):
    return f"ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n"
open(root_dir + "/cordon.yaml", "w").write(cfg(root_dir))
os.chmod(root_dir + "/work", 0o777)
u = pwd.getpwnam(USER)
user_dir = base + "/user"; os.makedirs(user_dir + "/project", exist_ok=True)
shutil.copy(BIN, user_dir + "/cordon"); os.chmod(user_dir + "/cordon", 0o755)
open(user_dir + "/cordon.yaml", "w").write(cfg(user_dir))
subprocess.run(["chown", "-R", f"{u.pw_uid}:{u.pw_gid}", user_dir], check=True)
os.chmod(base, 0o755)
def once(kind):
    if kind == "root":
        stamp = root_dir + "/work/stamp"
        cmd = [BIN, "jail", "--config", root_dir + "/cordon.yaml", "--user", "65534:65534", "--", "sh", "-c", f"date +%s%N > {stamp}"]
        cwd = root_dir + "/work"
    else:
        stamp = user_dir + "/project/stamp"
        cmd = ["setpriv", "--reuid", str(u.pw_uid), "--regid", str(u.pw_gid), "--init-groups", "--", user_dir + "/cordon", "jail", "--config", user_dir + "/cordon.yaml", "--project", user_dir + "/project", "--", "sh", "-c", f"date +%s%N > {stamp}"]
        cwd = user_dir + "/project"
    t0 = time.time_ns()
    p = subprocess.run(cmd, cwd=cwd, env={"PATH": os.environ["PATH"], "HOME": u.pw_dir}, capture_output=True)
    t2 = time.time_ns()
    assert p.returncode == 0, p
    t1 = int(open(stamp).read())
    return (t1 - t0) / 1e6, (t2 - t1) / 1e6
try:
    for kind in ["root", "project"]:
        once(kind)
        r = [once(kind) for _ in range(10)]
        print(kind, "start median %.1f ms" % statistics.median(x for x, _ in r), "teardown median %.1f ms" % statistics.median(y for _, y in r),
              "start range %.1f-%.1f" % (min(x for x,_ in r), max(x for x,_ in r)), "teardown range %.1f-%.1f" % (min(y for _,y in r), max(y for _,y in r)))
finally:
    shutil.rmtree(base, ignore_errors=True)
