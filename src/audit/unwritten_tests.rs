#![expect(clippy::unwrap_used, reason = "tests")]
use std::io::Write;
use std::sync::Arc;

use super::*;

/// A disk that takes `room` more bytes, then fails with "no space" until given more room.
struct Disk {
    bytes: Vec<u8>,
    room: usize,
}

impl Write for Disk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from_raw_os_error(28));
        }
        let n = buf.len().min(self.room);
        self.bytes.extend_from_slice(&buf[..n]);
        self.room -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Output for Disk {}

#[test]
fn a_full_disk_keeps_what_it_did_not_take_and_gets_it_whole_later() {
    let health = Arc::new(Health::default());
    let mut held = Unwritten::new(health.clone());
    let mut disk = Disk {
        bytes: Vec::new(),
        room: 10,
    };
    held.push(b"{\"a\":1}\n{\"b\":22}\n");
    assert!(held.write_to(&mut disk).is_err());
    assert!(!health.is_up(), "a failed write takes the output down");
    assert_eq!(disk.bytes, b"{\"a\":1}\n{\"");
    assert!(held.waiting());
    held.push(b"{\"c\":3}\n");
    disk.room = 1000;
    held.write_to(&mut disk).unwrap();
    assert!(health.is_up(), "a write that succeeds brings it back");
    assert!(!held.waiting());
    assert_eq!(
        disk.bytes, b"{\"a\":1}\n{\"b\":22}\n{\"c\":3}\n",
        "each byte once, in order"
    );
}

#[test]
fn past_its_limit_it_drops_lines_and_counts_them() {
    let health = Arc::new(Health::default());
    let mut held = Unwritten::with_limit(health.clone(), 8);
    assert!(held.room());
    held.push(b"12345678\n");
    assert!(!held.room());
    assert!(!held.room());
    assert_eq!(health.state().dropped, 2);
    assert_eq!(held.take_dropped(), 2);
    assert_eq!(held.take_dropped(), 0, "counted once");
}
