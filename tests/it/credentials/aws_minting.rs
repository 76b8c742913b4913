//! Injected AWS credentials do not mint credentials the sandbox keeps: through the `cordon` binary, with boto3,
//! botocore-signed raw requests and the AWS CLI as the sandbox's clients, against moto (server mode, IAM
//! authentication on). STS and IAM minting calls are refused in every way a client can write the action; a
//! call the credential's `allow_minting` names goes through and the keys in its answer come back masked; a
//! session token the sandbox sends itself is refused.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Child;

use serde_json::Value;

use crate::rigs::aws::{agent, json, moto, run, sandbox};
use crate::rigs::ports::free_port;
use crate::rigs::process::{BIN, Killed, spawn_cordon};
use crate::rigs::tls::test_ca;
use crate::rigs::wait::{TimedChild, Within};

/// moto, cordon and two sandboxes: `plain` (a credential that mints nothing) and `mint` (one whose
/// `allow_minting` names GetSessionToken, AssumeRole, CreateAccessKey and UpdateAssumeRolePolicy).
pub(super) struct Rig {
    dir: tempfile::TempDir,
    pub(super) endpoint: String,
    config: PathBuf,
    pub(super) plain: BTreeMap<String, String>,
    pub(super) mint: BTreeMap<String, String>,
    role: String,
    real: (String, String),
    _moto: Killed,
    cordon: Option<Child>,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.cordon.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

pub(super) async fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = test_ca("aws minting CA");
    let (cert, key) = ca.pem_pair(&["moto.test", "127.0.0.2"]);
    std::fs::write(d.join("moto-cert.pem"), cert).unwrap();
    std::fs::write(d.join("moto-key.pem"), key).unwrap();
    std::fs::write(d.join("test-ca.pem"), &ca.pem).unwrap();
    let port = free_port();
    let moto = moto(d, port, 6).await;
    let admin_env: BTreeMap<String, String> =
        [("AWS_CA_BUNDLE".to_string(), d.join("test-ca.pem").display().to_string())].into();
    let made = json(&run(
        "python3",
        &[agent().to_str().unwrap(), "setup", &format!("https://127.0.0.2:{port}")],
        &admin_env,
    ));
    let real = (
        made["key_id"].as_str().unwrap().to_string(),
        made["secret"].as_str().unwrap().to_string(),
    );
    let role = made["role_arn"].as_str().unwrap().to_string();
    let (proxy, admin) = (free_port(), free_port());
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ moto.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/test-ca.pem] }}
vault: {{ file: {{ path: {d}/vault.bin }} }}
audit: {{ path: {d}/audit.jsonl }}
control:
  admin_token: {{ file: {d}/admin-token }}
  ca_file: {d}/bundle.pem
credentials:
  aws-plain:
    source: {{ aws: {{ access_key_id: {{ env: REAL_AWS_KEY_ID }}, secret_access_key: {{ env: REAL_AWS_SECRET }} }} }}
    bind: {{ hosts: [moto.test], ports: [{port}] }}
  aws-mint:
    source: {{ aws: {{ access_key_id: {{ env: REAL_AWS_KEY_ID }}, secret_access_key: {{ env: REAL_AWS_SECRET }} }} }}
    bind: {{ hosts: [moto.test], ports: [{port}] }}
    allow_minting: [sts:GetSessionToken, "STS:assumerole", iam:CreateAccessKey, iam:UpdateAssumeRolePolicy]
policies:
  plain:
    credentials: [aws-plain]
    allow: [{{ host: moto.test, ports: [{port}] }}]
  mint:
    credentials: [aws-mint]
    allow: [{{ host: moto.test, ports: [{port}] }}]
"#,
        d = d.display(),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, &yaml).unwrap();
    let cordon = spawn_cordon(
        &config,
        proxy,
        &[("REAL_AWS_KEY_ID", &real.0), ("REAL_AWS_SECRET", &real.1)],
    )
    .await;
    crate::rigs::control::token(d);
    let (mut plain, _) = sandbox(&config, "plain", "plain");
    let (mut mint, _) = sandbox(&config, "mint", "mint");
    // Both sandboxes' CAs in the one bundle their environments name.
    let mut bundle = Vec::new();
    for id in ["plain", "mint"] {
        let out = std::process::Command::new(BIN)
            .args(["sandbox", "ca-bundle", id, "--config"])
            .arg(&config)
            .timed_output()
            .unwrap();
        bundle.extend(out.stdout);
    }
    std::fs::write(d.join("bundle.pem"), bundle).unwrap();
    for env in [&mut plain, &mut mint] {
        env.insert("AWS_DEFAULT_REGION".into(), "us-east-1".into());
    }
    Rig {
        dir,
        endpoint: format!("https://moto.test:{port}"),
        config,
        plain,
        mint,
        role,
        real,
        _moto: moto,
        cordon: Some(cordon),
    }
}

