//! A configuration means the same files from wherever cordon is started: a file's relative paths are read against
//! its folder, the embedded configuration's against cordon's state folder, never the working folder. A cordon run
//! from one folder and the commands run from others meet in the same store, and the folders they stand in stay
//! empty.

use std::path::Path;
use std::process::Command;

use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, await_listening};
use crate::rigs::wait::{TimedChild, Within};

/// `cordon ARGS` run in `dir`, without the caller's cordon variables; (exit code, stdout, stderr).
fn cordon_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_ADMIN_URL")
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_STATE_DIR")
        .envs(env.iter().copied())
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_files_relative_paths_mean_its_folder_from_wherever_cordon_and_its_commands_run() {
    let root = tempfile::tempdir().unwrap();
    let (conf, started, elsewhere) = (root.path().join("conf"), root.path().join("a"), root.path().join("b"));
    for d in [&conf, &started, &elsewhere] {
        std::fs::create_dir(d).unwrap();
    }
    let (proxy, admin) = (free_port(), free_port());
    std::fs::write(
        conf.join("cordon.yaml"),
        format!(
            "listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}\naudit: {{ path: audit.jsonl }}\n\
             ca: {{ dir: certs }}\ncontrol:\n  admin_token: {{ file: state/admin-token }}\n  \
             signing_key: {{ file: state/signing-key }}\n  store: state/cordon.db\n  watch: false\n\
             sandboxes: []\npolicies:\n  default:\n    allow:\n      - host: api.example.com\n"
        ),
    )
    .unwrap();
    // Started from `a` with a path relative to `a`.
    let child = Command::new(BIN)
        .args(["run", "--config", "../conf/cordon.yaml"])
        .current_dir(&started)
        .env_remove("CORDON_STATE_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = await_listening(child, &format!("127.0.0.1:{admin}"), || {
        std::net::TcpStream::connect(("127.0.0.1", admin)).is_ok()
    })
    .await;
    let dirs = (conf.clone(), elsewhere.clone());
    let (created, listed) = tokio::task::spawn_blocking(move || {
        let (conf, elsewhere) = dirs;
        // From `b`, relative to `b`: the admin address and token are the file's, read where it keeps them.
        let created = cordon_in(
            &elsewhere,
            &[
                "sandbox",
                "create",
                "--user",
                "alice",
                "--policy",
                "default",
                "--id",
                "from-b",
                "--config",
                "../conf/cordon.yaml",
            ],
            &[],
        );
        // From `/`, with the absolute path: the same store.
        let file = conf.join("cordon.yaml").display().to_string();
        let listed = cordon_in(Path::new("/"), &["sandbox", "list", "--json", "--config", &file], &[]);
        (created, listed)
    })
    .await
    .unwrap();
    let _ = child.kill();
    let _ = child.timed_wait();
    assert_eq!(created.0, 0, "{}{}", created.1, created.2);
    assert_eq!(listed.0, 0, "{}", listed.2);
    let listed: serde_json::Value = serde_json::from_str(&listed.1).unwrap();
    assert!(
        listed["sandboxes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "from-b"),
        "{listed}"
    );
    // Everything it keeps is beside the file; nothing where it was started or asked.
    for kept in [
        "state/cordon.db",
        "state/admin-token",
        "state/signing-key",
        "audit.jsonl",
        "certs",
    ] {
        assert!(conf.join(kept).exists(), "{kept} is not beside the configuration");
    }
    assert!(
        empty(&started) && empty(&elsewhere),
        "cordon wrote where it was started or asked"
    );
    // check says which folder it read them against.
    let (code, out, err) = cordon_in(&elsewhere, &["check", "--config", "../conf/cordon.yaml"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("paths    relative to {} (the file's folder)", conf.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("store {}", conf.join("state/cordon.db").display())),
        "{out}"
    );
}

#[test]
fn the_embedded_configuration_keeps_its_state_in_the_state_folder_whatever_the_working_folder() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state-folder");
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let env = [("CORDON_STATE_DIR", state.to_str().unwrap())];
    // Two commands that make state, from two folders: the same CA, in the state folder.
    let (code, first, err) = cordon_in(&a, &["ca", "export", "--sandbox", "demo"], &env);
    assert_eq!(code, 0, "{err}");
    let (code, second, err) = cordon_in(&b, &["ca", "export", "--sandbox", "demo"], &env);
    assert_eq!(code, 0, "{err}");
    assert_eq!(first, second, "two folders, two CAs");
    assert!(state.join("certs/demo").is_dir(), "the CA is not in the state folder");
    assert!(
        empty(&a) && empty(&b),
        "the embedded configuration wrote into the working folder"
    );
    let (_, out, _) = cordon_in(&b, &["check"], &env);
    assert!(
        out.contains(&format!("paths    relative to {} (the state folder)", state.display())),
        "{out}"
    );
    let (_, json, _) = cordon_in(&b, &["check", "--json"], &env);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["paths_relative_to"], state.display().to_string());
    // systemd's StateDirectory, when cordon runs as a unit that has one.
    let unit = root.path().join("unit-state");
    let (_, out, _) = cordon_in(&b, &["check"], &[("STATE_DIRECTORY", unit.to_str().unwrap())]);
    assert!(
        out.contains(&format!("paths    relative to {} ", unit.display())),
        "{out}"
    );
}
