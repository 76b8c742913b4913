//! The ways out of `cordon jail` besides the network, tried from inside as an attacker would: the host's Unix
//! sockets, the caller's terminal (TIOCSTI), cordon's environment, processes that outlive the jail, privileges
//! (setuid, capabilities, root), and cordon's files on disk.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::rigs::gateway::World;
use crate::rigs::jail::jail;
use crate::rigs::netns::available;
use crate::rigs::process::BIN;
use crate::rigs::wait::Within;

/// A folder outside every folder the jail makes private, removed when dropped.
struct Outside(PathBuf);

impl Outside {
    fn new(name: &str) -> Outside {
        let path = PathBuf::from(format!("/var/lib/cordon-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Outside(path)
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A Unix socket at `path` anyone may connect to, answering every connection with a banner.
fn banner_socket(path: &Path) {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.write_all(b"host-only banner\n");
        }
    });
}

const CONNECT: &str = "import socket, sys
for p in sys.argv[1:]:
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(p); print('REACHED', p, s.recv(64))
    except Exception as e:
        print('refused', p, type(e).__name__)
";

const TIOCSTI: &str = "import fcntl, termios
try:
    for c in b'echo pwned-by-the-jail\\n':
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print('INJECTED')
except OSError as e:
    print('refused', e.errno)
";

#[tokio::test(flavor = "multi_thread")]
async fn nothing_but_the_network_through_cordon_leads_out_of_the_jail() {
    if !available("nothing_but_the_network_through_cordon_leads_out_of_the_jail") {
        return;
    }
    let w = World::new().await;
    let id = format!("confined{}", w.net.n);
    let outside = Outside::new(&id);
    let config = w.config(&id, "", None);

    // 1. The host's Unix sockets, in /tmp and elsewhere, reachable by path and open to everyone.
    let in_tmp = w.dir.path().join("relay.sock");
    std::fs::set_permissions(w.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let elsewhere = outside.0.join("relay.sock");
    banner_socket(&in_tmp);
    banner_socket(&elsewhere);
    let (code, out, err) = jail(
        &w,
        &config,
        &id,
        &[],
        &[
            "python3",
            "-c",
            CONNECT,
            in_tmp.to_str().unwrap(),
            elsewhere.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("REACHED") && out.matches("refused").count() == 2, "{out}");

    // 2. TIOCSTI into the caller's terminal (the jail run under `script`, so it has one).
    let line = format!(
        "nsenter --net=/run/netns/{} -- {BIN} jail --sandbox {id} --config {} --user 65534:65534 -- python3 -c \"$T\"",
        w.net.gw,
        config.display()
    );
    let out = std::process::Command::new("script")
        .current_dir(w.path("work"))
        .args(["-qec", &line, "/dev/null"])
        .env("T", TIOCSTI)
        .stdin(std::process::Stdio::null())
        .output_within();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("refused") && !text.contains("INJECTED"), "{text}");

    // 3. cordon's environment: an `env:` secret and the vault key stay outside; the sandbox's own variables
    // are there.
    let mut c = w.cordon_in_gateway();
    c.args(["jail", "--sandbox", &id, "--config"])
        .arg(&config)
        .args(["--user", "65534:65534", "--", "sh", "-c"])
        .arg("echo \"[${ESC_API_KEY:-}][${CORDON_VAULT_KEY:-}][${HTTPS_PROXY:-}]\"")
        .env("ESC_API_KEY", "sk-not-for-the-sandbox")
        .env("CORDON_VAULT_KEY", "00".repeat(32));
    let out = c.output_within();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("[][][http://10.") && !text.contains("sk-not"),
        "{text}"
    );

    // 4. Survivors: a re-parented process and one in namespaces of its own die with the jail.
    let marker = format!("31.{}", w.net.n);
    let spawn = format!("(setsid sleep {marker} &); (unshare -Urn sleep {marker} &) 2>/dev/null; sleep 0.3");
    let (code, _, err) = jail(&w, &config, &id, &[], &["sh", "-c", &spawn]);
    assert_eq!(code, 0, "{err}");
    let mut left = String::new();
    for _ in 0..20 {
        let out = std::process::Command::new("pgrep")
            .args(["-af", &format!("sleep {marker}")])
            .output_within();
        left = String::from_utf8_lossy(&out.stdout).into_owned();
        if left.trim().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(left.trim().is_empty(), "processes outlived the jail: {left}");

    // 5. Privileges: no new privileges, no capabilities in any set; root only when asked for.
    let (_, out, err) = jail(
        &w,
        &config,
        &id,
        &[],
        &["grep", "-E", "^(NoNewPrivs|Cap)", "/proc/self/status"],
    );
    for wanted in [
        "NoNewPrivs:\t1",
        "CapBnd:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "CapPrm:\t0000000000000000",
        "CapAmb:\t0000000000000000",
    ] {
        assert!(out.contains(wanted), "{wanted}: {out}{err}");
    }
    for sudo in [None, Some("0")] {
        let mut c = w.cordon_in_gateway();
        c.args(["jail", "--sandbox", &id, "--config"])
            .arg(&config)
            .args(["--", "id", "-u"]);
        c.env_remove("SUDO_UID").env_remove("SUDO_GID");
        if let Some(uid) = sudo {
            c.env("SUDO_UID", uid).env("SUDO_GID", uid);
        }
        let out = c.output_within();
        assert_eq!(
            out.status.code(),
            Some(125),
            "SUDO_UID {sudo:?}: the jail ran its command as root"
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-root"));
    }
    let (code, out, err) = jail(
        &w,
        &config,
        &id,
        &["--allow-root"],
        &["sh", "-c", "id -u; grep CapEff /proc/self/status"],
    );
    assert_eq!((code, out.trim()), (0, "0\nCapEff:\t0000000000000000"), "{err}");

    // 6. cordon's files: its configuration, the vault and its key (even when the key belongs to the user the
    // command runs as), and the CA folder are not readable inside.
    let key = outside.0.join("cordon.key");
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&key, Some(65534), Some(65534)).unwrap();
    let moved = outside.0.join("cordon.yaml");
    let mut yaml = String::new();
    std::fs::File::open(&config).unwrap().read_to_string(&mut yaml).unwrap();
    yaml.push_str(&format!(
        "vault: {{ file: {{ path: {d}/cordon.vault, key_file: {d}/cordon.key }} }}\n",
        d = outside.0.display()
    ));
    std::fs::write(&moved, yaml).unwrap();
    std::fs::set_permissions(&moved, std::fs::Permissions::from_mode(0o644)).unwrap();
    let read = format!(
        "cat {k} {c}; echo \"[end]\"; ls -A {cas} 2>/dev/null",
        k = key.display(),
        c = moved.display(),
        cas = w.dir.path().join("cas").display()
    );
    let (_, out, err) = jail(&w, &moved, &id, &[], &["sh", "-c", &read]);
    assert_eq!(out.trim(), "[end]", "cordon's files were readable inside: {out}{err}");
}
