#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn the_filter_refuses_unix_sockets_on_the_thread_it_is_applied_to_only() {
    let program = no_unix_sockets().unwrap();
    let outcome = std::thread::spawn(move || {
        apply(&program).unwrap();
        let unix = std::os::unix::net::UnixDatagram::unbound()
            .map(|_| ())
            .map_err(|e| e.raw_os_error());
        let pair = std::os::unix::net::UnixStream::pair().map(|_| ());
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").map(|_| ());
        (unix, pair.is_ok(), tcp.is_ok())
    })
    .join()
    .unwrap();
    assert_eq!(outcome, (Err(Some(libc::EPERM)), true, true));
    // This thread was not filtered.
    assert!(std::os::unix::net::UnixDatagram::unbound().is_ok());
}
