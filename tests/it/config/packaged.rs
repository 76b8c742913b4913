//! The configurations cordon is packaged with: the Debian package's (`deploy/debian/cordon.yaml`, installed as
//! `/etc/cordon/cordon.yaml`) and the container image's (`deploy/image/cordon.yaml`). Both validate against the
//! schema, whose installed copy their modeline names; every path they give is absolute, so that cordon's state
//! lands in `/var/lib/cordon` whatever folder it is started from and however a relative path would resolve;
//! and a cordon run on them writes nothing outside that folder: not in the folder it runs in, not beside its
//! configuration. (`.ci/package.sh` and `.ci/image.sh` run them as packaged.)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::schema::{errors, json_of, schema, validator};
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, await_listening, written_token};
use crate::rigs::wait::Within;

/// The packaged configurations, by their paths in the repository.
const PACKAGED: [&str; 2] = ["deploy/debian/cordon.yaml", "deploy/image/cordon.yaml"];

/// Where both packages install the schema, which the packaged configurations' modelines name.
const INSTALLED_SCHEMA: &str = "/usr/share/cordon/cordon.schema.json";

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_packaged_configurations_validate_and_name_the_installed_schema() {
    let v = validator(&schema());
    for rel in PACKAGED {
        let text = read(rel);
        assert_eq!(
            text.lines().next(),
            Some(format!("# yaml-language-server: $schema={INSTALLED_SCHEMA}").as_str()),
            "{rel}"
        );
        let found = errors(&v, &json_of(&text).unwrap());
        assert!(found.is_empty(), "{rel}: {found:?}");
    }
    // The schema is where the modelines say, in the package and in the image.
    assert!(
        read("Cargo.toml").contains(r#"["docs/cordon.schema.json", "usr/share/cordon/", "644"]"#),
        "the Debian package does not install the schema in /usr/share/cordon/"
    );
    assert!(
        read("deploy/image/build.sh").contains(&format!("docs/cordon.schema.json \"$root{INSTALLED_SCHEMA}\"")),
        "the image does not hold the schema at {INSTALLED_SCHEMA}"
    );
}

/// Every value of a key that names a file or a folder, with where it is.
fn paths(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    const PATH_KEYS: [&str; 6] = ["path", "file", "dir", "store", "key_file", "extra_roots"];
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let here = format!("{at}.{key}");
                match v {
                    Value::String(s) if PATH_KEYS.contains(&key.as_str()) => out.push((here, s.clone())),
                    Value::Array(items) if PATH_KEYS.contains(&key.as_str()) => {
                        for (i, item) in items.iter().enumerate() {
                            out.push((format!("{here}[{i}]"), item.as_str().unwrap_or_default().to_owned()));
                        }
                    }
                    _ => paths(v, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                paths(v, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_path_of_the_packaged_configurations_is_absolute_and_under_var_lib_cordon() {
    for rel in PACKAGED {
        let mut found = Vec::new();
        paths(&json_of(&read(rel)).unwrap(), "", &mut found);
        // The state's own keys: each must be set (a default would be a relative path) and in the state folder.
        for key in [
            ".control.admin_token.file",
            ".control.signing_key.file",
            ".control.store",
            ".audit.path",
            ".audit.signing_key.file",
            ".ca.dir",
            ".vault.file.path",
            ".vault.file.key_file",
        ] {
            assert!(found.iter().any(|(at, _)| at == key), "{rel}: {key} is not set");
        }
        for (at, path) in &found {
            assert!(
                path.starts_with("/var/lib/cordon/"),
                "{rel}: {at} is {path:?}, not an absolute path under /var/lib/cordon"
            );
        }
    }
}

/// Every file and folder under `dir`, relative to it, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap().path().strip_prefix(dir).unwrap().display().to_string())
        .collect();
    out.sort();
    out
}

/// A packaged configuration with its state folder moved to `state` and its listeners to free loopback ports.
fn relocated(rel: &str, state: &Path, proxy: u16, admin: u16) -> String {
    read(rel)
        .replace("/var/lib/cordon", &state.display().to_string())
        .replace("0.0.0.0:3128", &format!("127.0.0.1:{proxy}"))
        .replace("127.0.0.1:3128", &format!("127.0.0.1:{proxy}"))
        .replace("127.0.0.1:9090", &format!("127.0.0.1:{admin}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_packaged_configuration_writes_only_in_its_state_folder() {
    for rel in PACKAGED {
        let (state, etc, cwd) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let (proxy, admin) = (free_port(), free_port());
        let config = etc.path().join("cordon.yaml");
        std::fs::write(&config, relocated(rel, state.path(), proxy, admin)).unwrap();
        assert!(
            !std::fs::read_to_string(&config).unwrap().contains("/var/lib/cordon"),
            "{rel}: a path outside the state folder"
        );

        let check = Command::new(BIN)
            .args(["check", "--config"])
            .arg(&config)
            .current_dir(cwd.path())
            .timed_output()
            .unwrap();
        assert!(
            check.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&check.stderr)
        );

        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .current_dir(cwd.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = await_listening(child, &format!("127.0.0.1:{proxy}"), || {
            std::net::TcpStream::connect(("127.0.0.1", proxy)).is_ok()
        })
        .await;
        written_token(&state.path().join("admin-token"));
        // A request, refused for want of a credential: an audit record to write.
        let out = crate::rigs::process::curl()
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x"])
            .arg(format!("http://127.0.0.1:{proxy}"))
            .arg("http://example.com/")
            .timed_output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "407", "{rel}");
        let until = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(state.path().join("audit.jsonl")).is_ok_and(|a| a.contains("auth_missing")) {
            assert!(Instant::now() < until, "{rel}: no audit record in the state folder");
            std::thread::sleep(Duration::from_millis(50));
        }
        crate::rigs::process::signal(child.id(), crate::rigs::process::Signal::SIGTERM).unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < until,
                "{rel}: cordon did not stop within 30 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "{rel}: {status}");

        assert_eq!(
            listing(cwd.path()),
            Vec::<String>::new(),
            "{rel}: written where cordon ran"
        );
        assert_eq!(
            listing(etc.path()),
            vec!["cordon.yaml".to_owned()],
            "{rel}: written beside the configuration"
        );
        let written = listing(state.path());
        for expected in ["admin-token", "signing-key", "cordon.db", "audit.jsonl", "audit-key"] {
            assert!(
                written.iter().any(|w| w == expected),
                "{rel}: no {expected} in the state folder: {written:?}"
            );
        }
    }
}
