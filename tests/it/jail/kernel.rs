//! The ways out of both jails through the kernel's surface rather than the file system or the network, tried
//! from inside through the real binary as an attacker would (`kernel/probe.py`, and `kernel/probe.c`
//! compiled here with gcc for what Python cannot call): Unix datagram socket pairs sending to a host service's
//! path, io_uring, the x32 and i386 ABIs' twins of filtered calls, AF_VSOCK and other socket families, the
//! keyrings (a key the user put in `@u` on the host), other processes' memory (`/proc/PID/mem`, ptrace,
//! `process_vm_readv`, `pidfd_getfd`) of the relay, the one process in the jail outside the command's filter.
//! Each attempt must fail, and the host service must have received nothing. Under gVisor the same probes meet
//! gVisor's kernel instead of the host's: what they are answered is pinned (`GVISOR_ANSWERS`), and the host's
//! keyring and service are out of reach there too.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::rigs::gateway::World;
use crate::rigs::jail::{UserDir, chown_r, jail, jail_as_user, user, user_dir};
use crate::rigs::netns::available;
use crate::rigs::wait::Within;

const PROBE_PY: &str = include_str!("kernel/probe.py");

/// Put the probes in `dir` (readable by everyone): `probe.py` and `probe`, compiled from `probe.c`.
fn probes(dir: &Path) {
    std::fs::write(dir.join("probe.py"), PROBE_PY).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/jail/kernel/probe.c");
    let out = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(dir.join("probe"))
        .arg(&source)
        .timed_output()
        .expect("gcc (.ci/run installs it)");
    assert!(out.status.success(), "gcc: {}", String::from_utf8_lossy(&out.stderr));
    for f in ["probe.py", "probe"] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// What the probes run inside: the Python one (with the host's datagram socket and the relay, if any), the C
/// one, and the C one's i386 call, which must not return.
fn script(dir: &Path, host_dgram: &Path, relay: &str) -> String {
    format!(
        "cd {d}; python3 probe.py {h} {relay}; ./probe; ./probe i386; echo i386_exit=$?",
        d = dir.display(),
        h = host_dgram.display()
    )
}

/// Assert every `name=value` of `expected` is in `out`.
fn expect_all(out: &str, expected: &[&str], context: &str) {
    for want in expected {
        assert!(out.lines().any(|l| l == *want), "{want}:\n{out}\n{context}");
    }
}

/// What both jails refuse, whatever the file system shows.
const BOTH: [&str; 18] = [
    "pair_stream=ok:x",
    "pair_stream_sendto=errno:106",
    "vsock=errno:1",
    "netlink_uevent=errno:1",
    "netlink_route=ok",
    "keyctl_read=errno:1",
    "add_key=errno:1",
    "request_key=errno:1",
    "userfaultfd=errno:1",
    "bpf=errno:1",
    "perf_event_open=errno:1",
    "io_uring_setup=errno:1",
    "x32_io_uring_setup=errno:1",
    "x32_socket_unix=errno:1",
    "x32_socket_vsock=errno:1",
    "x32_keyctl=errno:1",
    "x32_ptrace=errno:1",
    "packet=errno:1",
];

/// `BOTH`, and the connection to the relay where there is one (TCP still works).
fn both(relay: bool) -> Vec<&'static str> {
    let mut v: Vec<&str> = BOTH.to_vec();
    if relay {
        v.push("tcp_relay=ok");
    }
    v
}

/// The i386 entry's socketcall kills the process (SIGSYS; SIGSEGV where the kernel has no i386 entry).
fn i386_did_not_return(out: &str, context: &str) {
    assert!(
        !out.contains("i386_socketcall=returned") && (out.contains("i386_exit=159") || out.contains("i386_exit=139")),
        "{out}\n{context}"
    );
}

/// The relay as the PID namespace's init: a SIGKILL from inside leaves it relaying, and it reaps an orphan (no
/// zombie is left).
const INIT: &str = "kill -KILL 1; (sleep 0.1 &); sleep 0.5
python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 3128), timeout=3)' && echo relay_after_kill=ok
echo zombies=$(grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l)";

