//! Injected GitHub and OAuth2 credentials do not mint credentials the sandbox keeps: through the `cordon`
//! binary, with curl (HTTP/1.1 and h2) and python requests as the sandbox's clients, against a fake GitHub API
//! and a fake token endpoint over real TLS that record what reached them. Every minting call, however it is
//! spelt, is refused 403 `credential_minting` and never reaches the server; a token request written in a way
//! servers read apart is refused 400 `token_request_ambiguous`, even through a credential that may mint; named in
//! `allow_minting`, it goes through and the tokens of its answer come back masked; calls that mint nothing still
//! work.

use crate::rigs::minting::{MINTED, rig};

/// Every GitHub minting call of cordon's table, with concrete owners, repositories and ids.
const GITHUB_CALLS: &[(&str, &str)] = &[
    ("POST", "/app/installations/42/access_tokens"),
    ("POST", "/applications/Iv1.abc/token"),
    ("PATCH", "/applications/Iv1.abc/token"),
    ("POST", "/applications/Iv1.abc/token/scoped"),
    ("POST", "/login/oauth/access_token"),
    ("POST", "/login/device/code"),
    ("POST", "/app-manifests/code123/conversions"),
    ("POST", "/authorizations"),
    ("PUT", "/authorizations/clients/Iv1.abc"),
    ("PUT", "/authorizations/clients/Iv1.abc/fingerprint"),
    ("POST", "/admin/users/octocat/authorizations"),
    ("POST", "/repos/octo-org/hello/keys"),
    ("POST", "/user/keys"),
    ("POST", "/user/gpg_keys"),
    ("POST", "/user/ssh_signing_keys"),
    ("POST", "/repos/octo-org/hello/actions/runners/registration-token"),
    ("POST", "/repos/octo-org/hello/actions/runners/remove-token"),
    ("POST", "/repos/octo-org/hello/actions/runners/generate-jitconfig"),
    ("POST", "/orgs/octo-org/actions/runners/registration-token"),
    ("POST", "/orgs/octo-org/actions/runners/remove-token"),
    ("POST", "/orgs/octo-org/actions/runners/generate-jitconfig"),
    ("POST", "/enterprises/octo/actions/runners/registration-token"),
    ("POST", "/enterprises/octo/actions/runners/remove-token"),
    ("POST", "/enterprises/octo/actions/runners/generate-jitconfig"),
    ("POST", "/user/codespaces"),
    ("POST", "/repos/octo-org/hello/codespaces"),
    ("POST", "/repos/octo-org/hello/pulls/7/codespaces"),
    ("POST", "/orgs/octo-org/personal-access-token-requests"),
    ("POST", "/orgs/octo-org/personal-access-token-requests/9"),
];

