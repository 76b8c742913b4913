//! One CA bundle for both kinds of destination: the sandbox's CA variables name a bundle of its CA and the roots
//! cordon trusts upstream, so curl, Python requests and Node verify an intercepted site (a leaf from the
//! sandbox's CA) and a site under a `tls: tunnel` rule (its own certificate, here from a private CA given to
//! cordon as `upstream.extra_roots`) with the same environment.

use std::sync::Arc;

use super::harness::{Case, Spec, site, text};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn intercepted_and_tunnelled_sites_both_verify_with_the_sandboxs_environment() {
    let ca = Case::ca();
    let ok = || {
        let handler: super::harness::Handler =
            Arc::new(|req: &crate::rigs::upstreams::Seen| -> super::harness::Reply {
                (200, vec![], format!("ok {}", req.uri).into_bytes())
            });
        handler
    };
    let seen = site(&ca, "seen.e2e.test", ok()).await;
    let real = site(&ca, "real.e2e.test", ok()).await;
    let spec = Spec {
        rules: format!(
            "      - host: seen.e2e.test\n        ports: [{}]\n      - host: real.e2e.test\n        ports: [{}]\n        tls: tunnel\n",
            seen.port(),
            real.port()
        ),
        credentials: String::new(),
        policy_credentials: vec![],
        secrets: vec![],
        names: vec!["seen.e2e.test", "real.e2e.test"],
        ..Spec::default()
    };
    let case = Case::start(ca, spec).await;
    let bundle = std::fs::read_to_string(&case.env["SSL_CERT_FILE"]).unwrap();
    assert!(
        bundle.matches("BEGIN CERTIFICATE").count() > 100,
        "not a bundle of roots"
    );
    let ca_vars = [
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
        "CARGO_HTTP_CAINFO",
        "CURL_CA_BUNDLE",
        "npm_config_cafile",
        "AWS_CA_BUNDLE",
    ];
    for var in ca_vars {
        assert_eq!(case.env[var], case.env["SSL_CERT_FILE"], "{var}");
    }
    for (site, path) in [(&seen, "/intercepted"), (&real, "/tunnelled")] {
        let out = case
            .client("curl")
            .args(["-sS", &site.url(path)])
            .timed_output()
            .unwrap();
        assert_eq!(text(&out), format!("ok {path}"), "curl {path}");
        let out = case
            .client("python3")
            .args([
                "-c",
                "import os, requests; print(requests.get(os.environ['URL'], timeout=10).text)",
            ])
            .env("URL", site.url(path))
            .timed_output()
            .unwrap();
        assert_eq!(text(&out).trim(), format!("ok {path}"), "requests {path}");
        let script = r#"
const { setGlobalDispatcher, EnvHttpProxyAgent } = require('undici');
setGlobalDispatcher(new EnvHttpProxyAgent());
fetch(process.env.URL).then(async (r) => console.log(await r.text())).catch((e) => {
  console.log('error:', String(e), e.cause ? String(e.cause) : '');
  process.exitCode = 1;
});
"#;
        let out = case
            .client("node")
            .args(["-e", script])
            .env("NODE_PATH", super::npm::node_prefix().join("node_modules"))
            .env("NODE_NO_WARNINGS", "1")
            .env("URL", site.url(path))
            .timed_output()
            .unwrap();
        assert_eq!(text(&out).trim(), format!("ok {path}"), "node {path}");
    }
    // The tunnelled site was a tunnel (the client's own TLS to it; no request of it is seen by cordon); the other
    // was intercepted (its requests are).
    case.audited(|r| r["host"] == "real.e2e.test" && r["kind"] == "connect")
        .await;
    case.audited(|r| r["host"] == "seen.e2e.test" && r["kind"] == "https")
        .await;
    assert!(
        !case
            .audit()
            .iter()
            .any(|r| r["host"] == "real.e2e.test" && r["kind"] == "https")
    );
}
