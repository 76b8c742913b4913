//! Tamper evidence for the audit log: one hash chain per writer, and signed checkpoints.
//!
//! Every line the writer emits carries `seq` (one more than the line before) and `prev` (the SHA-256, in hex, of
//! the line before, exactly as written, without its newline). A run starts with an `audit_start` line linked to
//! the last line already in the file (so the chain goes on across restarts); at intervals, and when cordon
//! stops, a `checkpoint` line is written and signed with Ed25519: its signature covers its `seq` and `prev`, so
//! it vouches for every line before it. `cordon audit verify` checks both (`verify.rs`).
//!
//! Two marks let `verify` tell what the files alone can tell: each `audit_start` says whether its run signs
//! (`signing`), so a log that had unsigned runs before a key was configured shows where signing started; and
//! the checkpoint that closes a file before cordon turns to a new one says so (`rotated`), so a rotated file
//! that is the last one left shows that the file after it is gone.

use ring::digest::{Context, SHA256, digest};
use ring::signature::{Ed25519KeyPair, KeyPair};

/// The hash a chain starts from when there is nothing before it.
pub(crate) const GENESIS: [u8; 32] = [0; 32];

/// Signs checkpoints: an Ed25519 key derived from a secret of any source cordon reads.
pub(crate) struct CheckpointSigner {
    key: Ed25519KeyPair,
}

impl CheckpointSigner {
    /// The key for `secret` (any text; the same secret gives the same key on every replica and restart).
    pub(crate) fn from_secret(secret: &str) -> Result<CheckpointSigner, String> {
        let mut seed = Context::new(&SHA256);
        seed.update(b"cordon audit checkpoint key\0");
        seed.update(secret.as_bytes());
        let key = Ed25519KeyPair::from_seed_unchecked(seed.finish().as_ref())
            .map_err(|e| format!("cannot make the audit signing key: {e}"))?;
        Ok(CheckpointSigner { key })
    }

    /// The public key, in hex, as `cordon audit public-key` prints it and `verify --public-key` takes it.
    pub(crate) fn public_hex(&self) -> String {
        hex::encode(self.key.public_key().as_ref())
    }
}

/// Why a checkpoint is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seal {
    /// `audit.checkpoint_interval` passed with lines written (skipped when there were none).
    Due,
    /// The file is closed and the chain goes on in a new one (rotation, or a reopen after an external logrotate):
    /// always written, marked `rotated`.
    Turn,
    /// cordon stops: always written, marked `final`.
    Final,
}

/// The chain of one writer.
pub(crate) struct Chain {
    /// The `seq` of the next line.
    next: u64,
    /// The hash of the last line written.
    prev: [u8; 32],
    /// Lines since the last checkpoint (the start line included).
    since_checkpoint: u64,
    signer: Option<CheckpointSigner>,
    /// A signing key is configured and has not arrived yet (it is read once the secret sources are up).
    awaiting_key: bool,
}

/// What the end of an existing audit file says about the chain to continue: the last line's `seq` and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tail {
    pub(crate) seq: u64,
    pub(crate) hash: [u8; 32],
}

impl Chain {
    /// A chain continuing `tail` (none: a new chain from seq 0).
    pub(crate) fn after(tail: Option<Tail>) -> Chain {
        Chain {
            next: tail.map_or(0, |t| t.seq + 1),
            prev: tail.map_or(GENESIS, |t| t.hash),
            since_checkpoint: 0,
            signer: None,
            awaiting_key: false,
        }
    }

    /// A chain whose checkpoints are to be signed with a key that arrives later ([`Chain::sign_with`]): until
    /// it does, no checkpoint is written.
    pub(crate) fn awaiting_key(mut self, awaiting: bool) -> Chain {
        self.awaiting_key = awaiting;
        self
    }

    /// Sign checkpoints with `signer` from now on.
    pub(crate) fn sign_with(&mut self, signer: CheckpointSigner) {
        self.signer = Some(signer);
        self.awaiting_key = false;
    }

