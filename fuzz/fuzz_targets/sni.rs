//! The SNI reader (`src/tls/sni.rs`) on arbitrary bytes as the start of a TLS connection.
//!
//! Checks that the reader never panics, and that when it returns:
//! - the bytes it read are a prefix of the input;
//! - with a server name: those bytes hold, by a reference parser written here from RFC 8446 and RFC 6066,
//!   handshake records that carry one well-formed ClientHello whose `server_name` extension's one
//!   `host_name` (read up to the first entry of another type, whose encoding is unknown) is that name
//!   (lowercased, one trailing dot removed); and the name is a DNS name as cordon's target parser defines
//!   it (accepted as a `Host` value, a name and not an IP literal, and already in normalised form).
#![no_main]

use cordon::fuzzing::{sni, target_host, target_name};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((read, name)) = sni(data) else {
        return;
    };
    assert!(
        data.starts_with(&read),
        "the reader returned bytes the client did not send"
    );
    let Some(name) = name else {
        return;
    };
    let hello = handshake(&read).unwrap_or_else(|e| panic!("SNI {name:?} from bytes that are no ClientHello: {e}"));
    let sent = server_name(hello).unwrap_or_else(|e| panic!("SNI {name:?} from a malformed ClientHello: {e}"));
    // rustls hands the name over without its trailing dot, if it has one.
    let sent = sent.map(|s| s.strip_suffix('.').unwrap_or(&s).to_ascii_lowercase());
    assert_eq!(sent.as_ref(), Some(&name), "the reader's name is not the ClientHello's");
    let target = target_host(name.as_bytes(), 443).unwrap_or_else(|e| panic!("SNI {name:?}: {e}"));
    assert_eq!(
        target_name(&target),
        Some(name.as_str()),
        "SNI {name:?} is not a normalised name"
    );
});

/// A cursor over bytes that fails instead of panicking.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.0.len() {
            return Err(format!("{n} bytes wanted, {} left", self.0.len()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<usize, String> {
        Ok(usize::from(self.take(1)?[0]))
    }
    fn u16(&mut self) -> Result<usize, String> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }
    fn u24(&mut self) -> Result<usize, String> {
        let b = self.take(3)?;
        Ok((usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2]))
    }
    /// A vector with a `len_bytes`-byte length in front.
    fn vec(&mut self, len_bytes: usize) -> Result<Cursor<'a>, String> {
        let n = match len_bytes {
            1 => self.u8()?,
            2 => self.u16()?,
            _ => self.u24()?,
        };
        Ok(Cursor(self.take(n)?))
    }
}

/// The body of the ClientHello carried by the handshake records at the start of `bytes`.
fn handshake(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut records = Cursor(bytes);
    let mut messages = Vec::new();
    loop {
        let kind = records.u8()?;
        if kind != 22 {
            return Err(format!("record type {kind}, not handshake"));
        }
        records.take(2)?;
        let fragment = records.vec(2)?;
        if fragment.0.is_empty() {
            return Err("empty handshake record".into());
        }
        messages.extend_from_slice(fragment.0);
        let mut m = Cursor(&messages);
        if m.u8().is_ok_and(|t| t != 1) {
            return Err("first handshake message is not a ClientHello".into());
        }
        if let Ok(body) = m.vec(3) {
            return Ok(body.0.to_vec());
        }
    }
}

/// The first `host_name` of the ClientHello's `server_name` extension, if it has one.
fn server_name(hello: Vec<u8>) -> Result<Option<String>, String> {
    let mut h = Cursor(&hello);
    h.take(2 + 32)?; // legacy_version, random
    if h.vec(1)?.0.len() > 32 {
        return Err("session id over 32 bytes".into());
    }
    let suites = h.vec(2)?;
    if suites.0.is_empty() || suites.0.len() % 2 != 0 {
        return Err("bad cipher_suites".into());
    }
    if h.vec(1)?.0.is_empty() {
        return Err("no compression methods".into());
    }
    let mut extensions = h.vec(2)?;
    if !h.0.is_empty() {
        return Err("bytes after the extensions".into());
    }
    let mut name = None;
    let mut seen = Vec::new();
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let mut body = extensions.vec(2)?;
        if seen.contains(&kind) {
            return Err(format!("extension {kind} twice"));
        }
        seen.push(kind);
        if kind != 0 {
            continue;
        }
        let mut list = body.vec(2)?;
        if !body.0.is_empty() || list.0.is_empty() {
            return Err("bad server_name extension".into());
        }
        while !list.0.is_empty() {
            // RFC 6066: only host_name (0) is defined; the entries of another type have an unknown encoding, so
            // nothing after one can be read.
            if list.u8()? != 0 {
                break;
            }
            let host = list.vec(2)?;
            if name.is_some() {
                return Err("two host_name entries".into());
            }
            name = Some(String::from_utf8(host.0.to_vec()).map_err(|e| e.to_string())?);
        }
    }
    Ok(name)
}
