//! Ports for processes the tests start, which bind them themselves.

use std::sync::Mutex;

/// A port free on 127.0.0.1 right now (for processes that bind it themselves), never the same one twice in
/// this test run.
///
/// The ports come from below the kernel's ephemeral range: a port taken with `bind(:0)` and let go could
/// be handed by the kernel to the next listener or outgoing connection of a test running alongside, and a
/// readiness check would then find that one listening instead of the process it waits for.
pub(crate) fn free_port() -> u16 {
    static NEXT: Mutex<Option<u16>> = Mutex::new(None);
    let floor = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let low = 10_000.min(floor / 2);
    let span = floor - low;
    let mut next = NEXT.lock().unwrap();
    // Start where another test process (another binary run at the same time) is unlikely to.
    let mut port = next.unwrap_or(low + (std::process::id() % u32::from(span)) as u16);
    for _ in 0..span {
        port = if port + 1 >= floor { low } else { port + 1 };
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            *next = Some(port);
            return port;
        }
    }
    panic!("no free port below the ephemeral range {floor}");
}
