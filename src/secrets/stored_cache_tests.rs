use secrecy::ExposeSecret;

use super::*;

fn value(c: Cached) -> Option<(bool, String)> {
    match c {
        Cached::Fresh(v) => Some((false, v.expose_secret().to_string())),
        Cached::RefreshAhead(v) => Some((true, v.expose_secret().to_string())),
        Cached::Miss => None,
    }
}

#[test]
fn fresh_then_refreshed_ahead_once_then_gone_at_the_ttl() {
    let cache = StoredCache::new(Duration::from_secs(60));
    let t0 = Instant::now();
    assert!(value(cache.lookup("k", t0)).is_none());
    cache.put("k", SecretString::from("v1"), t0);
    assert_eq!(
        value(cache.lookup("k", t0 + Duration::from_secs(29))),
        Some((false, "v1".into()))
    );
    // Past half the TTL: one caller refreshes, the others keep using the value.
    assert_eq!(
        value(cache.lookup("k", t0 + Duration::from_secs(31))),
        Some((true, "v1".into()))
    );
    assert_eq!(
        value(cache.lookup("k", t0 + Duration::from_secs(32))),
        Some((false, "v1".into()))
    );
    // The refresh failed: the next caller tries again; the value is never used at or past the TTL.
    cache.refresh_failed("k");
    assert_eq!(
        value(cache.lookup("k", t0 + Duration::from_secs(40))),
        Some((true, "v1".into()))
    );
    assert!(value(cache.lookup("k", t0 + Duration::from_secs(60))).is_none());
    // A successful read starts over.
    cache.put("k", SecretString::from("v2"), t0 + Duration::from_secs(61));
    assert_eq!(
        value(cache.lookup("k", t0 + Duration::from_secs(62))),
        Some((false, "v2".into()))
    );
}
