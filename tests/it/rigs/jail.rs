//! `cordon jail` for the jail tests: the root jail run in the gateway world and what of it is left
//! afterwards, a user without root made by the test and the project jail run as them, and the host sockets
//! and scratch folders the file-system tests try from inside.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cordon::jail::Plan;

use crate::rigs::gateway::World;
use crate::rigs::wait::Within;

/// What of a jail exists in the test's host namespace.
pub(crate) fn leftovers(w: &World, plan: &Plan) -> Vec<String> {
    let net = &w.net;
    let mut found = Vec::new();
    if std::path::Path::new("/run/netns").join(&plan.netns).exists() {
        found.push(plan.netns.clone());
    }
    if net.exec_ok(&net.gw, &["ip", "link"]).contains(&plan.host_if) {
        found.push(plan.host_if.clone());
    }
    let nft = net.exec_ok(&net.gw, &["nft", "list", "ruleset"]);
    if nft.contains(&plan.table) || nft.contains(&plan.chain()) {
        found.push(format!("rules: {nft}"));
    }
    found
}

/// What a root jail leaves on the host besides the network: mounts under its run folder (its private home, the
/// gVisor jail's start word), gVisor's processes (runsc, its sandbox and gofer: their command lines name the
/// jail), and cgroups of `sandbox`'s jails whose cordon is no longer running.
pub(crate) fn host_leftovers(plan: &Plan, sandbox: &str) -> Vec<String> {
    let run_dir = plan.run_dir().display().to_string();
    let mut found: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&run_dir))
        .map(|l| format!("mount: {l}"))
        .collect();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("runsc") && (cmdline.contains(&plan.netns) || cmdline.contains(&run_dir)) {
            found.push(format!("process {}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    // Jails' cgroups are made in cordon's own, which is the test's: near the top of each hierarchy here.
    let prefix = format!("cordon-jail-{sandbox}-");
    for cgroup in walkdir::WalkDir::new("/sys/fs/cgroup")
        .max_depth(4)
        .into_iter()
        .flatten()
    {
        let name = cgroup.file_name().to_string_lossy();
        let Some(pid) = name.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if cgroup.file_type().is_dir() && !Path::new(&format!("/proc/{pid}")).exists() {
            found.push(format!("cgroup {}", cgroup.path().display()));
        }
    }
    found.sort();
    found.dedup();
    found
}

pub(crate) fn jail(
    w: &World,
    config: &std::path::Path,
    id: &str,
    extra: &[&str],
    cmd: &[&str],
) -> (i32, String, String) {
    let mut c = w.cordon_in_gateway();
    c.args(["jail", "--sandbox", id, "--config"]).arg(config).args(extra);
    // The command runs as nobody unless the test says whom (root is refused without --allow-root).
    if !extra
        .iter()
        .any(|a| ["--user", "--allow-root", "--cleanup"].contains(a))
    {
        c.args(["--user", "65534:65534"]);
    }
    c.arg("--").args(cmd);
    let out = c.output_within();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A host folder outside every folder the jails show, removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(under: &str, name: &str) -> Scratch {
        let path = PathBuf::from(format!("{under}/cordon-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A host service (python3) on Unix sockets bound the ways a start-up listing misses: by a relative path, renamed
/// after bind, with a space in the path, hard-linked; and one more (`late.sock`) once `go` appears. Every
/// connection it accepts is logged to `log`. Returns the paths to try, the late one last.
pub(crate) const HOST_SERVER: &str = r#"
import os, socket, sys, threading, time
d, log, go = sys.argv[1], sys.argv[2], sys.argv[3]
def serve(s):
    s.listen(8)
    while True:
        c, _ = s.accept()
        open(log, "a").write("CONNECTED\n"); c.close()
def unix(path):
    s = socket.socket(socket.AF_UNIX); s.bind(path); os.chmod(path, 0o777)
    threading.Thread(target=serve, args=(s,), daemon=True).start()
os.chdir(d)
unix("rel.sock")
unix(d + "/before-rename.sock"); os.rename(d + "/before-rename.sock", d + "/renamed.sock")
unix(d + "/with space.sock")
unix(d + "/original.sock"); os.link(d + "/original.sock", d + "/hardlink.sock")
print("ready", flush=True)
while not os.path.exists(go): time.sleep(0.05)
unix(d + "/late.sock")
open(go + ".done", "w").close()
while True: time.sleep(1)
"#;

/// Inside: signal `go`, wait for the late socket, then try each path: does it exist, does it connect?
pub(crate) const TRY_SOCKETS: &str = r#"
import os, socket, sys, time
go = sys.argv[1]
open(go, "w").close()
for _ in range(100):
    if os.path.exists(go + ".done"): break
    time.sleep(0.05)
for p in sys.argv[2:]:
    there = os.path.exists(p)
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(p); print("REACHED", p)
    except Exception as e:
        print("refused", p, type(e).__name__, "exists" if there else "absent")
"#;

/// The socket names [`HOST_SERVER`] binds in its folder.
pub(crate) const SOCKETS: [&str; 6] = [
    "rel.sock",
    "renamed.sock",
    "with space.sock",
    "original.sock",
    "hardlink.sock",
    "late.sock",
];

/// Start [`HOST_SERVER`] in `dir` (waiting until it is ready), connections logged to `log`; `go` in a folder the
/// command may write.
pub(crate) fn host_server(dir: &Path, log: &Path, go: &Path) -> std::process::Child {
    use std::io::BufRead;
    let mut child = Command::new("python3")
        .args(["-c", HOST_SERVER])
        .args([dir, log, go])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

/// `words` quoted for sh.
pub(crate) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) const USER: &str = "cordon-jail-t";

/// The test user's uid, gid and home (created if missing).
pub(crate) fn user() -> (u32, u32, String) {
    let exists = Command::new("id").arg(USER).timed_output().unwrap().status.success();
    if !exists {
        let ok = Command::new("useradd")
            .args(["-m", "-s", "/bin/sh", USER])
            .timed_status()
            .unwrap();
        assert!(ok.success(), "useradd {USER} (the test runs as root, as CI does)");
    }
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, USER]).timed_output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"), format!("/home/{USER}"))
}

pub(crate) fn chown_r(path: &Path, uid: u32, gid: u32) {
    let ok = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .timed_status()
        .unwrap();
    assert!(ok.success());
}

/// A folder in /tmp for a test that runs cordon as the test user: readable by it, with the user's own copy
/// of the binary (the build's target folder is not the user's to reach) and an empty `project` folder. The
/// caller writes its config there and then gives the folder to the user with [`chown_r`].
pub(crate) struct UserDir {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) bin: PathBuf,
    pub(crate) project: PathBuf,
}

pub(crate) fn user_dir(prefix: &str) -> UserDir {
    let dir = tempfile::Builder::new().prefix(prefix).tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.path().join("cordon");
    crate::rigs::process::install_executable(Path::new(env!("CARGO_BIN_EXE_cordon")), &bin);
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    UserDir { dir, bin, project }
}

/// `BIN jail --config CONFIG --project PROJECT EXTRA... -- sh -c SCRIPT` as the test user (setpriv), with
/// PATH and HOME alone in its environment; the caller adds what else it needs.
pub(crate) fn jail_as_user(bin: &Path, config: &Path, project: &Path, extra: &[&str], script: &str) -> Command {
    let (uid, gid, home) = user();
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid",
        &uid.to_string(),
        "--regid",
        &gid.to_string(),
        "--init-groups",
        "--",
    ])
    .arg(bin)
    .args(["jail", "--config"])
    .arg(config)
    .arg("--project")
    .arg(project)
    .args(extra)
    .args(["--", "sh", "-c", script])
    .env_clear()
    .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    .env("HOME", home);
    c
}

/// `c` started through `sh -c PREFIX`, which then becomes it: its program, arguments, the environment it sets
/// (nothing else of the test's but PATH) and its working folder.
pub(crate) fn through_shell(prefix: &str, c: &Command) -> Command {
    let mut w = Command::new("sh");
    w.args(["-c", &format!("{prefix} && exec \"$@\""), "sh"])
        .arg(c.get_program())
        .args(c.get_args())
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            w.env(k, v);
        }
    }
    if let Some(dir) = c.get_current_dir() {
        w.current_dir(dir);
    }
    w
}