impl Rig {
    fn agent(&self, env: &BTreeMap<String, String>, args: &[&str]) -> Value {
        let py = agent();
        let mut full = vec![py.to_str().unwrap(), args[0], self.endpoint.as_str()];
        full.extend(&args[1..]);
        json(&run("python3", &full, env))
    }

    /// The audit log once `ready` holds for it (records are written after the answer), at most 10 s.
    pub(super) fn audit_once(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        crate::rigs::wait::file_once(&self.dir.path().join("audit.jsonl"), what, ready)
    }
}

pub(super) fn refused_as(got: &Value, reason: &str, what: &str) {
    assert_eq!(
        (got["status"].as_i64(), got["reason"].as_str()),
        (Some(403), Some(reason)),
        "{what}: {got}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn minting_calls_are_refused_however_the_action_is_written() {
    let r = rig().await;
    let env = &r.plain;
    // boto3, every protocol: query (STS, IAM), JSON (ECR's X-Amz-Target), REST (CodeArtifact's path).
    for what in ["session", "key", "ecr", "codeartifact"] {
        refused_as(&r.agent(env, &["mint", what]), "credential_minting", what);
    }
    refused_as(&r.agent(env, &["mint", "role", &r.role]), "credential_minting", "role");
    // Written by hand and signed as written: the query, a form body, any case, percent-encoded, repeated, a
    // JSON target.
    let form = "Content-Type:application/x-www-form-urlencoded";
    for (method, query, body, headers) in [
        ("GET", "Action=GetSessionToken&Version=2011-06-15", "-", vec![]),
        ("GET", "action=getsessiontoken&Version=2011-06-15", "-", vec![]),
        ("GET", "%41ction=GetSession%54oken&Version=2011-06-15", "-", vec![]),
        (
            "GET",
            "Action=GetCallerIdentity&Action=GetSessionToken&Version=2011-06-15",
            "-",
            vec![],
        ),
        ("POST", "-", "Version=2011-06-15&ACTION=Get%53essionToken", vec![form]),
        (
            "POST",
            "-",
            "Action=GetCallerIdentity&Version=2011-06-15&Action=AssumeRole",
            vec![form],
        ),
        (
            "POST",
            "-",
            "Action=GetSessionToken&Version=2011-06-15",
            vec!["Content-Type:text/plain"],
        ),
        (
            "POST",
            "-",
            "{}",
            vec![
                "Content-Type:application/x-amz-json-1.1",
                "X-Amz-Target:AWSSecurityTokenServiceV20110615.GetSessionToken",
            ],
        ),
    ] {
        let mut args = vec!["raw", "sts", method, query, body];
        args.extend(headers.iter().copied());
        refused_as(
            &r.agent(env, &args),
            "credential_minting",
            &format!("{method} {query} {body}"),
        );
    }
    for body in [
        "Action=CreateAccessKey&UserName=agent&Version=2010-05-08",
        "Action=CreateLoginProfile&UserName=agent&Password=Passw0rd!x&Version=2010-05-08",
        "Action=UpdateLoginProfile&UserName=agent&Password=Passw0rd!y&Version=2010-05-08",
        "Action=CreateServiceSpecificCredential&UserName=agent&ServiceName=codecommit.amazonaws.com&Version=2010-05-08",
        "action=createaccesskey&UserName=agent&Version=2010-05-08",
    ] {
        refused_as(
            &r.agent(env, &["raw", "iam", "POST", "-", body]),
            "credential_minting",
            body,
        );
    }
    // The AWS CLI is refused the same way.
    for args in [
        vec!["sts", "get-session-token"],
        vec!["iam", "create-access-key", "--user-name", "agent"],
    ] {
        let mut full = vec!["--endpoint-url", r.endpoint.as_str()];
        full.extend(args.iter().copied());
        let out = run("aws", &full, env);
        assert!(!out.status.success(), "aws {args:?} was not refused");
    }
    // What mints nothing still works, by hand and with the CLI.
    let who = r.agent(
        env,
        &["raw", "sts", "POST", "-", "Action=GetCallerIdentity&Version=2011-06-15"],
    );
    assert_eq!(who["status"], 200, "{who}");
    let out = run("aws", &["--endpoint-url", &r.endpoint, "iam", "list-users"], env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Each refusal is audited with its reason and the call it was.
    let audit = r.audit_once("20 minting refusals audited", |a| {
        a.lines().filter(|l| l.contains("credential_minting")).count() >= 20
    });
    let minting: Vec<&str> = audit.lines().filter(|l| l.contains("credential_minting")).collect();
    assert!(minting.len() >= 20, "{} audited", minting.len());
    assert!(
        minting
            .iter()
            .any(|l| l.contains("iam:CreateLoginProfile through credential aws-plain"))
    );
    // No key was made: moto still lists only the key setup made.
    let keys = r.agent(
        &r.mint,
        &[
            "raw",
            "iam",
            "POST",
            "-",
            "Action=ListAccessKeys&UserName=agent&Version=2010-05-08",
        ],
    );
    assert_eq!(
        keys["body"].as_str().unwrap().matches("<AccessKeyId>").count(),
        1,
        "{keys}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_named_minting_call_goes_through_and_its_keys_come_back_masked() {
    let r = rig().await;
    let (summary, errors) = crate::rigs::process::check_summary(
        &r.config,
        &[("REAL_AWS_KEY_ID", "AKIAEXAMPLE"), ("REAL_AWS_SECRET", "x")],
    );
    assert!(
        summary.contains("may mint sts:GetSessionToken, sts:AssumeRole, iam:CreateAccessKey"),
        "{summary}{errors}"
    );
    let mut seen = String::new();
    for args in [
        vec!["mint", "session"],
        vec!["mint", "role", r.role.as_str()],
        vec!["mint", "key"],
    ] {
        let got = r.agent(&r.mint, &args);
        seen.push_str(&got.to_string());
        assert_eq!(got["status"], 200, "{args:?}: {got}");
        let keys = &got["result"];
        assert_eq!(keys["SecretAccessKey"], "masked-by-cordon", "{args:?}: {got}");
        let id = keys["AccessKeyId"].as_str().unwrap();
        assert!(
            id.starts_with("ASIA") || id.starts_with("AKIA"),
            "the key id stays: {got}"
        );
        if args[1] != "key" {
            assert_eq!(keys["SessionToken"], "masked-by-cordon", "{args:?}: {got}");
        }
    }
    // The AWS CLI gets the same masked answer, and a call not named is still refused.
    let out = run(
        "aws",
        &["--endpoint-url", &r.endpoint, "sts", "get-session-token"],
        &r.mint,
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("\"SecretAccessKey\": \"masked-by-cordon\""), "{text}");
    seen.push_str(&text);
    let body = "Action=CreateLoginProfile&UserName=agent&Password=Passw0rd!x&Version=2010-05-08";
    refused_as(
        &r.agent(&r.mint, &["raw", "iam", "POST", "-", body]),
        "credential_minting",
        "not named",
    );
    // The raw answer, as it crossed cordon: the document's shape, no secret.
    let raw = r.agent(
        &r.mint,
        &["raw", "sts", "POST", "-", "Action=GetSessionToken&Version=2011-06-15"],
    );
    let xml = raw["body"].as_str().unwrap();
    assert!(
        xml.contains("<SecretAccessKey>masked-by-cordon</SecretAccessKey>"),
        "{xml}"
    );
    assert!(xml.contains("<SessionToken>masked-by-cordon</SessionToken>"), "{xml}");
    assert!(!seen.contains(&r.real.1), "the real secret reached the sandbox");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_token_the_sandbox_sends_is_refused() {
    let r = rig().await;
    let env = &r.plain;
    let token = "FwoGZXIvYXdzEBYaDminted";
    let body = "Action=GetCallerIdentity&Version=2011-06-15";
    // Added after signing (unsigned), as a header in any case, or a query parameter of a header-signed request.
    for (q, headers) in [
        ("-".to_string(), vec![format!("x-amz-security-token:{token}")]),
        ("-".to_string(), vec![format!("X-Amz-Security-Token:{token}")]),
        (format!("X-Amz-Security-Token={token}"), vec![]),
        (format!("x-amz-security-token={token}"), vec![]),
    ] {
        let mut args = vec!["raw", "sts", "POST", q.as_str(), body, "--"];
        args.extend(headers.iter().map(String::as_str));
        refused_as(&r.agent(env, &args), "aws_session_token", &format!("{q} {headers:?}"));
    }
    // Signed in by boto3 (AWS_SESSION_TOKEN set), in a header and in a presigned URL.
    let mut with_token = env.clone();
    with_token.insert("AWS_SESSION_TOKEN".into(), token.into());
    let got = r.agent(&with_token, &["call", "agent-bucket", "list"]);
    refused_as(&got, "aws_session_token", "boto3 with AWS_SESSION_TOKEN");
    let presigned = json(&run(
        "python3",
        &[
            agent().to_str().unwrap(),
            "presign",
            &format!("{}/agent-bucket/a.txt", r.endpoint),
        ],
        &with_token,
    ));
    assert_eq!(
        (presigned["status"].as_i64(), presigned["reason"].as_str()),
        (Some(403), Some("aws_session_token")),
        "{presigned}"
    );
    // Without one, the same calls go through.
    let who = r.agent(env, &["raw", "sts", "POST", "-", body]);
    assert_eq!(who["status"], 200, "{who}");
    assert_eq!(r.agent(env, &["call", "agent-bucket", "list"])["error"], Value::Null);
}
