//! Credential sources through the `cordon` binary against real servers: an OpenBao dev server and the
//! oidc-provider OAuth2 server (both installed by .ci/run), and a local issuer for expiry.

use crate::rigs::client::*;
use crate::rigs::issuers::{BAO_SECRET, oidc, openbao, short_lived_issuer};
use crate::rigs::ports::*;
use crate::rigs::process::Signal;
use crate::rigs::process::curl;
use crate::rigs::tls::*;
use crate::rigs::wait::{TimedChild, Within};
use std::process::Command;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn openbao_and_oauth2_tokens_are_injected_and_expired_tokens_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let (_bao, bao_port) = openbao(dir.path()).await;
    let (oidc_proc, oidc_port) = oidc(dir.path()).await;
    let (issuer_port, issuer) = short_lived_issuer().await;

    let upstream_ca = test_ca("upstream test CA");
    let up = https_upstream(
        "127.0.0.2",
        upstream_ca.server_config(&["allowed.test", "api.allowed.test", "short.test"]),
    )
    .await;
    let roots = dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let port = free_port();
    let u = up.addr.port();
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{port} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ allowed.test: 127.0.0.2, api.allowed.test: 127.0.0.2, short.test: 127.0.0.2 }}
ca: {{ dir: {cas} }}
upstream: {{ extra_roots: [{roots}] }}
vault:
  file: {{ path: {vault} }}
  openbao: {{ addr: "http://127.0.0.1:{bao_port}", token_env: BAO_TOKEN }}
credentials:
  baoed:
    source: {{ openbao: "cordon/test#api_key" }}
    bind: {{ hosts: [allowed.test], ports: [{u}] }}
    inject: {{ header: X-Bao, value: "{{secret}}" }}
  oauthed:
    source:
      oauth2:
        token_url: "http://127.0.0.1:{oidc_port}/token"
        client_id: sandbox-client
        client_secret: {{ env: OIDC_SECRET }}
        scope: "api:read"
    bind: {{ hosts: [api.allowed.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
  short:
    source:
      oauth2: {{ token_url: "http://127.0.0.1:{issuer_port}/token", client_id: c, client_secret: {{ env: OIDC_SECRET }} }}
    bind: {{ hosts: [short.test], ports: [{u}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
sandboxes:
  - {{ id: sb1, user: alice, token_sha256: {h1}, policy: web }}
policies:
  web:
    credentials: [baoed, oauthed, short]
    allow:
      - {{ host: allowed.test, ports: [{u}] }}
      - {{ host: api.allowed.test, ports: [{u}] }}
      - {{ host: short.test, ports: [{u}] }}
"#,
        cas = dir.path().join("cas").display(),
        roots = roots.display(),
        vault = dir.path().join("vault/cordon.vault").display(),
        h1 = hash("tok1"),
    );
    let config = dir.path().join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    let env = [("BAO_TOKEN", "root"), ("OIDC_SECRET", "sandbox-secret")];
    let mut cordon = Some(crate::rigs::process::spawn_cordon(&config, port, &env).await);
    let ca = dir.path().join("sb1.pem");
    let out = Command::new(env!("CARGO_BIN_EXE_cordon"))
        .args(["ca", "export", "--sandbox", "sb1", "--config"])
        .arg(&config)
        .timed_output()
        .unwrap();
    std::fs::write(&ca, &out.stdout).unwrap();
    let get = |url: String, extra: &[&str]| {
        let o = curl()
            .args([
                "-x",
                &format!("http://sb1:tok1@127.0.0.1:{port}"),
                "-w",
                " %{http_code}",
            ])
            .arg("--cacert")
            .arg(&ca)
            .args(extra)
            .arg(url)
            .timed_output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };

    // OpenBao secret as a header.
    assert_eq!(
        get(format!("https://allowed.test:{u}/bao"), &[]),
        "hello from upstream\n 200"
    );
    assert_eq!(up.seen().last().unwrap().header("x-bao"), Some(BAO_SECRET));

    // An OAuth2 token from the real authorization server, cached between requests.
    assert!(get(format!("https://api.allowed.test:{u}/one"), &[]).ends_with(" 200"));
    assert!(get(format!("https://api.allowed.test:{u}/two"), &[]).ends_with(" 200"));
    let seen = up.seen();
    let tokens: Vec<&str> = seen.iter().filter_map(|s| s.header("authorization")).collect();
    assert_eq!(tokens.len(), 2);
    assert!(tokens[0].starts_with("Bearer ") && tokens[0].len() > 20 && !tokens[0].contains("sandbox-secret"));
    assert_eq!(tokens[0], tokens[1], "cached, not fetched per request");
    let issued = tokens[0].trim_start_matches("Bearer ").to_string();

    // A redirect is passed back to the client, never followed by cordon (a follow-up request to another host
    // is judged on its own binding, like the unbound-host cases in inject.rs).
    let out = get(format!("https://api.allowed.test:{u}/redirect"), &[]);
    assert!(out.ends_with(" 307"), "{out}");
    assert!(up.seen().last().unwrap().header("authorization").is_some());

    // The issuer going away does not matter while the token is valid.
    drop(oidc_proc);
    assert!(get(format!("https://api.allowed.test:{u}/three"), &[]).ends_with(" 200"));

    // Short-lived tokens: used while valid; once expired with the issuer down, 503, never the stale token.
    assert!(get(format!("https://short.test:{u}/a"), &[]).ends_with(" 200"));
    issuer.abort();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let out = get(format!("https://short.test:{u}/b"), &[]);
    assert!(out.ends_with(" 503"), "{out}");
    assert!(
        up.seen().iter().all(|s| s.uri != "/b"),
        "nothing was sent without its credential"
    );

    let child = cordon.take().unwrap();
    crate::rigs::process::signal(child.id(), Signal::SIGTERM).unwrap();
    let out = child.timed_wait_with_output().unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(logs.contains("credential_unavailable"), "{logs}");
    for secret in [BAO_SECRET, "sandbox-secret", issued.as_str()] {
        assert!(!logs.contains(secret), "{secret} leaked into cordon's output");
    }
}