#[test]
fn no_way_around_the_jail_without_root_through_the_kernel() {
    if !available("no_way_around_the_jail_without_root_through_the_kernel") {
        return;
    }
    let (uid, gid, _) = user();
    let UserDir { dir, bin, project } = user_dir("jail-kernel");
    let d = dir.path();
    probes(&project);
    // A host service on a datagram socket the jail sees by path (the project folder is the host's).
    let host_dgram = project.join("host.dgram");
    let service = std::os::unix::net::UnixDatagram::bind(&host_dgram).unwrap();
    std::fs::set_permissions(&host_dgram, std::fs::Permissions::from_mode(0o777)).unwrap();
    let yaml = format!(
        "ca: {{ dir: {d}/state/cas }}\nvault: {{ file: {{ path: {d}/state/vault.bin }} }}\n\
         audit: {{ path: {d}/state/audit.jsonl }}\n\
         sandboxes:\n  - {{ id: laptop, user: dev, token_sha256: {h}, policy: none }}\n\
         policies:\n  none:\n    allow: []\n",
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    std::fs::create_dir_all(d.join("state")).unwrap();
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    chown_r(d, uid, gid);
    let script = format!("{}; {INIT}", script(&project, &host_dgram, "127.0.0.1:3128"));
    let out = jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], &script).output_within();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let mut expected = both(true);
    // No Unix socket but a stream or seqpacket pair, whose address is refused or ignored.
    expected.extend([
        "unix_stream=errno:1",
        "unix_dgram=errno:1",
        "pair_dgram_sendto=errno:1",
        "pair_raw_sendto=errno:1",
        "pair_seqpacket_sendto=ok",
        "relay_after_kill=ok",
        "zombies=0",
    ]);
    expect_all(&stdout, &expected, &stderr);
    i386_did_not_return(&stdout, &stderr);
    // The relay, the one process outside the command's filter, is out of reach; bubblewrap left no reaper.
    let relay: Vec<&str> = stdout.lines().filter(|l| l.starts_with("pid_cordon_")).collect();
    assert_eq!(relay.len(), 5, "the relay, probed five ways:\n{stdout}");
    assert!(relay.iter().all(|l| l.contains("=errno:")), "{stdout}");
    assert!(!stdout.contains("pid_bwrap_"), "{stdout}");
    // The host service received nothing.
    service.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    assert!(
        service.recv(&mut buf).is_err(),
        "a datagram from the jail reached the host"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_way_around_the_root_jail_through_the_kernel() {
    if available("no_way_around_the_root_jail_through_the_kernel") {
        root_jail_probed(&[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_no_way_around_the_jail_through_the_kernel() {
    if super::gvisor::runsc("no_way_around_the_jail_through_the_kernel under gVisor") {
        root_jail_probed(&super::gvisor::GVISOR).await;
    }
}

/// Held while a case has its key in nobody's user keyring (the same for every process of that uid).
static NOBODYS_KEYRING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The probes in the root jail `isolation` names (nothing: the namespace jail).
async fn root_jail_probed(isolation: &[&str]) {
    let w = World::new().await;
    let id = format!("kernel{}", w.net.n);
    let config = w.config(&id, "", None);
    // Outside the folders the jail makes private, readable by the user the command runs as.
    // In the folder the jail runs from, the one it shows the command besides the system's.
    std::fs::set_permissions(w.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = w.path("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    let dir = work.join("kernel");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    probes(&dir);
    // The user the command runs as (nobody) has a key in its user keyring on the host.
    let as_nobody = |what: &str| {
        let out = Command::new("setpriv")
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups", "--"])
            .arg(dir.join("probe"))
            .arg(what)
            .output_within();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // nobody's user keyring is one for the whole host: the two jails' cases take turns with it.
    let _turn = NOBODYS_KEYRING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    assert_eq!(as_nobody("add-key"), "add_key=ok");
    // A host service on a datagram socket in the folder the command sees.
    let host_dgram = dir.join("host.dgram");
    let service = std::os::unix::net::UnixDatagram::bind(&host_dgram).unwrap();
    std::fs::set_permissions(&host_dgram, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, out, err) = jail(
        &w,
        &config,
        &id,
        isolation,
        &["sh", "-c", &script(&dir, &host_dgram, "")],
    );
    assert_eq!(as_nobody("del-key"), "del_key=ok");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains("secret-of-the-user"),
        "the user's keyring was read:\n{out}"
    );
    service.set_nonblocking(true).unwrap();
    assert!(
        service.recv(&mut [0u8; 64]).is_err(),
        "a datagram from the jail reached the host"
    );
    assert!(!out.contains("pid_cordon_"), "a host process is visible:\n{out}");
    if isolation.is_empty() {
        expect_all(&out, &both(false), &err);
        i386_did_not_return(&out, &err);
        assert!(err.contains("seccomp: io_uring"), "{err}");
    } else {
        expect_all(&out, &GVISOR_ANSWERS, &err);
    }
}

/// What gVisor's kernel answers each probe: every call is the sentry's, none the host kernel's, so what the
/// namespace jail's filter refuses is here either not there or gVisor's own. A host socket in the view cannot be
/// reached (EPERM: runsc runs with `--host-uds=none`); there is no host socket family (EAFNOSUPPORT); the host's
/// keyrings are not the sandbox's (EACCES); `io_uring_setup` succeeds on gVisor's own io_uring; the x32 calls do
/// not exist (ENOSYS); and `int 0x80` is not the host's i386 entry but gVisor's own table (its 102 is `getuid`,
/// the uid the command runs as).
const GVISOR_ANSWERS: [&str; 22] = [
    "unix_stream=errno:1",
    "unix_dgram=errno:1",
    "pair_dgram_sendto=errno:1",
    "pair_raw_sendto=errno:1",
    "pair_stream_sendto=errno:106",
    "pair_stream=ok:x",
    "vsock=errno:97",
    "packet=errno:97",
    "keyctl_read=errno:13",
    "add_key=errno:13",
    "request_key=errno:13",
    "userfaultfd=errno:38",
    "bpf=errno:1",
    "perf_event_open=errno:19",
    "io_uring_setup=ok",
    "x32_io_uring_setup=errno:38",
    "x32_socket_unix=errno:38",
    "x32_socket_vsock=errno:38",
    "x32_keyctl=errno:38",
    "x32_ptrace=errno:38",
    "i386_socketcall=returned:65534",
    "i386_exit=0",
];
