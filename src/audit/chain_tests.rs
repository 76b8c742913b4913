#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use sha2::{Digest, Sha256};

#[test]
fn lines_carry_their_place_and_the_hash_of_the_line_before() {
    let mut chain = Chain::after(None);
    let mut a = b"{\"x\":1}\n".to_vec();
    chain.link(&mut a);
    assert_eq!(
        a,
        format!("{{\"x\":1,\"seq\":0,\"prev\":\"{}\"}}\n", hex::encode(GENESIS)).into_bytes()
    );
    let mut b = b"{}\n".to_vec();
    chain.link(&mut b);
    let hash_a = hex::encode(Sha256::digest(&a[..a.len() - 1]));
    assert_eq!(b, format!("{{\"seq\":1,\"prev\":\"{hash_a}\"}}\n").into_bytes());
    // The end of a file gives the chain to continue.
    let tail = tail_of(&[a.clone(), b.clone()].concat()).unwrap();
    assert_eq!(tail.seq, 1);
    assert_eq!(tail.hash, <[u8; 32]>::from(Sha256::digest(&b[..b.len() - 1])));
    let mut next = Chain::after(Some(tail));
    let start = next.start_line("t", true);
    let v: serde_json::Value = serde_json::from_slice(&start).unwrap();
    assert_eq!((v["seq"].as_u64(), v["continues"].as_bool()), (Some(2), Some(true)));
    // A cut line at the end is not the tail; a file without chained lines has none.
    assert_eq!(tail_of(&[a.clone(), b"{\"seq\":9".to_vec()].concat()).unwrap().seq, 0);
    assert_eq!(tail_of(b"{\"old\":\"format\"}\n"), None);
}

#[test]
fn no_checkpoint_goes_unsigned_while_its_key_is_still_to_come() {
    let mut chain = Chain::after(None).awaiting_key(true);
    let mut a = b"{}\n".to_vec();
    chain.link(&mut a);
    // Due, and even final: nothing rather than a checkpoint `verify` would call forged.
    assert!(chain.checkpoint_line("t", Seal::Due).is_none());
    assert!(chain.checkpoint_line("t", Seal::Final).is_none());
    chain.sign_with(CheckpointSigner::from_secret("s").unwrap());
    let c: serde_json::Value = serde_json::from_slice(&chain.checkpoint_line("t", Seal::Due).unwrap()).unwrap();
    // The first signed checkpoint vouches for the lines written before the key came.
    assert_eq!(c["records"].as_u64(), Some(1));
    assert_eq!(c["sig"].as_str().map(str::len), Some(128));
}

#[test]
fn checkpoints_are_written_when_something_happened_or_at_the_end() {
    let mut chain = Chain::after(None);
    assert!(chain.checkpoint_line("t", Seal::Due).is_none());
    let mut a = b"{}\n".to_vec();
    chain.link(&mut a);
    let c: serde_json::Value = serde_json::from_slice(&chain.checkpoint_line("t", Seal::Due).unwrap()).unwrap();
    assert_eq!((c["records"].as_u64(), c["sig"].is_null()), (Some(1), true));
    assert!(chain.checkpoint_line("t", Seal::Due).is_none());
    chain.sign_with(CheckpointSigner::from_secret("s").unwrap());
    let c: serde_json::Value = serde_json::from_slice(&chain.checkpoint_line("t", Seal::Final).unwrap()).unwrap();
    assert_eq!(c["final"], true);
    assert_eq!(c["sig"].as_str().map(str::len), Some(128));
    // The same secret gives the same key.
    assert_eq!(
        CheckpointSigner::from_secret("s").unwrap().public_hex(),
        CheckpointSigner::from_secret("s").unwrap().public_hex()
    );
}

#[test]
fn a_run_says_whether_it_signs_and_a_turn_to_a_new_file_is_always_marked() {
    let start =
        |chain: &mut Chain| -> serde_json::Value { serde_json::from_slice(&chain.start_line("t", true)).unwrap() };
    assert_eq!(start(&mut Chain::after(None))["signing"], false);
    // A key configured but not read yet: the run signs.
    assert_eq!(start(&mut Chain::after(None).awaiting_key(true))["signing"], true);
    let mut chain = Chain::after(None);
    chain.sign_with(CheckpointSigner::from_secret("s").unwrap());
    assert_eq!(start(&mut chain)["signing"], true);
    // Nothing since the last checkpoint: a turn to a new file still closes the old one, marked.
    let _ = chain.checkpoint_line("t", Seal::Due).unwrap();
    assert!(chain.checkpoint_line("t", Seal::Due).is_none());
    let c: serde_json::Value = serde_json::from_slice(&chain.checkpoint_line("t", Seal::Turn).unwrap()).unwrap();
    assert_eq!(
        (c["rotated"].as_bool(), c["final"].as_bool(), c["records"].as_u64()),
        (Some(true), Some(false), Some(0))
    );
    let c: serde_json::Value = serde_json::from_slice(&chain.checkpoint_line("t", Seal::Final).unwrap()).unwrap();
    assert_eq!(
        (c["rotated"].as_bool(), c["final"].as_bool()),
        (Some(false), Some(true))
    );
}
