//! npm installing from a local registry with a token cordon injects, and Node's `fetch` through the proxy
//! (undici's `EnvHttpProxyAgent`) with the sandbox's placeholder swapped for the real token.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use super::harness::{API_TOKEN, Case, Handler, Spec, files, placeholder_api, site, text};
use crate::rigs::upstreams::Seen;
use crate::rigs::wait::Within;

/// Build `name@version` (`package/package.json` + `package/index.js`) with `npm pack` (offline, outside the
/// sandbox: this is the registry's side) into `out`; returns the tarball's file name, its `integrity` (sha512)
/// and `shasum` (sha1), as npm computed them.
fn pack(work: &Path, name: &str, version: &str, exports: &str, out: &Path) -> (String, String, String) {
    let src = work.join(format!("src-{name}"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(
        src.join("package.json"),
        format!("{{\"name\": \"{name}\", \"version\": \"{version}\", \"main\": \"index.js\"}}\n"),
    )
    .unwrap();
    std::fs::write(src.join("index.js"), format!("module.exports = {exports};\n")).unwrap();
    let home = work.join("pack-home");
    std::fs::create_dir_all(&home).unwrap();
    let packed = Command::new("npm")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .args(["pack", "--json", "--no-update-notifier", "--pack-destination"])
        .arg(out)
        .current_dir(&src)
        .timed_output()
        .unwrap();
    assert!(packed.status.success(), "npm pack: {}", text(&packed));
    let meta: serde_json::Value = serde_json::from_slice(&packed.stdout).unwrap();
    let meta = &meta[0];
    (
        meta["filename"].as_str().unwrap().to_string(),
        meta["integrity"].as_str().unwrap().to_string(),
        meta["shasum"].as_str().unwrap().to_string(),
    )
}

/// A project directory with a `package.json` depending on `dep@1.0.0` and an `.npmrc` naming the registry
/// (registry choice only: the proxy and the CA come from the sandbox's environment).
fn project(dir: &Path, dep: &str, registry: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!("{{\"name\": \"e2e-app\", \"version\": \"1.0.0\", \"private\": true, \"dependencies\": {{\"{dep}\": \"1.0.0\"}}}}\n"),
    )
    .unwrap();
    std::fs::write(dir.join(".npmrc"), format!("registry={registry}\n")).unwrap();
}

/// The registry's handler: the token required, the packument of `/<name>` stored as `<root>/<name>.json`
/// (beside the directory `<root>/<name>/-/` of tarballs), everything else a file under `root`.
fn registry_files(root: PathBuf, token: &'static str) -> Handler {
    let inner = files(root, move |req| {
        req.header("authorization") == Some(format!("Bearer {token}").as_str())
    });
    Arc::new(move |req: &Seen| {
        let mut req = req.clone();
        let path = req.uri.split('?').next().unwrap_or("/").to_string();
        if !path.contains("/-/") {
            req.uri = format!("{path}.json");
        }
        inner(&req)
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn npm_installs_from_a_local_registry_with_an_injected_token() {
    let ca = Case::ca();
    // A static registry layout served over HTTPS by the harness's `site`: the packument at `/<name>`, the
    // tarball at `/<name>/-/<name>-<v>.tgz`. Files are read per request, so they are written once the port
    // (which the packument's tarball URL names) is known. The registry requires the token cordon injects.
    let root = tempfile::tempdir().unwrap();
    let registry = site(
        &ca,
        "registry.e2e.test",
        registry_files(root.path().to_path_buf(), "real-npm-token"),
    )
    .await;
    let port = registry.port();
    let name = "e2e-hello";
    let (file, integrity, shasum) = pack(
        root.path(),
        name,
        "1.0.0",
        "{ greeting: 'hello from the e2e registry' }",
        &root.path().join(name).join("-"),
    );
    assert_eq!(file, format!("{name}-1.0.0.tgz"));
    let packument = serde_json::json!({
        "name": name,
        "dist-tags": { "latest": "1.0.0" },
        "versions": {
            "1.0.0": {
                "name": name,
                "version": "1.0.0",
                "main": "index.js",
                "dist": {
                    "tarball": registry.url(&format!("/{name}/-/{file}")),
                    "integrity": integrity,
                    "shasum": shasum,
                }
            }
        }
    });
    std::fs::write(root.path().join(format!("{name}.json")), packument.to_string()).unwrap();
    let case = Case::start(
        ca,
        Spec::site(
            "registry.e2e.test",
            port,
            "npm",
            "E2E_NPM_TOKEN",
            "real-npm-token",
            "{ header: Authorization, value: \"Bearer {secret}\" }",
        ),
    )
    .await;
    assert!(!case.env.values().any(|v| v.contains("real-npm-token")));

    // The project names the registry in its .npmrc; npm holds no token. The proxy comes from HTTPS_PROXY and
    // the CA from `npm_config_cafile` (NODE_EXTRA_CA_CERTS is not enough where a global npmrc sets `cafile`,
    // as NodeSource's packages do: npm then hands Node that list in place of its roots).
    let app = case.path("app");
    project(&app, name, &registry.url("/"));
    let out = case
        .client("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-update-notifier"])
        .current_dir(&app)
        .timed_output()
        .unwrap();
    let got = text(&out);
    assert!(out.status.success(), "npm install: {got}");
    let out = case
        .client("node")
        .args(["-e", &format!("console.log(JSON.stringify(require('{name}')))")])
        .current_dir(&app)
        .timed_output()
        .unwrap();
    assert_eq!(
        text(&out).trim(),
        r#"{"greeting":"hello from the e2e registry"}"#,
        "node: {}",
        text(&out)
    );
    // The packument and the tarball both went through cordon with the real token.
    let seen = registry.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.uri.as_str()).collect();
    assert!(
        paths.contains(&format!("/{name}").as_str()) && paths.contains(&format!("/{name}/-/{file}").as_str()),
        "{paths:?}"
    );
    assert!(
        seen.iter()
            .all(|s| s.header("authorization") == Some("Bearer real-npm-token")),
        "{seen:#?}"
    );
    case.audited(|r| r["host"] == "registry.e2e.test" && r["decision"] == "allow" && r["credentials"][0] == "npm")
        .await;

    // A registry the policy does not allow. npm's proxy agent hands the CONNECT's 403 to npm as the
    // response, so npm reports a 403 for the packument (without cordon's body; the audit record has why).
    let denied = case.path("denied-app");
    project(&denied, "e2e-other", "https://registry.denied.test/");
    let out = case
        .client("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-update-notifier"])
        .current_dir(&denied)
        .timed_output()
        .unwrap();
    let got = text(&out);
    assert!(!out.status.success(), "npm install from a denied registry: {got}");
    assert!(
        got.contains("npm error code E403")
            && got.contains("403 Forbidden - GET https://registry.denied.test/e2e-other"),
        "npm shows: {got}"
    );
    case.audited(|r| {
        r["host"] == "registry.denied.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}

/// Where CI installs undici (`.ci/run`): `$CORDON_E2E_NODE_PREFIX`, by default `~/.cache/cordon-e2e-node`.
pub(crate) fn node_prefix() -> PathBuf {
    let prefix = std::env::var_os("CORDON_E2E_NODE_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/cordon-e2e-node"));
    assert!(
        prefix.join("node_modules/undici/package.json").exists(),
        "undici is not installed under {} (CORDON_E2E_NODE_PREFIX): run .ci/run, or \
         `npm install --prefix {} undici@6`",
        prefix.display(),
        prefix.display()
    );
    prefix
}

#[tokio::test(flavor = "multi_thread")]
async fn node_fetch_through_the_proxy_with_a_placeholder_swapped() {
    let prefix = node_prefix();
    let (api, case) = placeholder_api().await;
    assert!(case.env.contains_key("CORDON_PLACEHOLDER_API"));

    // Node 20's global fetch ignores HTTPS_PROXY even with NODE_USE_ENV_PROXY=1 (that came in Node 24 and
    // 22.21): it resolves the host itself (ENOTFOUND here). So the script does what Node 20 code must do,
    // undici's EnvHttpProxyAgent (HTTP(S)_PROXY, NO_PROXY) as the global dispatcher; the CA is Node's
    // NODE_EXTRA_CA_CERTS. undici comes from the prefix .ci/run installs it in (NODE_PATH).
    let script = r#"
const { setGlobalDispatcher, EnvHttpProxyAgent } = require('undici');
setGlobalDispatcher(new EnvHttpProxyAgent());
fetch(process.env.URL, { headers: { authorization: 'Bearer ' + process.env.CORDON_PLACEHOLDER_API } })
  .then(async (r) => console.log(r.status, JSON.stringify(await r.json())))
  .catch((e) => {
    console.log('error:', String(e));
    for (let c = e.cause; c; c = c.cause) console.log('cause:', String(c));
    process.exitCode = 1;
  });
"#;
    let fetch = |url: String| {
        case.client("node")
            .args(["-e", script])
            .env("NODE_PATH", prefix.join("node_modules"))
            // undici's "EnvHttpProxyAgent is experimental" warning.
            .env("NODE_NO_WARNINGS", "1")
            .env("URL", url)
            .timed_output()
            .unwrap()
    };
    let out = fetch(api.url("/v1/node"));
    assert_eq!(
        text(&out).trim(),
        r#"200 {"ok":true,"path":"/v1/node"}"#,
        "node fetch: {}",
        text(&out)
    );
    // The real token reached the API; the sandbox only ever had its placeholder.
    assert!(
        api.seen()
            .iter()
            .all(|s| s.header("authorization") == Some(format!("Bearer {API_TOKEN}").as_str())),
        "{:#?}",
        api.seen()
    );
    case.audited(|r| r["host"] == "api.e2e.test" && r["decision"] == "allow" && r["credentials"][0] == "api")
        .await;

    // A denied destination: undici turns the CONNECT's 403 into "fetch failed", whose cause (a DOMException
    // "Request was cancelled.") has the proxy's status as its own cause.
    let out = fetch("https://denied.e2e.test/v1/node".into());
    let got = text(&out);
    assert!(!out.status.success(), "node fetch of a denied host: {got}");
    assert!(
        got.contains("error: TypeError: fetch failed")
            && got.contains("Proxy response (403) !== 200 when HTTP Tunneling"),
        "node shows: {got}"
    );
    case.audited(|r| {
        r["host"] == "denied.e2e.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}
