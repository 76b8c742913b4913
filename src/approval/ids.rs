//! Ids of approvals and grants.

/// `prefix` and 16 random hex digits, not `taken`. Should the system generator fail, `seq` stands in (still unique).
pub(super) fn fresh_id(prefix: &str, seq: u64, taken: impl Fn(&str) -> bool) -> String {
    use ring::rand::SecureRandom;
    let rng = ring::rand::SystemRandom::new();
    loop {
        let mut bytes = [0u8; 8];
        let id = match rng.fill(&mut bytes) {
            Ok(()) => format!("{prefix}{}", hex::encode(bytes)),
            Err(_) => format!("{prefix}{seq:016x}"),
        };
        if !taken(&id) {
            return id;
        }
    }
}
