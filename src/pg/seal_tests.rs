#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn sealer(k: &str) -> Sealer {
    Sealer::new(&SecretString::from(k.to_owned())).unwrap()
}

#[test]
fn round_trip_and_refusals() {
    let s = sealer("0123456789abcdef0123456789abcdef");
    let sealed = s.seal("ca:sb-1", b"secret key").unwrap();
    assert_eq!(s.open("ca:sb-1", &sealed).unwrap(), b"secret key");
    assert!(!sealed.windows(10).any(|w| w == b"secret key"));
    // Another row, another key, a flipped bit: all refused.
    assert!(s.open("ca:sb-2", &sealed).is_err());
    assert!(
        sealer("fedcba9876543210fedcba9876543210")
            .open("ca:sb-1", &sealed)
            .is_err()
    );
    let mut bad = sealed.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert!(s.open("ca:sb-1", &bad).is_err());
    assert!(s.open("ca:sb-1", &[]).is_err());
    assert!(Sealer::new(&SecretString::from("short".to_owned())).is_err());
}
