//! Plain `cordon` (no command) is `cordon run`, and reads `CORDON_CONFIG` as `cordon run` does: it ran the
//! embedded demo configuration instead, whatever the variable named.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::process::BIN;
use crate::rigs::wait::TimedChild;

#[test]
fn plain_cordon_reads_the_configuration_cordon_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, "timeouts: { conect: 5s }\n").unwrap();
    let mut child = Command::new(BIN)
        .env("CORDON_CONFIG", &config)
        .env_remove("CORDON_LOG_FORMAT")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.timed_wait_with_output().unwrap();
            panic!(
                "cordon ran instead of refusing {}:\n{}",
                config.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.timed_wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:1:", config.display())) && err.contains("conect"),
        "{err}"
    );
}
