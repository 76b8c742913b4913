//! pip: `pip install` from a private PEP 503 simple index over HTTPS, whose token cordon injects as
//! `Authorization: Basic base64(__token__:secret)` (the client has no credential at all), and what pip
//! shows when cordon refuses the index.

use std::process::Command;

use base64::Engine;

use super::harness::{Case, Spec, files, site, text};
use crate::rigs::wait::Within;

/// Writes `cordon_e2e_hello-0.1.0-py3-none-any.whl` (one module, `cordon_e2e_hello.py`) into the directory
/// given as argv[1] and prints its sha256: a wheel is a zip with `<name>-<ver>.dist-info/{METADATA,WHEEL,RECORD}`.
pub(crate) const BUILD_WHEEL: &str = r#"
import base64, hashlib, os, sys, zipfile
name, ver = "cordon_e2e_hello", "0.1.0"
info = f"{name}-{ver}.dist-info"
files = {
    f"{name}.py": 'GREETING = "hello through cordon"\n',
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: cordon-e2e-hello\nVersion: {ver}\nSummary: e2e\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: cordon-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, content in files.items():
    data = content.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = "\n".join(record) + "\n"
whl = os.path.join(sys.argv[1], f"{name}-{ver}-py3-none-any.whl")
with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
    for path, content in files.items():
        z.writestr(path, content)
print(hashlib.sha256(open(whl, "rb").read()).hexdigest())
"#;

pub(crate) const WHEEL: &str = "cordon_e2e_hello-0.1.0-py3-none-any.whl";
pub(crate) const SECRET: &str = "pypi-real-index-token";

/// A private PEP 503 index at `name` (HTTPS, a certificate from `ca`) serving one wheel, answering only requests
/// with the real token as Basic auth; and that header's value.
pub(crate) struct Index {
    pub(crate) site: super::harness::Site,
    pub(crate) basic: String,
    _root: tempfile::TempDir,
}

pub(crate) async fn private_index(ca: &crate::rigs::tls::TestCa, name: &str) -> Index {
    // The index: /simple/cordon-e2e-hello/ links the wheel under /packages/, with its sha256.
    let root = tempfile::tempdir().unwrap();
    let packages = root.path().join("packages");
    let project = root.path().join("simple/cordon-e2e-hello");
    std::fs::create_dir_all(&packages).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let built = Command::new("python3")
        .args(["-c", BUILD_WHEEL])
        .arg(&packages)
        .timed_output()
        .unwrap();
    assert!(built.status.success(), "building the wheel: {}", text(&built));
    let sha256 = String::from_utf8_lossy(&built.stdout).trim().to_string();
    std::fs::write(
        project.join("index.html"),
        format!(
            "<!DOCTYPE html>\n<html><body>\n<a href=\"../../packages/{WHEEL}#sha256={sha256}\">{WHEEL}</a>\n</body></html>\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.path().join("simple/index.html"),
        "<!DOCTYPE html>\n<html><body><a href=\"cordon-e2e-hello/\">cordon-e2e-hello</a></body></html>\n",
    )
    .unwrap();

    // The index answers only with the real token as Basic auth.
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("__token__:{SECRET}"))
    );
    let expected = basic.clone();
    let index = site(
        ca,
        name,
        files(root.path().to_path_buf(), move |req| {
            req.header("authorization") == Some(expected.as_str())
        }),
    )
    .await;
    Index {
        site: index,
        basic,
        _root: root,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pip_installs_from_a_private_index_with_the_token_injected_as_basic_auth() {
    let ca = Case::ca();
    let Index {
        site: index,
        basic,
        _root,
    } = private_index(&ca, "pypi.e2e.test").await;
    let port = index.port();
    let case = Case::start(
        ca,
        Spec::site(
            "pypi.e2e.test",
            port,
            "pypi",
            "E2E_PYPI_TOKEN",
            SECRET,
            "{ basic_user: __token__ }",
        ),
    )
    .await;

    // pip, with the sandbox's environment only and no credential of its own.
    let target = case.path("site");
    let out = pip_install(&case, &index.url("/simple/"), &target, 0);
    let got = text(&out);
    assert!(out.status.success(), "pip install failed: {got}");
    assert!(
        got.contains("Successfully installed cordon-e2e-hello-0.1.0"),
        "pip shows: {got}"
    );
    let out = case
        .client("python3")
        .args(["-c", "import cordon_e2e_hello; print(cordon_e2e_hello.GREETING)"])
        .env("PYTHONPATH", &target)
        .timed_output()
        .unwrap();
    assert_eq!(text(&out).trim(), "hello through cordon", "{}", text(&out));

    // The index saw the page and the wheel, each with the real token; the sandbox never had it.
    let seen = index.seen();
    let paths: Vec<&str> = seen.iter().map(|s| s.uri.as_str()).collect();
    assert!(paths.contains(&"/simple/cordon-e2e-hello/"), "{paths:?}");
    assert!(paths.contains(&format!("/packages/{WHEEL}").as_str()), "{paths:?}");
    assert!(
        seen.iter().all(|s| s.header("authorization") == Some(basic.as_str())),
        "the index saw: {:?}",
        seen.iter().map(|s| s.header("authorization")).collect::<Vec<_>>()
    );
    let b64 = basic.trim_start_matches("Basic ");
    assert!(!case.env.values().any(|v| v.contains(SECRET) || v.contains(b64)));
    case.audited(|r| {
        r["host"] == "pypi.e2e.test"
            && r["decision"] == "allow"
            && r["credentials"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c == "pypi"))
    })
    .await;

    // A denied index: pip shows cordon's refusal of the tunnel. pip reports why a fetch failed only in
    // its retry warning (with `--retries 0` it prints just "No matching distribution found", the cause
    // only at -vv), so this run allows one retry, which urllib3 makes at once (no backoff before it).
    let out = pip_install(&case, "https://denied.e2e.test/simple/", &case.path("denied"), 1);
    let got = text(&out);
    assert!(!out.status.success(), "pip should fail: {got}");
    assert!(
        got.contains("ProxyError('Cannot connect to proxy.'")
            && got.contains("Tunnel connection failed: 403 Forbidden")
            && got.contains("No matching distribution found for cordon-e2e-hello"),
        "pip shows: {got}"
    );
    case.audited(|r| {
        r["host"] == "denied.e2e.test" && r["decision"] == "deny" && r["sandbox"] == case.sandbox.as_str()
    })
    .await;
}

/// `pip install cordon-e2e-hello` from `index` into `target`, as the sandbox (its env only).
pub(super) fn pip_install(case: &Case, index: &str, target: &std::path::Path, retries: u8) -> std::process::Output {
    pip_install_as(case.client("python3"), index, target, retries)
}

/// `pip install cordon-e2e-hello` from `index` into `target`, with `python` (a client of some sandbox).
pub(super) fn pip_install_as(
    mut python: Command,
    index: &str,
    target: &std::path::Path,
    retries: u8,
) -> std::process::Output {
    python
        .args(["-m", "pip", "install", "--index-url", index, "--target"])
        .arg(target)
        .args([
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--timeout",
            "10",
            "--retries",
        ])
        .arg(retries.to_string())
        .arg("cordon-e2e-hello")
        .timed_output()
        .unwrap()
}