/// The spellings of `path` a server may route as `path`.
fn spellings(path: &str) -> Vec<String> {
    let encoded = path
        .replacen("/repos/octo-org", "/repos/%6fcto-org", 1)
        .replace("keys", "k%65ys");
    vec![
        path.to_string(),
        path.to_ascii_uppercase(),
        encoded,
        format!("{path}/"),
        path.replacen('/', "//", 1),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn github_minting_calls_are_refused_however_they_are_spelt() {
    let r = rig().await;
    let mut refusals = 0;
    for (method, path) in GITHUB_CALLS {
        for spelt in spellings(path) {
            for (host, prefix) in [("api.github.com", ""), ("ghe.test", "/api/v3")] {
                let full = format!("{prefix}{spelt}");
                for (m, h2) in [(method.to_string(), false), (method.to_ascii_lowercase(), true)] {
                    let got = r.curl("plain", (&m, host, &full), "{}", "application/json", h2);
                    assert_eq!(
                        (got.status, got.reason.as_str()),
                        (403, "credential_minting"),
                        "{m} {host}{full}: {got:?}"
                    );
                    refusals += 1;
                }
            }
        }
        // Dot segments are refused before any credential is looked at.
        let got = r.curl(
            "plain",
            (method, "api.github.com", &format!("/x/..{path}")),
            "{}",
            "application/json",
            false,
        );
        assert_eq!((got.status, got.reason.as_str()), (400, "dot_segment"), "{got:?}");
        let got = r.python("plain", method, "api.github.com", path, r#"{"title": "x"}"#, true);
        assert_eq!(
            (got.status, got.reason.as_str()),
            (403, "credential_minting"),
            "python {method} {path}: {got:?}"
        );
        refusals += 1;
    }
    assert!(
        r.reached().is_empty(),
        "a refused call reached GitHub: {:?}",
        r.reached()
    );
    // What mints nothing still works, with the credential applied.
    for (method, path) in [
        ("GET", "/user"),
        ("GET", "/repos/octo-org/hello/keys"),
        ("POST", "/repos/octo-org/hello/issues"),
    ] {
        let got = r.curl(
            "plain",
            (method, "api.github.com", path),
            "{\"title\": \"t\"}",
            "application/json",
            false,
        );
        assert_eq!(got.status, 200, "{method} {path}: {got:?}");
    }
    assert_eq!(r.reached().len(), 3);
    // Each refusal is audited with its reason, the call and the credential.
    let audit = r.audit_once("each minting refusal audited", |a| {
        a.lines().filter(|l| l.contains("credential_minting")).count() >= refusals
    });
    let minting: Vec<&str> = audit.lines().filter(|l| l.contains("credential_minting")).collect();
    assert!(minting.len() >= refusals, "{} audited of {refusals}", minting.len());
    for needle in [
        "github:deploy_keys through credential gh",
        "github:runner_tokens through credential ghe",
    ] {
        assert!(minting.iter().any(|l| l.contains(needle)), "{needle}");
    }
}

/// Every grant of cordon's table, as a client sends it.
const GRANTS: &[&str] = &[
    "client_credentials",
    "refresh_token",
    "password",
    "authorization_code",
    "urn:ietf:params:oauth:grant-type:token-exchange",
    "urn:ietf:params:oauth:grant-type:jwt-bearer",
    "urn:ietf:params:oauth:grant-type:saml2-bearer",
    "urn:ietf:params:oauth:grant-type:device_code",
    "urn:openid:params:grant-type:ciba",
    "urn:example:custom",
];

#[tokio::test(flavor = "multi_thread")]
async fn oauth2_token_requests_through_a_bound_host_are_refused_in_every_form() {
    let r = rig().await;
    let form = "application/x-www-form-urlencoded";
    for grant in GRANTS {
        let enc: String = form_urlencoded::byte_serialize(grant.as_bytes()).collect();
        let pct: String = grant.bytes().map(|b| format!("%{b:02X}")).collect();
        // Written the one way every server reads: refused as the grant it is; written any way servers read apart
        // (a name spelt otherwise, twice, a multipart body, `;`, a byte order mark, a nested grant): refused
        // as unreadable, whatever the credential allows. A text/plain or untyped body is read as a form too.
        let minting = (403, "credential_minting");
        let ambiguous = (400, "token_request_ambiguous");
        for (body, media, want) in [
            (format!("grant_type={enc}&scope=all"), form, minting),
            (format!("scope=all&grant_type={pct}"), form, minting),
            (format!(r#"{{"grant_type": "{grant}"}}"#), "application/json", minting),
            (format!("scope=all&%67rant_type={pct}"), form, ambiguous),
            (format!("GRANT_TYPE={enc}"), form, ambiguous),
            (format!("grant_type=none&grant_type={enc}"), form, ambiguous),
            (format!("a=1;grant_type={enc}"), form, ambiguous),
            (format!("grant_type={enc}"), "text/plain", minting),
            (format!("a=1;grant_type={enc}"), "text/plain", ambiguous),
            (
                format!("--b\r\nContent-Disposition: form-data; name=\"grant_type\"\r\n\r\n{grant}\r\n--b--\r\n"),
                "multipart/form-data; boundary=b",
                ambiguous,
            ),
            (
                format!("grant_type={enc}"),
                "application/x-www-form-urlencoded; charset=latin1",
                ambiguous,
            ),
            (format!("\u{feff}grant_type={enc}"), form, ambiguous),
            (
                format!("\u{feff}{{\"grant_type\": \"{grant}\"}}"),
                "application/json",
                ambiguous,
            ),
            (
                format!(r#"{{"grant_type": ["{grant}"]}}"#),
                "application/json",
                ambiguous,
            ),
            (
                format!(r#"{{"a": {{"grant_type": "{grant}"}}}}"#),
                "application/json",
                ambiguous,
            ),
            (
                format!(r#"{{"scope": "a", "Grant_Type": "{grant}", "grant_type": "x"}}"#),
                "application/json",
                ambiguous,
            ),
        ] {
            for (host, path) in [("idp.test", "/oauth/token"), ("api.github.com", "/anything")] {
                for h2 in [false, true] {
                    let got = r.curl("plain", ("POST", host, path), &body, media, h2);
                    assert_eq!(
                        (got.status, got.reason.as_str()),
                        want,
                        "{host} {body} {media}: {got:?}"
                    );
                }
            }
        }
        let got = r.curl(
            "plain",
            ("POST", "idp.test", &format!("/token?grant_type={enc}")),
            "",
            form,
            false,
        );
        assert_eq!(got.reason, "credential_minting", "{grant} in the query: {got:?}");
        let got = r.python(
            "plain",
            "POST",
            "idp.test",
            "/token",
            &format!("grant_type={enc}"),
            false,
        );
        assert_eq!(got.reason, "credential_minting", "python form {grant}: {got:?}");
        let got = r.python(
            "plain",
            "POST",
            "idp.test",
            "/token",
            &format!(r#"{{"grant_type": "{grant}"}}"#),
            true,
        );
        assert_eq!(got.reason, "credential_minting", "python json {grant}: {got:?}");
    }
    // Device authorization requests, known by their paths.
    for path in [
        "/oauth/device/code",
        "/device_authorization",
        "/oauth2/v2.0/devicecode",
        "/OAuth/Device/Code/",
    ] {
        let got = r.curl("plain", ("POST", "idp.test", path), "client_id=a&scope=b", form, false);
        assert_eq!(got.reason, "credential_minting", "{path}: {got:?}");
    }
    // A form sent chunked is read whole before it goes.
    let got = r.curl_chunked_form("plain");
    assert_eq!(got.reason, "credential_minting", "chunked: {got:?}");
    // A form cordon cannot read (compressed) is refused, not guessed at.
    let got = r.curl_gzip_form("plain");
    assert_eq!(
        (got.status, got.reason.as_str()),
        (400, "minting_body_unreadable"),
        "{got:?}"
    );
    // Larger than cordon reads: a form of known length is refused unread; a chunked form, JSON or untyped body
    // is read up to 1 MiB and refused 413 past it.
    let big = 1536 * 1024;
    for content_type in ["application/x-www-form-urlencoded", ""] {
        let got = r.curl_large("plain", content_type, big, false);
        assert_eq!(
            (got.status, got.reason.as_str()),
            (400, "minting_body_unreadable"),
            "{content_type:?}: {got:?}"
        );
    }
    for content_type in ["application/x-www-form-urlencoded", "application/json", ""] {
        let got = r.curl_large("plain", content_type, big, true);
        assert_eq!(got.status, 413, "{content_type:?} chunked: {got:?}");
    }
    assert!(
        r.reached().is_empty(),
        "a refused request reached the server: {:?}",
        r.reached()
    );
    // Requests with no grant still work.
    let got = r.curl(
        "plain",
        ("POST", "idp.test", "/v1/things"),
        "name=a&scope=b",
        form,
        false,
    );
    assert_eq!(got.status, 200, "{got:?}");
    let got = r.python(
        "plain",
        "POST",
        "idp.test",
        "/v1/things",
        r#"{"name": "grant_type"}"#,
        true,
    );
    assert_eq!(got.status, 200, "{got:?}");
    r.audit_once("the token exchange audited", |a| {
        a.contains("oauth2:token_exchange through credential idp")
    });
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_mint_goes_through_and_its_tokens_come_back_masked() {
    let r = rig().await;
    let (summary, errors) = crate::rigs::process::check_summary(&r.config, &[("GH_TOKEN", "x"), ("IDP_SECRET", "x")]);
    for needle in [
        "GitHub API, may mint github:app_tokens, github:deploy_keys, github:oauth_tokens",
        "may mint oauth2:token_exchange, oauth2:client_credentials",
    ] {
        assert!(summary.contains(needle), "{needle}: {summary}{errors}");
    }
    let form = "application/x-www-form-urlencoded";
    let mut answers = String::new();
    for (method, path) in [
        ("POST", "/app/installations/42/access_tokens"),
        ("POST", "/API/V3/repos/Octo-Org/hello/keys/"),
        ("PATCH", "/applications/Iv1.abc/token"),
    ] {
        for h2 in [false, true] {
            let got = r.curl("mint", (method, "api.github.com", path), "{}", "application/json", h2);
            assert_eq!(got.status, 200, "{method} {path}: {got:?}");
            let v: serde_json::Value = serde_json::from_str(&got.body).unwrap_or_else(|_| panic!("{got:?}"));
            for field in ["token", "access_token", "refresh_token", "id_token"] {
                assert_eq!(v[field], "masked-by-cordon", "{path} {field}: {got:?}");
            }
            assert_eq!(v["expires_at"], "2030-01-01T00:00:00Z", "the document keeps its shape");
            answers.push_str(&got.body);
        }
    }
    // GitHub's OAuth web flow answers a form: its token is masked too.
    let got = r.python(
        "mint",
        "POST",
        "api.github.com",
        "/login/oauth/access_token",
        "code=abc",
        false,
    );
    assert_eq!(
        got.body, "access_token=masked-by-cordon&scope=repo&token_type=bearer",
        "{got:?}"
    );
    answers.push_str(&got.body);
    for (body, json) in [
        (
            "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=x",
            false,
        ),
        (r#"{"grant_type": "client_credentials"}"#, true),
    ] {
        let got = r.python("mint", "POST", "idp.test", "/oauth/token", body, json);
        assert_eq!(got.status, 200, "{body}: {got:?}");
        assert!(got.body.contains(r#""access_token": "masked-by-cordon""#), "{got:?}");
        answers.push_str(&got.body);
    }
    assert!(
        !answers.contains(MINTED),
        "a minted token reached the sandbox: {answers}"
    );
    assert_eq!(r.reached().len(), 9, "{:?}", r.reached());
    // A grant the credential names, written in a way servers read apart, is refused all the same.
    for (body, media) in [
        ("a=1;grant_type=client_credentials", form),
        ("grant_type=client_credentials&grant_type=refresh_token", form),
        ("\u{feff}{\"grant_type\": \"client_credentials\"}", "application/json"),
        ("grant%5Ftype=refresh_token&grant_type=client_credentials", form),
    ] {
        let got = r.curl("mint", ("POST", "idp.test", "/oauth/token"), body, media, false);
        assert_eq!(
            (got.status, got.reason.as_str()),
            (400, "token_request_ambiguous"),
            "{body}: {got:?}"
        );
    }
    assert_eq!(r.reached().len(), 9, "{:?}", r.reached());
    // What the credential does not name is still refused.
    for (host, path, body) in [
        ("api.github.com", "/user/keys", "{}"),
        ("api.github.com", "/orgs/o/actions/runners/registration-token", "{}"),
        ("idp.test", "/oauth/token", "grant_type=refresh_token&refresh_token=r"),
    ] {
        let got = r.curl("mint", ("POST", host, path), body, form, false);
        assert_eq!(got.reason, "credential_minting", "{path}: {got:?}");
    }
    // A call that mints nothing is not masked: its answer is the server's.
    let got = r.curl("mint", ("GET", "api.github.com", "/user"), "", form, false);
    assert_eq!(got.body, r#"{"login": "octocat"}"#, "{got:?}");
}
