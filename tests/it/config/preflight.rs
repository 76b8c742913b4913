//! `cordon check` refuses what `cordon run` refuses, in the same words, and says what would fail at run time:
//! folders another user could write, an audit file that cannot be opened, a secret that is not where its
//! reference says (with the closest name that is); `check --probe` asks each network source once, and `run`
//! warns at start for one that fails, then serves.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::rigs::client::hash;
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, cordon_env};
use crate::rigs::wait::TimedChild;

/// A configuration in `d` with one sandbox, and `extra` YAML in front.
fn config_in(d: &Path, extra: &str) -> std::path::PathBuf {
    let yaml = format!(
        "{extra}\nlisten: {{ proxy: \"127.0.0.1:0\" }}\nsandboxes:\n  - {{ id: s1, user: u, token_sha256: {}, policy: p }}\n\
         policies:\n  p:\n    allow: [{{ host: a.test }}]\n",
        hash("t")
    );
    let path = d.join("cordon.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

fn mkdir_mode(path: &Path, mode: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn check_refuses_every_folder_and_file_run_refuses_in_the_same_words() {
    type Setup = fn(&Path) -> String;
    let cases: [(&str, Setup, &str); 6] = [
        (
            "ca.dir writable by others",
            |d| {
                mkdir_mode(&d.join("cas"), 0o777);
                format!("ca: {{ dir: {}/cas }}", d.display())
            },
            "is writable by group or others (mode 0777)",
        ),
        (
            "ca.dir a regular file",
            |d| {
                std::fs::write(d.join("cas"), "x").unwrap();
                format!("ca: {{ dir: {}/cas }}", d.display())
            },
            "is not a folder",
        ),
        (
            "a sandbox's CA folder writable by others",
            |d| {
                mkdir_mode(&d.join("cas"), 0o700);
                mkdir_mode(&d.join("cas/s1"), 0o777);
                format!("ca: {{ dir: {}/cas }}", d.display())
            },
            "mode 777",
        ),
        (
            "audit.path in a missing folder",
            |d| format!("audit: {{ path: {}/nowhere/audit.jsonl }}", d.display()),
            "nowhere does not exist",
        ),
        (
            "audit.path a folder",
            |d| {
                mkdir_mode(&d.join("audit.jsonl"), 0o700);
                format!("audit: {{ path: {}/audit.jsonl }}", d.display())
            },
            "audit.jsonl: is not a regular file",
        ),
        (
            "control.store in a folder others can write",
            |d| {
                mkdir_mode(&d.join("store"), 0o777);
                format!("control: {{ store: {}/store/cordon.db }}", d.display())
            },
            "the folder of control.store",
        ),
    ];
    for (what, setup, said) in cases {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let extra = setup(d);
        let extra = if extra.starts_with("ca:") {
            extra
        } else {
            format!("{extra}\nca: {{ dir: {}/ok-cas }}", d.display())
        };
        let config = config_in(d, &extra);
        let c = config.to_str().unwrap();
        let (code, out, err) = cordon_env(&["check", "--config", c], &[]);
        assert_eq!(code, 2, "{what}: check must refuse it\n{out}{err}");
        assert!(err.contains(said), "{what}: {err}");
        assert!(!out.contains(": ok"), "{what}: {out}");
        let (run_code, _, run_err) = cordon_env(&["run", "--config", c], &[]);
        assert_eq!(run_code, 2, "{what}: run must refuse it before starting\n{run_err}");
        assert_eq!(run_err, err, "{what}: run and check say the same");
    }
}

#[test]
fn a_secret_that_is_not_there_is_named_with_the_closest_name_at_check_and_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkdir_mode(&d.join("vault"), 0o700);
    std::fs::write(d.join("vault/github-token"), "ghp_x\n").unwrap();
    let vault = format!(
        "vault: {{ file: {{ path: {0}/vault/cordon.vault, key_file: {0}/vault/cordon.key }} }}\nca: {{ dir: {0}/cas }}\n",
        d.display()
    );
    let creds = format!(
        "credentials:\n  api:\n    source: {{ vault: api-kye }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Key }}\n  \
         ci:\n    source: {{ env: PREFLIGHT_CI_TOKNE }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Ci }}\n  \
         gh:\n    source: {{ file: {0}/vault/github-tokne }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Gh }}\n  \
         idp:\n    source: {{ oauth2: {{ token_url: \"http://127.0.0.1:9/token\", client_id: c, client_secret: {{ env: PREFLIGHT_IDP_SECRT }} }} }}\n    \
         bind: {{ hosts: [a.test] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n",
        d.display()
    );
    let config = config_in(d, &format!("{vault}{creds}"));
    let c = config.to_str().unwrap();
    // The vault holds api-key (a typo away from api-kye) and nothing else.
    let mut set = Command::new(BIN)
        .args(["vault", "set", "api-key", "--config", c])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut set.stdin.take().unwrap(), b"sk-123").unwrap();
    assert!(set.timed_wait().unwrap().success());
    let env = [("PREFLIGHT_CI_TOKEN", "x"), ("PREFLIGHT_IDP_SECRET", "y")];
    let (code, out, err) = cordon_env(&["check", "--config", c], &env);
    assert_eq!(code, 2, "{out}{err}");
    for needle in [
        "credentials.api.source.vault: \"api-kye\" is not in the file vault",
        "(did you mean \"api-key\"?)",
        "credentials.ci.source.env: the environment variable PREFLIGHT_CI_TOKNE is not set (did you mean \"PREFLIGHT_CI_TOKEN\"?)",
        &format!(
            "credentials.gh.source.file: cannot read the secret file {}/vault/github-tokne",
            d.display()
        ),
        &format!("(did you mean \"{}/vault/github-token\"?)", d.display()),
        "credentials.idp.source.oauth2.client_secret.env: the environment variable PREFLIGHT_IDP_SECRT is not set (did you mean \"PREFLIGHT_IDP_SECRET\"?)",
        "4 error(s)",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
    let (run_code, _, run_err) = cordon_env(&["run", "--config", c], &env);
    assert_eq!(run_code, 2, "{run_err}");
    assert_eq!(run_err, err, "run refuses to start on the same list");

    // Fixed, check passes.
    let fixed = std::fs::read_to_string(&config)
        .unwrap()
        .replace("api-kye", "api-key")
        .replace("TOKNE", "TOKEN")
        .replace("SECRT", "SECRET")
        .replace("github-tokne", "github-token");
    std::fs::write(&config, fixed).unwrap();
    let (code, out, err) = cordon_env(&["check", "--config", c], &env);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(": ok"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_probe_asks_each_network_source_once_and_check_alone_asks_none() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let good = listener.local_addr().unwrap().port();
    let (_issuer, asked) = crate::rigs::issuers::counting_issuer_on(listener, 3600);
    let bao_port = free_port();
    let _bao = crate::rigs::issuers::openbao_on(d, bao_port).await;
    let down = free_port();
    let creds = format!(
        "vault: {{ openbao: {{ addr: \"http://127.0.0.1:{bao_port}\", token_env: PROBE_BAO_TOKEN }} }}\n\
         ca: {{ dir: {d}/cas }}\n\
         credentials:\n  \
         good:\n    source: {{ oauth2: {{ token_url: \"http://127.0.0.1:{good}/token\", client_id: c, client_secret: {{ env: PROBE_SECRET }} }} }}\n    \
         bind: {{ hosts: [a.test] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n  \
         down:\n    source: {{ oauth2: {{ token_url: \"http://127.0.0.1:{down}/token\", client_id: c, client_secret: {{ env: PROBE_SECRET }} }} }}\n    \
         bind: {{ hosts: [a.test] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n  \
         bao:\n    source: {{ openbao: \"cordon/test#api_key\" }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Key }}\n  \
         bao_missing:\n    source: {{ openbao: \"cordon/test#api_kye\" }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Key }}\n  \
         local:\n    source: {{ env: PROBE_SECRET }}\n    bind: {{ hosts: [a.test] }}\n    inject: {{ header: X-Local }}\n",
        d = d.display()
    );
    let config = config_in(d, &creds);
    let c = config.to_str().unwrap().to_string();
    let env = [("PROBE_SECRET", "s"), ("PROBE_BAO_TOKEN", "root")];

    // Without --probe: no request at all, and the network credentials do not fail the check.
    let (code, out, err) = tokio::task::spawn_blocking({
        let c = c.clone();
        move || cordon_env(&["check", "--config", &c], &env)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("probe"), "{out}");
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "check alone does no network"
    );

    let (code, out, err) = tokio::task::spawn_blocking(move || cordon_env(&["check", "--probe", "--config", &c], &env))
        .await
        .unwrap();
    assert_eq!(code, 1, "a source that fails fails the probe\n{out}{err}");
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("probe    credential {name} (")))
            .unwrap_or_else(|| panic!("no probe line for {name}:\n{out}"))
            .to_string()
    };
    assert!(line("good").ends_with("): ok"), "{out}");
    assert!(
        line("good").contains(&format!("token endpoint http://127.0.0.1:{good}/token")),
        "{out}"
    );
    assert!(line("bao").ends_with("): ok"), "{out}");
    assert!(
        line("bao").contains(&format!("OpenBao http://127.0.0.1:{bao_port}")),
        "{out}"
    );
    let down_line = line("down");
    assert!(
        !down_line.ends_with(": ok") && down_line.contains(&down.to_string()),
        "{out}"
    );
    let missing = line("bao_missing");
    assert!(!missing.ends_with(": ok") && missing.contains("api_kye"), "{out}");
    assert!(
        !out.contains("probe    credential local"),
        "a local source is not probed: {out}"
    );
    assert!(err.contains("2 credential(s) cannot be supplied now"), "{err}");
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one request to the token endpoint"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn run_warns_at_start_naming_a_network_credential_that_fails_and_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (port, down) = (free_port(), free_port());
    let creds = format!(
        "audit: {{ path: {d}/audit.jsonl }}\nca: {{ dir: {d}/cas }}\n\
         credentials:\n  idp:\n    source: {{ oauth2: {{ token_url: \"http://127.0.0.1:{down}/token\", client_id: c, client_secret: {{ env: START_SECRET }} }} }}\n    \
         bind: {{ hosts: [a.test] }}\n    inject: {{ header: Authorization, value: \"Bearer {{secret}}\" }}\n",
        d = d.display()
    );
    let path = config_in(d, &creds);
    let config = std::fs::read_to_string(&path)
        .unwrap()
        .replace("127.0.0.1:0", &format!("127.0.0.1:{port}"));
    std::fs::write(&path, config).unwrap();
    let mut child = crate::rigs::process::spawn_cordon(&path, port, &[("START_SECRET", "s")]).await;
    let stderr = child.stderr.take().unwrap();
    let warned = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.contains("WARN") && l.contains("credential idp cannot be supplied now"))
    });
    let warned = tokio::time::timeout(Duration::from_secs(20), warned)
        .await
        .expect("no warning within 20 s");
    let line = warned.unwrap().expect("cordon ended without warning about idp");
    assert!(
        line.contains(&format!("token endpoint http://127.0.0.1:{down}/token")),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "`cordon check --probe --config {}` asks again",
            path.display()
        )),
        "{line}"
    );
    // Start went on: cordon still answers on its proxy port.
    assert!(child.try_wait().unwrap().is_none(), "cordon stopped");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    child.kill().unwrap();
    let _ = child.timed_wait();
}
