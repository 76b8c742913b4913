#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;

use super::*;

struct Nowhere;

impl Sink for Nowhere {
    fn write(&self, _: &crate::audit::Record) {}
}

#[test]
fn only_the_first_connection_is_taken_and_a_word_without_a_listener_turns_the_log_off() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::start(dir.path(), Arc::new(Nowhere), &crate::names::SandboxId::from("s"), "u").unwrap();
    let socket = recorder.socket().to_path_buf();
    let mut first = UnixStream::connect(&socket).unwrap();
    first.write_all(b"no user notification here").unwrap();
    // The socket is gone once the first connection came: nothing else can hand cordon a listener.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while socket.exists() {
        assert!(std::time::Instant::now() < until, "the socket stayed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(UnixStream::connect(&socket).is_err());
    recorder.finish();
}
