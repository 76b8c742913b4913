//! What the jailed command holds besides its files and the network, in both jails: no descriptor the caller
//! left open (a socket connected to a host service on fd 5), and not the stream cordon writes its audit records
//! to (a command that prints a record in cordon's format, or half a line, changes nothing in the audit).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::rigs::gateway::World;
use crate::rigs::netns::available;
use crate::rigs::wait::Within;

/// Run `command` with fd 5 connected to the Unix socket at `socket` (Python holds the connection and passes
/// it on, as a careless caller would).
fn with_fd5(socket: &Path, command: &Command) -> std::process::Output {
    const PASS: &str = "import os, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); os.dup2(s.fileno(), 5); os.set_inheritable(5, True)
sys.exit(subprocess.run(sys.argv[2:], pass_fds=(5,)).returncode)";
    let mut c = Command::new("python3");
    c.args(["-c", PASS])
        .arg(socket)
        .arg(command.get_program())
        .args(command.get_args());
    if let Some(dir) = command.get_current_dir() {
        c.current_dir(dir);
    }
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.output_within()
}

/// A Unix socket anyone may connect to, keeping every byte it is sent.
fn listening(path: &Path) -> Arc<Mutex<Vec<u8>>> {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 256];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    keep.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    got
}

/// What the command runs: it lists its descriptors, writes to fd 5, then forges an audit record and leaves
/// half a line, after one request through cordon.
const SCRIPT: &str = "ls /proc/self/fd | tr '\\n' ' ' | sed 's/^/fds: /'; echo
(echo planted-through-fd5 >&5) 2>/dev/null && echo fd5=open || echo fd5=closed
curl -s -o /dev/null -w 'status=%{http_code}\\n' --max-time 10 URL
printf '%s\\n' '{\"kind\":\"request\",\"sandbox\":\"ID\",\"decision\":\"deny\",\"reason\":\"forged-by-the-command\"}'
printf '{\"kind\":\"request\",\"dangling\":'";

/// The checks both jails share: the command saw only 0, 1, 2 (and `ls`'s own), wrote nothing to fd 5, printed
/// what it printed, and every record in `audit` is whole JSON, none of it the command's.
fn assert_kept_apart(out: &std::process::Output, got: &Mutex<Vec<u8>>, audit: &Path) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let fds = stdout.lines().find(|l| l.starts_with("fds: ")).expect("the fd listing");
    let fds: Vec<u32> = fds[5..].split_whitespace().map(|f| f.parse().unwrap()).collect();
    assert!(
        fds.iter().all(|fd| *fd <= 3),
        "the command holds descriptors it was not given: {fds:?}\n{stderr}"
    );
    assert!(stdout.contains("fd5=closed"), "{stdout}");
    assert!(
        got.lock().unwrap().is_empty(),
        "the host service got bytes from the jail"
    );
    // The command's output is its own: no record of cordon's in it.
    assert!(!stdout.contains("\"decision\":\"allow\""), "{stdout}");
    assert!(
        stderr.contains(&format!("audit records go to {}", audit.display())),
        "{stderr}"
    );
    let records = std::fs::read_to_string(audit).unwrap();
    let mut requests = 0;
    for line in records.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not one record per line ({e}): {line:?}"));
        // The activity log records the command's own arguments (the script, forgery included): what must not
        // be is a record the command wrote.
        assert!(
            v["kind"] == "exec" || !line.contains("forged-by-the-command") && !line.contains("dangling"),
            "{line}"
        );
        assert_ne!(v["reason"], "forged-by-the-command", "{line}");
        if v["path"] == "/from-the-jail" {
            requests += 1;
        }
    }
    assert!(requests >= 1, "the command's request has no record:\n{records}");
    // The audit file is not the command's to read: it is hidden in the jail and private outside.
    let mode = std::fs::metadata(audit.parent().unwrap()).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the jail's audit folder is open to others: {mode:o}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_jail_hands_the_command_neither_inherited_descriptors_nor_the_audit_stream() {
    if !available("the_root_jail_hands_the_command_neither_inherited_descriptors_nor_the_audit_stream") {
        return;
    }
    let w = World::new().await;
    let id = format!("streams{}", w.net.n);
    let config = w.config(&id, "", None);
    let yaml = std::fs::read_to_string(&config).unwrap();
    let yaml = yaml.replace(
        &format!("audit: {{ path: {}/audit.log }}", w.dir.path().display()),
        "audit: { path: \"-\" }",
    );
    assert!(yaml.contains("path: \"-\""));
    std::fs::write(&config, yaml).unwrap();
    std::fs::set_permissions(w.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = w.dir.path().join("host.sock");
    let got = listening(&socket);
    let audit = Path::new("/var/lib/cordon/jail").join(&id).join("audit.jsonl");
    let _ = std::fs::remove_file(&audit);
    let script = SCRIPT
        .replace("URL", "http://api.test/from-the-jail")
        .replace("ID", &id);
    let mut c = w.cordon_in_gateway();
    c.args(["jail", "--sandbox", &id, "--config"]).arg(&config).args([
        "--user",
        "65534:65534",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let out = with_fd5(&socket, &c);
    assert!(String::from_utf8_lossy(&out.stdout).contains("status=200"), "{out:?}");
    assert_kept_apart(&out, &got, &audit);
    let _ = std::fs::remove_dir_all(audit.parent().unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_project_jail_hands_the_command_neither_inherited_descriptors_nor_the_audit_stream() {
    if !available("the_project_jail_hands_the_command_neither_inherited_descriptors_nor_the_audit_stream") {
        return;
    }
    let (uid, gid, _) = crate::rigs::jail::user();
    let crate::rigs::jail::UserDir { dir, bin, project } = crate::rigs::jail::user_dir("jail-streams");
    let d = dir.path();
    let socket = d.join("host.sock");
    let got = listening(&socket);
    let ca = crate::rigs::tls::test_ca("jail streams CA");
    let up = crate::rigs::tls::https_upstream("127.0.0.2", ca.server_config(&["allowed.test"])).await;
    let u = up.addr.port();
    std::fs::write(d.join("upstream-ca.pem"), &ca.pem).unwrap();
    let yaml = format!(
        r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2 }}
ca: {{ dir: {d}/state/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
audit: {{ path: "-" }}
sandboxes:
  - {{ id: streams, user: dev, token_sha256: {h}, policy: agent }}
policies:
  agent:
    allow:
      - {{ host: allowed.test, ports: [{u}] }}
"#,
        d = d.display(),
        h = crate::rigs::client::hash("unused"),
    );
    std::fs::create_dir_all(d.join("state")).unwrap();
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    crate::rigs::jail::chown_r(d, uid, gid);
    let state = d.join("xdg-state");
    std::fs::create_dir(&state).unwrap();
    crate::rigs::jail::chown_r(&state, uid, gid);
    let script = SCRIPT
        .replace("URL", &format!("https://allowed.test:{u}/from-the-jail"))
        .replace("ID", "streams");
    let mut c = crate::rigs::jail::jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], &script);
    c.env("XDG_STATE_HOME", &state);
    let out = with_fd5(&socket, &c);
    assert!(String::from_utf8_lossy(&out.stdout).contains("status=200"), "{out:?}");
    assert_kept_apart(&out, &got, &state.join("cordon/jail/streams/audit.jsonl"));
}
