"""What the activity log costs: `git clone` of a local repository of 5,000 files in a jail with `audit.activity`
on and off, alternating (A off, B on), in both jails (as root, and `--project` as a user without root); the median
wall time of each, their ratio, and how many exec and file records the log wrote for one clone.

    sudo python3 benches/jail/activity.py target/release/cordon [RUNS] [USER]

RUNS (default 5) clones per setting and jail, after one warm-up each. USER (default cordon-jail-t, made if
missing) runs the jail without root. Run as root; it writes under a temporary folder in /tmp and removes it.
"""
import hashlib, json, os, pwd, resource, shutil, statistics, subprocess, sys, tempfile, time

BIN = os.path.abspath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
USER = sys.argv[3] if len(sys.argv) > 3 else "cordon-jail-t"
FILES = 5000
if subprocess.run(["id", USER], capture_output=True).returncode != 0:
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
u = pwd.getpwnam(USER)
base = tempfile.mkdtemp(prefix="cordon-activity-bench-", dir="/tmp")
os.chmod(base, 0o755)
h = hashlib.sha256(b"unused").hexdigest()


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=cwd, check=True,
                   capture_output=True)


def make_repo(at):
    os.makedirs(at)
    git("init", "-q", "-b", "main", cwd=at)
    for i in range(FILES):
        d = os.path.join(at, f"d{i // 100}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"f{i}.txt"), "w").write(f"file {i}\n")
    git("add", ".", cwd=at)
    git("commit", "-q", "-m", "5000 files", cwd=at)


def setup(kind):
    d = os.path.join(base, kind)
    work = os.path.join(d, "work")
    os.makedirs(work)
    make_repo(os.path.join(work, "repo"))
    configs = {}
    for activity in (False, True):
        path = os.path.join(d, f"cordon-{'on' if activity else 'off'}.yaml")
        open(path, "w").write(
            f"ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit-{'on' if activity else 'off'}.jsonl, "
            f"activity: {str(activity).lower()} }}\nsandboxes:\n  - {{ id: bench{kind}, user: dev, "
            f"token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n")
        configs[activity] = path
    if kind == "project":
        shutil.copy(BIN, os.path.join(d, "cordon"))
        os.chmod(os.path.join(d, "cordon"), 0o755)
    subprocess.run(["chown", "-R", f"{u.pw_uid}:{u.pw_gid}" if kind == "project" else "65534:65534", work],
                   check=True)
    if kind == "project":
        subprocess.run(["chown", "-R", f"{u.pw_uid}:{u.pw_gid}", d], check=True)
    return d, work, configs


def clone(kind, d, work, config):
    shutil.rmtree(os.path.join(work, "copy"), ignore_errors=True)
    script = "git clone -q repo copy"
    if kind == "root":
        cmd = [BIN, "jail", "--config", config, "--user", "65534:65534", "--", "sh", "-c", script]
    else:
        cmd = ["setpriv", "--reuid", str(u.pw_uid), "--regid", str(u.pw_gid), "--init-groups", "--",
               os.path.join(d, "cordon"), "jail", "--config", config, "--project", work, "--", "sh", "-c", script]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=work, env={"PATH": os.environ["PATH"], "HOME": u.pw_dir}, capture_output=True)
    elapsed = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed * 1000, cpu * 1000


def count(audit):
    n = {"exec": 0, "file": 0, "summaries": 0}
    for line in open(audit):
        r = json.loads(line)
        if r.get("kind") in ("exec", "file"):
            n[r["kind"]] += 1
            if (r.get("file") or r.get("exec") or {}).get("aggregated"):
                n["summaries"] += 1
    return n


try:
    for kind in ["root", "project"]:
        d, work, configs = setup(kind)
        clone(kind, d, work, configs[False])
        clone(kind, d, work, configs[True])
        off, on, off_cpu, on_cpu = [], [], [], []
        for _ in range(RUNS):
            wall, cpu = clone(kind, d, work, configs[False])
            off.append(wall)
            off_cpu.append(cpu)
            wall, cpu = clone(kind, d, work, configs[True])
            on.append(wall)
            on_cpu.append(cpu)
        records = count(os.path.join(d, "audit-on.jsonl"))
        per_clone = {k: v // (RUNS + 1) for k, v in records.items()}
        print(f"{kind}: clone of {FILES} files, activity off median {statistics.median(off):.0f} ms "
              f"(range {min(off):.0f}-{max(off):.0f}), on median {statistics.median(on):.0f} ms "
              f"(range {min(on):.0f}-{max(on):.0f}), on/off {statistics.median(on) / statistics.median(off):.2f}; "
              f"CPU of the whole jail (cordon, git, everything) off median {statistics.median(off_cpu):.0f} ms, "
              f"on {statistics.median(on_cpu):.0f} ms; records per clone {per_clone}")
finally:
    shutil.rmtree(base, ignore_errors=True)
