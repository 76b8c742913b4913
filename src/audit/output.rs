//! Where the audit thread writes (a stream, or a file it rotates and reopens), and how a batch is written so
//! that exactly what the disk took is known.

use std::io::{ErrorKind, Write};

/// Where the thread writes: a stream, or a file it may rotate and reopen.
pub(crate) trait Output: Write + Send {
    /// Whether the file is due to be rotated (by size or age).
    fn rotation_due(&self) -> bool {
        false
    }
    /// Set the file aside and go on in a fresh one at the same path; the name it was set aside as.
    fn rotate(&mut self) -> std::io::Result<Option<String>> {
        Ok(None)
    }
    /// Open the path again (an external logrotate moved the file away).
    fn reopen(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Output for std::io::Stdout {}

impl<T: Output + ?Sized> Output for Box<T> {
    fn rotation_due(&self) -> bool {
        (**self).rotation_due()
    }
    fn rotate(&mut self) -> std::io::Result<Option<String>> {
        (**self).rotate()
    }
    fn reopen(&mut self) -> std::io::Result<()> {
        (**self).reopen()
    }
}

/// Write `buf` to `out` until all of it is taken or a write fails: how much was taken, and the failure.
pub(crate) fn write_taken<W: std::io::Write + ?Sized>(out: &mut W, buf: &[u8]) -> (usize, std::io::Result<()>) {
    let mut done = 0;
    while done < buf.len() {
        match out.write(&buf[done..]) {
            Ok(0) => return (done, Err(ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, Ok(()))
}
