#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn token_debug_hides_the_value() {
    let token = Token {
        value: SecretString::from("tok-very-secret"),
        expires_at: None,
    };
    let shown = format!("{token:?}");
    assert!(!shown.contains("tok-very-secret"), "{shown}");
    assert!(shown.contains("[redacted]"));
}

#[test]
fn sanitize_removes_the_secret_and_control_characters() {
    // SECURITY test: an issuer echoing the client secret, or injecting a fake log line.
    let out = sanitize("bad secret hunter2\r\nlevel=INFO forged", Some("hunter2"));
    assert!(!out.contains("hunter2"), "{out}");
    assert!(!out.contains('\n') && !out.contains('\r'), "{out}");
    let long = sanitize(&"x".repeat(1000), None);
    assert!(long.len() < 250, "{}", long.len());
}

#[test]
fn cleartext_urls_only_to_loopback() {
    // SECURITY test: no client secret or JWT over cleartext HTTP to a remote host.
    let ok = [
        "https://auth.example/token",
        "http://127.0.0.1:8080/token",
        "http://localhost/t",
        "http://[::1]:1/t",
    ];
    for url in ok {
        check_url(&url.parse().unwrap(), "x").unwrap();
    }
    for url in [
        "http://auth.example/token",
        "http://10.0.0.1/token",
        "ftp://auth.example/",
        "/token",
    ] {
        let err = check_url(&url.parse().unwrap(), "x").unwrap_err();
        assert!(matches!(err, IssuerError::Config(_)), "{url}: {err}");
        assert!(!err.is_unavailable());
    }
}

#[test]
fn token_values_that_would_split_headers_are_refused() {
    // SECURITY test: header injection through an issued token.
    assert!(check_token_value("i", "abc.DEF-123_~+/=").is_ok());
    for bad in ["", "abc\r\nx-evil: 1", "a b", "tok\0", "tök"] {
        assert!(check_token_value("i", bad).is_err(), "{bad:?}");
    }
}

#[test]
fn json_errors_do_not_quote_the_body() {
    // SECURITY test: serde_json would quote the unexpected string, which may be the token.
    #[derive(serde::Deserialize)]
    struct T {
        _n: u64,
    }
    let e = serde_json::from_str::<T>(r#"{"_n": "tok-very-secret"}"#).err().unwrap();
    assert!(
        e.to_string().contains("tok-very-secret"),
        "precondition: serde quotes values"
    );
    let err = json_error("issuer", &e).to_string();
    assert!(!err.contains("tok-very-secret"), "{err}");
}

#[test]
fn refused_error_text_shows_code_and_description() {
    let err = IssuerError::Refused {
        issuer: "http://127.0.0.1/token".into(),
        status: 401,
        code: Some("invalid_client".into()),
        description: Some("client authentication failed".into()),
    };
    assert_eq!(
        err.to_string(),
        "token issuer http://127.0.0.1/token refused (HTTP 401): invalid_client: client authentication failed"
    );
    assert!(!err.is_unavailable());
}
