//! The environment a sandbox is started with: the proxy, the CA bundle for every client that reads its own
//! variable, and the placeholders of its credentials. Used by the admin API and by `cordon jail`.
//!
//! The CA variables point at one bundle, not at the sandbox's CA alone: most clients replace their roots with
//! the file a variable names, so a bundle of the sandbox's CA alone would make every destination under a
//! `tls: tunnel` rule (which presents its real certificate) fail to verify. The bundle is the sandbox's CA, the
//! roots cordon itself trusts upstream (Mozilla's, from `webpki-root-certs`, the same list as `webpki-roots`) and
//! `upstream.extra_roots`.

use std::collections::BTreeMap;

/// The variables naming the CA file, for the clients that read each. `npm_config_cafile` is npm's `cafile`
/// setting (npm reads any `npm_config_<key>` from the environment, above every `.npmrc`): npm passes a
/// configured CA list to Node's TLS in place of the default roots, so `NODE_EXTRA_CA_CERTS` alone is lost
/// whenever a global npmrc sets `cafile` (NodeSource's packages ship `/usr/etc/npmrc` with
/// `cafile=/etc/ssl/certs/ca-certificates.crt`). `AWS_CA_BUNDLE` is what the AWS SDKs and CLI read.
pub(crate) const CA_VARS: [&str; 9] = [
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

/// The CA bundle: `ca_pem` (the sandbox's CA) first, then Mozilla's roots and `extra` roots, each a PEM block.
pub(crate) fn ca_bundle(ca_pem: &str, extra: &[rustls_pki_types::CertificateDer<'static>]) -> String {
    let roots = webpki_root_certs::TLS_SERVER_ROOT_CERTS
        .iter()
        .chain(extra)
        .map(|c| pem::Pem::new("CERTIFICATE", c.as_ref()))
        .collect::<Vec<_>>();
    let config = pem::EncodeConfig::new().set_line_ending(pem::LineEnding::LF);
    let mut out = String::with_capacity(ca_pem.len() + roots.len() * 2048);
    out.push_str("# The sandbox's CA (cordon intercepts with it)\n");
    out.push_str(ca_pem.trim_end());
    out.push_str("\n# The roots cordon trusts upstream: Mozilla's, then upstream.extra_roots\n");
    out.push_str(&pem::encode_many_config(&roots, config));
    out
}

/// Every variable, by name: `proxy_url` for `HTTP(S)_PROXY` in both cases, `no_proxy` joined with commas,
/// `ca_file` for each of `CA_VARS`, `NODE_USE_ENV_PROXY=1`, one `CORDON_PLACEHOLDER_<NAME>` each, and the
/// placeholder keys of AWS credentials (`aws`: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`...).
pub(crate) fn sandbox_env(
    proxy_url: &str,
    no_proxy: &[String],
    ca_file: &str,
    placeholders: &BTreeMap<String, String>,
    aws: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.insert(var.to_string(), proxy_url.to_string());
    }
    let no_proxy = no_proxy.join(",");
    env.insert("NO_PROXY".into(), no_proxy.clone());
    env.insert("no_proxy".into(), no_proxy);
    for var in CA_VARS {
        env.insert(var.into(), ca_file.to_string());
    }
    env.insert("NODE_USE_ENV_PROXY".into(), "1".into());
    for (name, value) in placeholders {
        env.insert(crate::placeholder::env_var(name), value.clone());
    }
    env.extend(aws);
    env
}
