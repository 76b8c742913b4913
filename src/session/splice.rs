//! An established `tls: tunnel` moved by the kernel: splice(2) from one socket into a pipe and from the pipe
//! into the other socket, so the bytes never enter cordon's memory, with the tunnel's counts, byte budget and
//! idle and lifetime timeouts kept (the caller races [`relay`] against [`super::lifetime::Stop::ended`]).
//!
//! Each direction has its own pipe (two descriptors), filled from its source only when empty and drained into
//! its destination before the next fill. A direction whose first splice the kernel refuses (no splice support
//! for these descriptors) copies through a buffer instead.

use std::io;
use std::net::Shutdown;
use std::os::fd::OwnedFd;

use rustix::io::Errno;
use rustix::pipe::{PipeFlags, SpliceFlags, pipe_with, splice};
use tokio::io::Interest;
use tokio::net::TcpStream;

use super::lifetime::Stop;

/// The most one splice moves: a pipe's default capacity (16 pages).
const CHUNK: usize = 64 * 1024;

/// Which way a direction moves, for the counts: from the client (`Up`) or to it (`Down`).
#[derive(Clone, Copy)]
enum Way {
    Up,
    Down,
}

/// Move bytes both ways between `client` and `upstream` until both have ended (each end's EOF is passed on
/// as a half-close), or an error, or the sandbox's byte budget is spent.
pub(crate) async fn relay(client: &TcpStream, upstream: &TcpStream, stop: &Stop) -> io::Result<()> {
    tokio::try_join!(
        one_way(client, upstream, Way::Up, stop),
        one_way(upstream, client, Way::Down, stop)
    )?;
    Ok(())
}

/// One direction, by splice through a pipe of its own; by copying where the kernel will not splice.
async fn one_way(from: &TcpStream, to: &TcpStream, way: Way, stop: &Stop) -> io::Result<()> {
    let (pipe_out, pipe_in) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
    let mut spliced_any = false;
    loop {
        let n = match fill(from, &pipe_in).await {
            Ok(n) => n,
            Err(e) if !spliced_any && unsupported(&e) => return copy_way(from, to, way, stop).await,
            Err(e) => return Err(e),
        };
        spliced_any = true;
        if n == 0 {
            // The source is done: pass the half-close on, as copy_bidirectional does.
            return shutdown_write(to);
        }
        count(stop, way, n)?;
        drain(&pipe_out, to, n).await?;
    }
}

/// Splice what `from` has (up to [`CHUNK`]) into the empty pipe; 0 at the source's end.
async fn fill(from: &TcpStream, pipe_in: &OwnedFd) -> io::Result<usize> {
    loop {
        from.readable().await?;
        let moved = from.try_io(Interest::READABLE, || {
            splice(
                from,
                None,
                pipe_in,
                None,
                CHUNK,
                SpliceFlags::MOVE | SpliceFlags::NONBLOCK,
            )
            .map_err(io::Error::from)
        });
        match moved {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

/// Splice the `n` bytes the pipe holds into `to`, as fast as it takes them.
async fn drain(pipe_out: &OwnedFd, to: &TcpStream, mut n: usize) -> io::Result<()> {
    while n > 0 {
        to.writable().await?;
        let moved = to.try_io(Interest::WRITABLE, || {
            splice(pipe_out, None, to, None, n, SpliceFlags::MOVE | SpliceFlags::NONBLOCK).map_err(io::Error::from)
        });
        match moved {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(m) => n -= m,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The fallback: one direction through a buffer.
async fn copy_way(from: &TcpStream, to: &TcpStream, way: Way, stop: &Stop) -> io::Result<()> {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        from.readable().await?;
        let n = match from.try_read(&mut buf) {
            Ok(0) => return shutdown_write(to),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        count(stop, way, n)?;
        let mut at = 0;
        while at < n {
            to.writable().await?;
            match to.try_write(&buf[at..n]) {
                Ok(m) => at += m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn count(stop: &Stop, way: Way, n: usize) -> io::Result<()> {
    let n = n as u64;
    match way {
        Way::Up => stop.count(n, 0),
        Way::Down => stop.count(0, n),
    }
}

/// Whether the kernel refuses to splice these descriptors at all (rather than failing this once).
fn unsupported(e: &io::Error) -> bool {
    [Errno::INVAL, Errno::NOSYS, Errno::OPNOTSUPP]
        .iter()
        .any(|errno| e.raw_os_error() == Some(errno.raw_os_error()))
}

fn shutdown_write(to: &TcpStream) -> io::Result<()> {
    match socket2::SockRef::from(to).shutdown(Shutdown::Write) {
        // The peer has already gone: nothing left to tell it.
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
        other => other,
    }
}
