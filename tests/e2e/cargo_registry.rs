//! cargo: `cargo fetch` from a local sparse registry over intercepted HTTPS, with the registry's token
//! injected by cordon (cargo holds none), and what cargo shows when cordon refuses a registry's host.

use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

use super::harness::{Case, Spec, files, site, text};
use crate::rigs::wait::Within;

const CRATE: &str = "cordon-e2e-hello";
const TOKEN: &str = "e2e-registry-token-5b7c1d";

/// `cordon-e2e-hello-0.1.0.crate`: a gzip tar of `cordon-e2e-hello-0.1.0/{Cargo.toml,src/lib.rs}`.
fn package(work: &Path) -> Vec<u8> {
    let root = work.join(format!("{CRATE}-0.1.0"));
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!("[package]\nname = \"{CRATE}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn hello() -> &'static str { \"hello\" }\n",
    )
    .unwrap();
    let file = work.join(format!("{CRATE}-0.1.0.crate"));
    let out = Command::new("tar")
        .arg("czf")
        .arg(&file)
        .arg("-C")
        .arg(work)
        .arg(format!("{CRATE}-0.1.0"))
        .timed_output()
        .unwrap();
    assert!(out.status.success(), "tar: {}", text(&out));
    std::fs::read(file).unwrap()
}

/// A project depending on `CRATE` from the registry `name` at `index`, named in the project's
/// `.cargo/config.toml` (what a user writes to pick a registry; nothing about proxies or CAs).
fn project(dir: &Path, name: &str, index: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join(".cargo")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"e2e-app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{CRATE} = {{ version = \"0.1\", registry = \"{name}\" }}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join(".cargo/config.toml"),
        format!("[registries.{name}]\nindex = \"sparse+{index}\"\n"),
    )
    .unwrap();
}

/// `cargo fetch` in `project`, with the sandbox's env only, plus where cargo's own files and toolchain are:
/// CARGO_HOME in the case's directory (so nothing of the user's ~/.cargo is used), and the toolchain's own
/// cargo (`$CARGO`, set by cargo for tests) and rustc beside it (`RUSTC`; `cargo fetch` asks rustc for the
/// target), since the rustup proxies on PATH find no toolchain under the client's private HOME.
fn cargo_fetch(case: &Case, project: &Path) -> Command {
    let cargo = std::path::PathBuf::from(std::env::var("CARGO").unwrap());
    let mut c = case.client(cargo.to_str().unwrap());
    c.arg("fetch")
        .env("CARGO_HOME", case.path("cargo-home"))
        .env("RUSTC", cargo.with_file_name("rustc"))
        .current_dir(project);
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn cargo_fetch_from_a_sparse_registry_with_an_injected_token() {
    let ca = Case::ca();
    let root = tempfile::tempdir().unwrap();
    let krate = package(root.path());
    let registry = site(
        &ca,
        "registry.e2e.test",
        files(root.path().join("www"), |req| {
            req.header("authorization") == Some(TOKEN)
        }),
    )
    .await;
    let port = registry.port();

    // The sparse index: config.json (`dl` without markers: cargo appends `/{crate}/{version}/download`),
    // the crate's file at `co/rd/cordon-e2e-hello` (names of four or more characters), and the .crate.
    let www = root.path().join("www");
    std::fs::create_dir_all(www.join("index/co/rd")).unwrap();
    std::fs::write(
        www.join("index/config.json"),
        format!(
            "{{\"dl\": \"{}\", \"api\": \"{}\"}}",
            registry.url("/api/v1/crates"),
            registry.url("")
        ),
    )
    .unwrap();
    let cksum = hex::encode(Sha256::digest(&krate));
    std::fs::write(
        www.join(format!("index/co/rd/{CRATE}")),
        format!(
            "{{\"name\":\"{CRATE}\",\"vers\":\"0.1.0\",\"deps\":[],\"cksum\":\"{cksum}\",\"features\":{{}},\"yanked\":false}}\n"
        ),
    )
    .unwrap();
    let download = www.join(format!("api/v1/crates/{CRATE}/0.1.0"));
    std::fs::create_dir_all(&download).unwrap();
    std::fs::write(download.join("download"), &krate).unwrap();

    let case = Case::start(
        ca,
        Spec::site(
            "registry.e2e.test",
            port,
            "registry",
            "E2E_REGISTRY_TOKEN",
            TOKEN,
            "{ header: Authorization, value: \"{secret}\" }",
        ),
    )
    .await;
    assert!(
        !case.env.values().any(|v| v.contains(TOKEN)),
        "the sandbox env holds the token"
    );

    let cargo_home = case.path("cargo-home");
    let app = case.path("app");
    project(&app, "e2e", &registry.url("/index/"));
    let out = cargo_fetch(&case, &app).timed_output().unwrap();
    let got = text(&out);
    assert!(out.status.success(), "cargo fetch: {got}");
    let cache = cargo_home.join("registry/cache");
    let fetched: Vec<_> = walk(&cache)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n == format!("{CRATE}-0.1.0.crate").as_str())
        })
        .collect();
    assert_eq!(fetched.len(), 1, "the .crate in {}: {got}", cache.display());
    assert_eq!(std::fs::read(&fetched[0]).unwrap(), krate);
    let seen = registry.seen();
    let dl = format!("/api/v1/crates/{CRATE}/0.1.0/download");
    assert!(
        seen.iter().any(|s| s.uri == dl),
        "the registry saw {:?}",
        seen.iter().map(|s| &s.uri).collect::<Vec<_>>()
    );
    assert!(
        seen.iter().all(|s| s.header("authorization") == Some(TOKEN)),
        "every request carried the injected token: {seen:?}"
    );
    // Nothing else was asked for (no crates.io, no other host).
    let elsewhere: Vec<_> = case
        .audit()
        .into_iter()
        .filter(|r| r["host"].as_str().is_some_and(|h| h != "registry.e2e.test"))
        .collect();
    assert!(elsewhere.is_empty(), "cargo went elsewhere: {elsewhere:#?}");
    let record = case.audited(|r| r["kind"] == "https" && r["path"] == dl.as_str()).await;
    assert_eq!(record["credentials"], serde_json::json!(["registry"]), "{record:#}");

    // A registry on a host the policy does not name: cordon refuses the CONNECT with a 403, and cargo shows
    // curl's words for it (curl drops the body of a refused CONNECT, so cordon's "cordon: denied: ..." is
    // not shown). cargo takes curl's error 56 for a spurious network error and retries it three times
    // with back-off (about 10 s); CARGO_NET_RETRY=0 keeps the case fast.
    let denied = case.path("denied-app");
    project(&denied, "denied", "https://denied.e2e.test/index/");
    let out = cargo_fetch(&case, &denied)
        .env("CARGO_NET_RETRY", "0")
        .timed_output()
        .unwrap();
    let got = text(&out);
    assert!(
        !out.status.success(),
        "cargo fetch of a denied registry succeeded: {got}"
    );
    assert!(
        got.contains("failed to download from `https://denied.e2e.test/index/config.json`")
            && got.contains("CONNECT tunnel failed, response 403"),
        "cargo shows: {got}"
    );
    case.audited(|r| {
        r["host"] == "denied.e2e.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
