#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

const SECRET: &str = "webhook-secret";

#[test]
fn verify_refuses_malformed_signatures() {
    let good = sign(SECRET.as_bytes(), "1700000000", b"{}");
    assert!(verify(SECRET.as_bytes(), "1700000000", b"{}", &good));
    for bad in [
        "",
        "sha256=",
        "sha256=zz",
        "sha1=00",
        &good[7..],
        &good[..good.len() - 2],
        &good.to_uppercase(),
    ] {
        assert!(!verify(SECRET.as_bytes(), "1700000000", b"{}", bad), "{bad:?}");
    }
}

#[test]
fn logged_urls_hide_credentials_and_queries() {
    let url: Uri = "https://user:pass@hooks.example.com:8443/approvals?token=secret"
        .parse()
        .unwrap();
    assert_eq!(shown(&url), "https://hooks.example.com:8443/approvals");
}
