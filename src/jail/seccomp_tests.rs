#![expect(clippy::unwrap_used, reason = "tests")]

use socket2::{Domain, Socket, Type};

use super::*;

/// What a thread under `programs` may do with sockets: (Unix datagram, stream pair, datagram pair, TCP,
/// vsock, uevent netlink, route netlink), each `Ok(())` or the errno.
fn sockets_under(programs: Vec<BpfProgram>) -> Vec<Result<(), Option<i32>>> {
    std::thread::spawn(move || {
        for p in &programs {
            apply(p).unwrap();
        }
        let errno = |r: std::io::Result<()>| r.map_err(|e| e.raw_os_error());
        let pair = |t: Type| Socket::pair(Domain::UNIX, t, None).map(|_| ());
        let one = |d: Domain, t: Type, p: Option<i32>| Socket::new(d, t, p.map(socket2::Protocol::from)).map(|_| ());
        vec![
            errno(one(Domain::UNIX, Type::DGRAM, None)),
            errno(pair(Type::STREAM)),
            errno(pair(Type::DGRAM)),
            errno(std::net::TcpListener::bind("127.0.0.1:0").map(|_| ())),
            errno(one(Domain::VSOCK, Type::STREAM, None)),
            errno(one(
                Domain::from(libc::AF_NETLINK),
                Type::DGRAM,
                Some(libc::NETLINK_KOBJECT_UEVENT),
            )),
            errno(one(
                Domain::from(libc::AF_NETLINK),
                Type::DGRAM,
                Some(libc::NETLINK_ROUTE),
            )),
        ]
    })
    .join()
    .unwrap()
}

#[test]
fn the_base_filter_refuses_foreign_socket_families_and_keeps_unix_and_ip() {
    let eperm = Err(Some(libc::EPERM));
    assert_eq!(
        sockets_under(vec![base().unwrap()]),
        [Ok(()), Ok(()), Ok(()), Ok(()), eperm, eperm, Ok(())]
    );
}

#[test]
fn the_command_filter_refuses_unix_sockets_and_datagram_pairs_on_its_thread_only() {
    let eperm = Err(Some(libc::EPERM));
    assert_eq!(
        sockets_under(vec![base().unwrap(), no_unix_sockets().unwrap()]),
        [eperm, Ok(()), eperm, Ok(()), eperm, eperm, Ok(())]
    );
    // This thread was not filtered.
    assert!(std::os::unix::net::UnixDatagram::unbound().is_ok());
}

#[test]
fn bubblewrap_reads_eight_bytes_an_instruction() {
    let program = base().unwrap();
    assert_eq!(to_bytes(&program).len(), program.len() * 8);
}
