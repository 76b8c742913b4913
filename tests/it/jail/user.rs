//! `cordon jail --project` as a user without root (created by the test), through the binary: the jailed
//! command reaches the world only through cordon (curl, Python, git clone and pip install, with the credentials
//! injected), not
//! the host's loopback, not a host service's Unix socket; it cannot read the user's SSH key nor write outside
//! the project.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::rigs::client::hash;
use crate::rigs::jail::{UserDir, chown_r, jail_as_user, user, user_dir};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_root_jails_a_command_that_reaches_only_cordon_and_its_project() {
    if !crate::rigs::netns::available("a_user_without_root_jails_a_command_that_reaches_only_cordon_and_its_project") {
        return;
    }
    let (uid, gid, home) = user();
    let UserDir { dir, bin, project } = user_dir("jail-user");
    let d = dir.path();
    // The user's secrets, which the command must not read.
    std::fs::create_dir_all(format!("{home}/.ssh")).unwrap();
    std::fs::write(
        format!("{home}/.ssh/id_ed25519"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    chown_r(Path::new(&format!("{home}/.ssh")), uid, gid);
    // A host service on loopback and one on a Unix socket: neither may be reached from inside.
    let host_tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = host_tcp.local_addr().unwrap().port();
    let host_sock = d.join("host.sock");
    let _host_unix = std::os::unix::net::UnixListener::bind(&host_sock).unwrap();
    std::fs::set_permissions(&host_sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The world, behind cordon: an HTTPS upstream that records what it got.
    let ca = test_ca("jail user test CA");
    let up = https_upstream("127.0.0.2", ca.server_config(&["allowed.test"])).await;
    let u = up.addr.port();
    std::fs::write(d.join("upstream-ca.pem"), &ca.pem).unwrap();
    // A git server and a private package index, each wanting its own token, which only cordon holds.
    let (_repos, _, git_root) = crate::e2e::git::repositories();
    let (git, git_token) = crate::e2e::git::git_site(&ca, "git.e2e.test", git_root).await;
    let index = crate::e2e::pip::private_index(&ca, "pypi.e2e.test").await;
    let (gp, pp) = (git.port(), index.site.port());
    let yaml = format!(
        r#"
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2, git.e2e.test: 127.0.0.1, pypi.e2e.test: 127.0.0.1 }}
ca: {{ dir: {d}/state/cas }}
vault: {{ file: {{ path: {d}/state/vault.bin }} }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
audit: {{ path: {d}/state/audit.jsonl }}
credentials:
  api:
    source: {{ env: JAIL_API_KEY }}
    bind: {{ hosts: [allowed.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  git:
    source: {{ env: JAIL_GIT_TOKEN }}
    bind: {{ hosts: [git.e2e.test], ports: [{gp}] }}
    inject: {{ basic_user: x-access-token }}
  pypi:
    source: {{ env: JAIL_PYPI_TOKEN }}
    bind: {{ hosts: [pypi.e2e.test], ports: [{pp}] }}
    inject: {{ basic_user: __token__ }}
sandboxes:
  - {{ id: laptop, user: dev, token_sha256: {h}, policy: agent }}
policies:
  agent:
    credentials: [api, git, pypi]
    allow:
      - {{ host: allowed.test, ports: [{u}] }}
      - {{ host: git.e2e.test, ports: [{gp}] }}
      - {{ host: pypi.e2e.test, ports: [{pp}] }}
"#,
        d = d.display(),
        h = hash("unused"),
    );
    std::fs::create_dir_all(d.join("state")).unwrap();
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    chown_r(d, uid, gid);
    let script = format!(
        "curl -s --noproxy '*' --max-time 3 http://127.0.0.1:{host_port}/ >/dev/null && echo loopback=open || echo loopback=closed
curl -s --max-time 10 https://allowed.test:{u}/from-the-jail; echo
python3 -c 'import urllib.request; print(\"urllib=\" + urllib.request.urlopen(\"https://allowed.test:{u}/py\", timeout=10).read().decode().strip())'
git clone -q https://git.e2e.test:{gp}/repo.git {project}/repo && echo git=$(cat {project}/repo/README)
python3 -m pip install -q --no-deps --no-cache-dir --disable-pip-version-check --target {project}/lib --index-url https://pypi.e2e.test:{pp}/simple/ cordon-e2e-hello && python3 -c 'import sys; sys.path.insert(0, \"{project}/lib\"); import cordon_e2e_hello as m; print(\"pip=\" + m.GREETING)'
echo ssh_key_bytes=$(cat $HOME/.ssh/id_ed25519 2>/dev/null | wc -c)
touch $HOME/outside {d}/outside 2>/dev/null; echo outside=tried
echo hi > {project}/inside && echo inside=written
python3 -c 'open(\"{project}/opened.txt\", \"w\").write(\"x\")' && echo opened=ok
python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{sock}\")' 2>&1 | tail -1 | sed 's/^/unix=/'
echo secret_in_env=$(env | grep -c jail-api-s3cr3t)
echo whoami=$(id -u)",
        project = project.display(),
        sock = host_sock.display(),
        d = d.display(),
    );
    let out = jail_as_user(&bin, &d.join("cordon.yaml"), &project, &[], &script)
        .env("JAIL_API_KEY", "jail-api-s3cr3t")
        .env("JAIL_GIT_TOKEN", git_token)
        .env("JAIL_PYPI_TOKEN", crate::e2e::pip::SECRET)
        .output_within();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for expected in [
        "loopback=closed",
        "hello from upstream",
        "urllib=hello from upstream",
        "git=first",
        "pip=hello through cordon",
        "ssh_key_bytes=0",
        "outside=tried",
        "inside=written",
        "unix=PermissionError: [Errno 1] Operation not permitted",
        "secret_in_env=0",
        "opened=ok",
        &format!("whoami={uid}"),
    ] {
        assert!(stdout.contains(expected), "{expected}:\n{stdout}\n{stderr}");
    }
    // Through cordon, with the credential cordon holds.
    let seen = up.seen();
    let jail = seen
        .iter()
        .find(|s| s.uri.ends_with("/from-the-jail"))
        .expect("the jail's request");
    assert_eq!(jail.header("authorization"), Some("Bearer jail-api-s3cr3t"));
    // git and pip got what they asked for with tokens only cordon holds.
    assert!(git.seen().iter().all(|r| r.header("authorization").is_some()));
    assert!(
        index
            .site
            .seen()
            .iter()
            .any(|r| r.header("authorization") == Some(index.basic.as_str()))
    );
    assert_eq!(std::fs::read_to_string(project.join("inside")).unwrap(), "hi\n");
    // Writes outside the project (the private home, the private /tmp) do not reach the host.
    assert!(!Path::new(&format!("{home}/outside")).exists() && !d.join("outside").exists());
    let audit = std::fs::read_to_string(d.join("state/audit.jsonl")).unwrap();
    assert!(
        audit
            .lines()
            .any(|l| l.contains("\"sandbox\":\"laptop\"") && l.contains("/from-the-jail"))
    );
    // The activity log, in the same chain: git, pip's Python and Python's open, each program before what it
    // wrote, with the sandbox and its user.
    let records: Vec<serde_json::Value> = audit.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let at = |kind: &str, key: &str, suffix: &str| {
        records
            .iter()
            .position(|r| {
                r["kind"] == kind
                    && r["reason"] != "jail_attempted"
                    && r[kind][key].as_str().is_some_and(|p| p.ends_with(suffix))
            })
            .unwrap_or_else(|| panic!("no {kind} record of {suffix}:\n{audit}"))
    };
    assert!(at("exec", "path", "/git") < at("file", "path", "/repo/README"));
    assert!(at("file", "path", "/repo/README") < at("file", "path", "/lib/cordon_e2e_hello.py"));
    assert!(at("file", "path", "/lib/cordon_e2e_hello.py") < at("file", "path", "/inside"));
    assert!(at("file", "path", "/inside") < at("file", "path", "/opened.txt"));
    // Python by the name pip was run as: its path is where that leads (/usr/bin/python3.11).
    let python = records
        .iter()
        .position(|r| r["reason"] == "jail_exec" && r["exec"]["argv"][0] == "python3")
        .unwrap_or_else(|| panic!("no exec of python3:\n{audit}"));
    assert!(python < at("file", "path", "/lib/cordon_e2e_hello.py"));
    let activity = records.iter().filter(|r| r["kind"] == "exec" || r["kind"] == "file");
    assert!(activity.clone().count() > 4);
    assert!(activity.clone().all(|r| r["sandbox"] == "laptop" && r["user"] == "dev"));
    assert!(
        activity
            .filter(|r| r["kind"] == "exec")
            .all(|r| r["exec"]["uid"].as_u64().is_none_or(|u| u == u64::from(uid)))
    );
}

/// `cordon jail --project` run as root (directly, through sudo), or by a user holding a capability, is refused
/// before anything runs: the command would be root (or privileged) over the host's files in its user namespace,
/// `/etc/shadow` first of all.
#[test]
fn the_project_jail_refuses_root_and_capabilities() {
    if !crate::rigs::netns::available("the_project_jail_refuses_root_and_capabilities") {
        return;
    }
    let (uid, gid, _) = user();
    let UserDir { dir, bin, project } = user_dir("jail-root-refused");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\nsandboxes:\n  - {{ id: t, user: dev, token_sha256: {h}, policy: p }}\npolicies:\n  p: {{ allow: [] }}\n",
        d = d.display(),
        h = hash("unused"),
    );
    std::fs::write(d.join("cordon.yaml"), yaml).unwrap();
    chown_r(d, uid, gid);
    let script = format!(
        "cat /etc/shadow > {p}/shadow; grep CapEff /proc/self/status > {p}/caps; touch {p}/ran",
        p = project.display()
    );
    let as_root = |sudo: bool| {
        let mut c = std::process::Command::new(&bin);
        c.args(["jail", "--config"])
            .arg(d.join("cordon.yaml"))
            .arg("--project")
            .arg(&project)
            .args(["--", "sh", "-c", &script]);
        if sudo {
            c.env("SUDO_UID", uid.to_string()).env("SUDO_GID", gid.to_string());
        }
        c.output_within()
    };
    // The user, holding CAP_DAC_READ_SEARCH (which reads any file) as an ambient capability.
    let with_cap = || {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid",
            &uid.to_string(),
            "--regid",
            &gid.to_string(),
            "--init-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            "--",
        ])
        .arg(&bin)
        .args(["jail", "--config"])
        .arg(d.join("cordon.yaml"))
        .arg("--project")
        .arg(&project)
        .args(["--", "sh", "-c", &script])
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        c.output_within()
    };
    for (what, out, said) in [
        ("root", as_root(false), "this is root (uid 0"),
        ("root through sudo", as_root(true), "this is root (uid 0"),
        ("a user with a capability", with_cap(), "a process with capabilities"),
    ] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{what}: {err}");
        assert!(
            err.contains(said) && err.contains("the command would be root over the host's files"),
            "{what}: {err}"
        );
        for file in ["shadow", "caps", "ran"] {
            assert!(!project.join(file).exists(), "{what}: the command ran ({file})");
        }
    }
    // The same user without the capability runs it, and the command holds none and cannot read /etc/shadow.
    let out = jail_as_user(
        &bin,
        &d.join("cordon.yaml"),
        &project,
        &[],
        "cat /etc/shadow >/dev/null 2>&1 && echo shadow=read || echo shadow=refused; grep CapEff /proc/self/status",
    )
    .output_within();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("shadow=refused") && said.contains("CapEff:\t0000000000000000"),
        "{said}"
    );
}
