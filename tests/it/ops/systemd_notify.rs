//! sd_notify through the binary: cordon started with `NOTIFY_SOCKET` (as systemd starts a `Type=notify` unit)
//! says `READY=1` only once it serves (the proxy answers a request and `/readyz` is 200 the moment it arrives),
//! `RELOADING=1` then `READY=1` around a SIGHUP reload, and `STOPPING=1` when SIGTERM starts the drain.

use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, curl};
use crate::rigs::wait::Within;

/// The next notification on `socket`, within `limit`; panics naming `waiting_for` when none comes.
fn next(socket: &UnixDatagram, limit: Duration, waiting_for: &str) -> String {
    socket.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 4096];
    match socket.recv(&mut buf) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        Err(e) => panic!("no notification while waiting for {waiting_for}: {e}"),
    }
}

/// The status of `GET path` on `port` (plain HTTP, blocking).
fn get_status(port: u16, path: &str) -> u16 {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[test]
fn systemd_hears_ready_only_when_cordon_serves_then_reloading_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    let (proxy, admin) = (free_port(), free_port());
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: \"127.0.0.1:{proxy}\", admin: \"127.0.0.1:{admin}\" }}\n\
             control: {{ admin_token: {{ file: {d}/admin-token }}, watch: false }}\n\
             audit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n"
        ),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &socket_path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();

    let ready = next(&socket, Duration::from_secs(30), "READY=1");
    assert!(
        ready.lines().any(|l| l == "READY=1"),
        "the first notification is not READY=1: {ready:?}"
    );
    assert!(
        ready.lines().any(|l| l.starts_with("STATUS=listening on 127.0.0.1:")),
        "{ready:?}"
    );
    // At that moment cordon serves: the proxy answers a request (an unauthenticated one: 407), and the readiness
    // probe says so.
    let out = curl()
        .args([
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-x",
            &format!("http://127.0.0.1:{proxy}"),
        ])
        .arg("http://example.test/")
        .timed_output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "407");
    assert_eq!(get_status(admin, "/readyz"), 200);

    // SIGHUP: RELOADING=1 (with the time, as systemd asks), then READY=1 again.
    assert!(crate::rigs::process::signal(pid, Signal::SIGHUP).is_ok());
    let reloading = next(&socket, Duration::from_secs(10), "RELOADING=1");
    assert!(reloading.lines().any(|l| l == "RELOADING=1"), "{reloading:?}");
    assert!(
        reloading.lines().any(|l| l.starts_with("MONOTONIC_USEC=")),
        "{reloading:?}"
    );
    let again = next(&socket, Duration::from_secs(10), "READY=1 after the reload");
    assert!(again.lines().any(|l| l == "READY=1"), "{again:?}");

    // SIGTERM: STOPPING=1 as the drain starts, then cordon ends cleanly.
    assert!(crate::rigs::process::signal(pid, Signal::SIGTERM).is_ok());
    let stopping = next(&socket, Duration::from_secs(10), "STOPPING=1");
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping:?}");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "cordon did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(!err.contains("cannot notify systemd"), "{err}");
}
