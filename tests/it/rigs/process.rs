//! The `cordon` binary as a process: started on a configuration and awaited until it listens, signalled and
//! waited for, run as `cordon ARGS` or `cordon check`, its stderr followed line by line; processes killed when
//! dropped; and curl, the client most tests drive cordon with.

use crate::rigs::wait::{TimedChild, Within};
pub(crate) use nix::sys::signal::Signal;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_cordon");

/// cordon's state folder for the commands tests run on the embedded configuration (`CORDON_STATE_DIR`): one
/// folder of this test process's own, so they neither share root's `/var/lib/cordon` nor a user's
/// `~/.local/state/cordon` with anything else.
pub(crate) fn state_dir() -> &'static std::path::Path {
    static DIR: std::sync::LazyLock<tempfile::TempDir> =
        std::sync::LazyLock::new(|| tempfile::tempdir().expect("a temporary folder"));
    DIR.path()
}

/// `cordon ARGS` without the environment's defaults (configuration, admin URL and token): (exit code, stdout,
/// stderr).
pub(crate) fn cordon(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("CORDON_STATE_DIR", state_dir())
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_ADMIN_TOKEN")
        .env_remove("CORDON_ADMIN_URL")
        .timed_output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// curl, quiet but for errors, within 10 s, and deaf to the caller's proxy variables.
/// Puts an executable copy of `from` at `to` (mode 0755) through `install`, a process of its own, never a
/// write in this one: a file this process held open for writing is inherited by whatever child another test
/// thread forks at that moment, and exec'ing it fails with `Text file busy` (ETXTBSY) until that child execs.
pub(crate) fn install_executable(from: &std::path::Path, to: &std::path::Path) {
    let out = Command::new("install")
        .args(["-m", "0755"])
        .arg(from)
        .arg(to)
        .timed_output()
        .expect("install (coreutils)");
    assert!(
        out.status.success(),
        "install {} {}: {}",
        from.display(),
        to.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn curl() -> Command {
    // These tests drive cordon with a real client.
    crate::rigs::tool::must("curl", &["--version"], "apt-get install curl");
    let mut c = Command::new("curl");
    c.args(["-sS", "--max-time", "10", "--noproxy", ""]);
    c
}

/// Send `sig` to the process `pid` (a child the test started): one system call, which cannot hang as a `kill`
/// process could; an error when there is no such process (it ended) or it may not be signalled.
pub(crate) fn signal(pid: u32, sig: Signal) -> nix::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| nix::errno::Errno::ESRCH)?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig)
}

/// Send `sig` to a cordon process and wait for it to end (within the deadline of `timed_wait_with_output`);
/// its output.
pub(crate) async fn signal_and_wait(child: std::process::Child, sig: Signal) -> std::process::Output {
    signal(child.id(), sig).unwrap();
    tokio::task::spawn_blocking(move || child.timed_wait_with_output())
        .await
        .unwrap()
        .unwrap()
}

/// What `cordon check --config CONFIG` prints (its summary), and what it said on stderr, with `env` set (check
/// reads the secrets the credentials name, as a start would).
pub(crate) fn check_summary(config: &std::path::Path, env: &[(&str, &str)]) -> (String, String) {
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .timed_output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Start `cordon run --config config` with extra environment (the secrets a test hands it), and wait until
/// it listens on `port`.
pub(crate) async fn spawn_cordon(config: &std::path::Path, port: u16, env: &[(&str, &str)]) -> std::process::Child {
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(config)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Someone else's listener on the port must not pass for this cordon: await_listening checks it lives.
    await_listening(child, &format!("127.0.0.1:{port}"), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    })
    .await
}

/// Wait until `ready` says the cordon `child` listens on `addr`; panic with its stderr if it exits first or
/// never does.
pub(crate) async fn await_listening(
    mut child: std::process::Child,
    addr: &str,
    ready: impl Fn() -> bool,
) -> std::process::Child {
    for _ in 0..100 {
        if let Ok(Some(status)) = child.try_wait() {
            let out = child.timed_wait_with_output().unwrap();
            panic!(
                "cordon exited ({status}) before listening on {addr}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        if ready() {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let out = child.timed_wait_with_output().unwrap();
    panic!(
        "cordon never listened on {addr}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cordon ARGS` with `env` set (and nothing from the caller's CORDON_* defaults): (exit code, stdout, stderr).
/// A `run` that has not ended within 10 s is killed and reported as -1: it started, which it must not.
pub(crate) fn cordon_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("CORDON_CONFIG")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.timed_wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A process killed (and reaped) when dropped, also when an assertion fails first.
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.timed_wait();
    }
}

/// cordon's stderr, read line by line as it comes.
pub(crate) struct Log(Arc<std::sync::Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn follow(child: &mut Child) -> Log {
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Log(lines)
    }

    /// Every line so far.
    pub(crate) fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }

    /// Wait until `n` lines contain `wanted`; all the lines then.
    pub(crate) async fn until(&self, wanted: &str, n: usize) -> String {
        for _ in 0..100 {
            let lines = self.0.lock().unwrap().clone();
            if lines.iter().filter(|l| l.contains(wanted)).count() >= n {
                return lines.join("\n");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "cordon never said {wanted:?} {n} times:\n{}",
            self.0.lock().unwrap().join("\n")
        );
    }
}

/// The token cordon writes to `path` at start (a `file:` secret it makes), once it is there.
pub(crate) fn written_token(path: &std::path::Path) -> String {
    let read = || std::fs::read_to_string(path).unwrap_or_default().trim().to_owned();
    crate::rigs::wait::until(
        &format!("cordon to write its token to {}", path.display()),
        Duration::from_secs(10),
        || !read().is_empty(),
    );
    read()
}
