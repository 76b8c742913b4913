#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn documents_are_kept_per_endpoint() {
    let p = Persisted::default();
    p.at("api.test", 443, "/graphql").put("h", "{ a }".into());
    assert_eq!(p.at("api.test", 443, "/graphql").get("h").unwrap().as_ref(), "{ a }");
    assert!(p.at("api.test", 443, "/other").get("h").is_none());
    assert!(p.at("api.test", 8443, "/graphql").get("h").is_none());
    assert!(p.at("other.test", 443, "/graphql").get("h").is_none());
}