    /// Add `seq` and `prev` to one finished JSON line (`{...}\n`) and advance the chain.
    pub(crate) fn link(&mut self, line: &mut Vec<u8>) {
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'}') {
            line.pop();
            let empty = line.last() == Some(&b'{');
            let sep = if empty { "" } else { "," };
            line.extend_from_slice(
                format!("{sep}\"seq\":{},\"prev\":\"{}\"}}", self.next, hex::encode(self.prev)).as_bytes(),
            );
        }
        self.prev = sha256(line);
        self.next += 1;
        self.since_checkpoint += 1;
        line.push(b'\n');
    }

    /// The line a run (or a new file) starts with: when, the chain it continues, and whether this run signs its
    /// checkpoints (`signing`: a key is configured, whether or not it has been read yet). The first start that
    /// says `signing: true` marks where signing started on a log that had unsigned runs before.
    pub(crate) fn start_line(&mut self, time: &str, continued: bool) -> Vec<u8> {
        let mut line = serde_json::to_vec(&serde_json::json!({
            "kind": "audit_start",
            "time": time,
            "continues": continued,
            "version": env!("CARGO_PKG_VERSION"),
            "signing": self.signer.is_some() || self.awaiting_key,
        }))
        .unwrap_or_default();
        self.link(&mut line);
        line
    }

    /// The line that says `dropped` records were not kept while the output failed (cordon holds what it may,
    /// then drops the records of the requests it refuses meanwhile), written where they would have been.
    pub(crate) fn gap_line(&mut self, time: &str, dropped: u64) -> Vec<u8> {
        let mut line = serde_json::to_vec(&serde_json::json!({
            "kind": "audit_gap",
            "time": time,
            "dropped": dropped,
        }))
        .unwrap_or_default();
        self.link(&mut line);
        line
    }

    /// A checkpoint line vouching for every line so far (marked `final` or `rotated` by `why`), or `None` when
    /// it is only due and nothing was written since the last one.
    pub(crate) fn checkpoint_line(&mut self, time: &str, why: Seal) -> Option<Vec<u8>> {
        if self.since_checkpoint == 0 && why == Seal::Due {
            return None;
        }
        // SECURITY: with a signing key configured, an unsigned checkpoint is what a forger would write, and
        // `verify` says so; one that falls due before the key is read is left out instead (the next covers
        // these lines too), and a run that ends before its key arrived ends unsealed.
        if self.awaiting_key {
            return None;
        }
        let body = serde_json::json!({
            "kind": "checkpoint",
            "time": time,
            "records": self.since_checkpoint,
            "final": why == Seal::Final,
            "rotated": why == Seal::Turn,
            "key": self.signer.as_ref().map(CheckpointSigner::public_hex),
            "seq": self.next,
            "prev": hex::encode(self.prev),
        });
        let mut line = serde_json::to_vec(&body).unwrap_or_default();
        // SECURITY: the signature covers the checkpoint's whole body (its `seq` and the hash of the line before
        // it among them), so it vouches for the chain up to here; it is appended last, outside what it signs.
        if let (Some(signer), Some(b'}')) = (&self.signer, line.last()) {
            let sig = signer.key.sign(&line);
            line.pop();
            line.extend_from_slice(format!(",\"sig\":\"{}\"}}", hex::encode(sig.as_ref())).as_bytes());
        }
        self.prev = sha256(&line);
        self.next += 1;
        self.since_checkpoint = 0;
        line.push(b'\n');
        Some(line)
    }
}

/// The SHA-256 of one line. ring's, not the `sha2` crate's: on CPUs without the SHA extensions its assembly
/// (AVX2/SSSE3) hashes a 600-byte audit line in 0.6x the time, and the audit thread hashes every line.
pub(crate) fn sha256(line: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest(&SHA256, line).as_ref());
    out
}

/// The chain's state at the end of `text` (the last whole line with a `seq`), if there is one.
pub(crate) fn tail_of(text: &[u8]) -> Option<Tail> {
    let whole = match text.iter().rposition(|b| *b == b'\n') {
        Some(end) => &text[..end],
        None => return None,
    };
    let start = whole.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let line = &whole[start..];
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    Some(Tail {
        seq: value.get("seq")?.as_u64()?,
        hash: sha256(line),
    })
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
