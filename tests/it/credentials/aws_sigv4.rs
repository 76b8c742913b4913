//! AWS SigV4 through the `cordon` binary, with real clients (boto3 and the AWS CLI, PyPI) against a real
//! server that checks signatures (moto in server mode with IAM authentication on, PyPI). The sandboxes are
//! created at run time and started with what `cordon sandbox create --format dotenv` prints: placeholder AWS
//! keys. cordon checks each request was signed with them, and signs it again with the real keys (stored, or
//! a role's from STS AssumeRole) that no sandbox ever sees.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::rigs::aws::{agent, json, json_or_audit, moto, run, sandbox};
use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn boto3_and_the_aws_cli_sign_with_placeholders_and_cordon_signs_with_the_real_keys() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = test_ca("aws test CA");
    let (cert, key) = ca.pem_pair(&["moto.test", "127.0.0.2"]);
    std::fs::write(d.join("moto-cert.pem"), cert).unwrap();
    std::fs::write(d.join("moto-key.pem"), key).unwrap();
    std::fs::write(d.join("test-ca.pem"), &ca.pem).unwrap();
    let port = free_port();
    let _moto = moto(d, port, 6).await;
    let endpoint = format!("https://moto.test:{port}");

    // As an administrator, straight to moto: a user with a key, a role, a bucket.
    let admin_env: BTreeMap<String, String> = [("AWS_CA_BUNDLE", d.join("test-ca.pem"))]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.display().to_string()))
        .collect();
    let direct = format!("https://127.0.0.2:{port}");
    let out = run("python3", &[agent().to_str().unwrap(), "setup", &direct], &admin_env);
    let made = json(&out);
    let (real_id, real_secret) = (made["key_id"].as_str().unwrap(), made["secret"].as_str().unwrap());
    let role = made["role_arn"].as_str().unwrap();

    // A recording HTTPS upstream, to look at a presigned URL as it arrives.
    let presign_up = https_upstream("127.0.0.2", ca.server_config(&["presign.test"])).await;
    let q = presign_up.addr.port();
    let (proxy, admin) = (free_port(), free_port());
    let bundle = d.join("bundle.pem");
    let yaml = format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ moto.test: 127.0.0.2, presign.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/test-ca.pem] }}
vault: {{ file: {{ path: {d}/vault.bin }} }}
audit: {{ path: {d}/audit.jsonl }}
control:
  admin_token: {{ file: {d}/admin-token }}
  ca_file: {bundle}
credentials:
  aws-keys:
    source: {{ aws: {{ access_key_id: {{ env: REAL_AWS_KEY_ID }}, secret_access_key: {{ env: REAL_AWS_SECRET }} }} }}
    bind: {{ hosts: [moto.test, presign.test], ports: [{port}, {q}] }}
    inject: {{ aws_sigv4: {{ region: us-east-1 }} }}
  aws-role:
    source:
      aws:
        access_key_id: {{ env: REAL_AWS_KEY_ID }}
        secret_access_key: {{ env: REAL_AWS_SECRET }}
        assume_role: {{ role_arn: "{role}", endpoint: "https://127.0.0.2:{port}/", session_name: cordon-agent, duration: 15m }}
    bind: {{ hosts: [moto.test], ports: [{port}] }}
policies:
  aws:
    credentials: [aws-keys]
    allow:
      - {{ host: moto.test, ports: [{port}] }}
      - {{ host: presign.test, ports: [{q}] }}
  role:
    credentials: [aws-role]
    credential_scope:
      aws-role: {{ session_policy: {{ Version: "2012-10-17", Statement: [{{ Effect: Allow, Action: "s3:*", Resource: "*" }}] }} }}
    allow:
      - {{ host: moto.test, ports: [{port}] }}
"#,
        d = d.display(),
        bundle = bundle.display(),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, &yaml).unwrap();
    let (summary, errors) =
        crate::rigs::process::check_summary(&config, &[("REAL_AWS_KEY_ID", "AKIAEXAMPLE"), ("REAL_AWS_SECRET", "x")]);
    assert!(
        summary.contains("credential aws-role: AWS keys of role"),
        "{summary}{errors}"
    );
    assert!(summary.contains("narrows aws-role (session policy)"), "{summary}");
    let child = spawn_cordon(
        &config,
        proxy,
        &[("REAL_AWS_KEY_ID", real_id), ("REAL_AWS_SECRET", real_secret)],
    )
    .await;
    // cordon writes the admin token it generates after it listens: `sandbox create` needs it.
    crate::rigs::control::token(config.parent().unwrap());
    let mut seen_by_sandboxes = String::new();
    let (mut env1, text) = sandbox(&config, "agent1", "aws");
    seen_by_sandboxes.push_str(&text);
    let write_bundle = |id: &str| {
        let out = Command::new(BIN)
            .args(["sandbox", "ca-bundle", id, "--config"])
            .arg(&config)
            .timed_output()
            .unwrap();
        std::fs::write(&bundle, &out.stdout).unwrap();
    };
    write_bundle("agent1");
    assert!(env1["AWS_ACCESS_KEY_ID"].starts_with("cordon-ph-"), "{text}");
    assert_eq!(env1["AWS_CA_BUNDLE"], bundle.display().to_string());
    env1.insert("AWS_DEFAULT_REGION".into(), "us-east-1".into());

    // boto3: put (small, and large enough to stream aws-chunked), get, list.
    let py = agent();
    let py = py.to_str().unwrap();
    let out = run("python3", &[py, "s3", &endpoint, "agent-bucket"], &env1);
    seen_by_sandboxes.push_str(&String::from_utf8_lossy(&out.stdout));
    seen_by_sandboxes.push_str(&String::from_utf8_lossy(&out.stderr));
    let got = json_or_audit(&out, &d.join("audit.jsonl"));
    assert_eq!(got["get"], "written through cordon\n");
    assert_eq!(got["big"], 300 * 1024);
    assert_eq!(got["list"], serde_json::json!(["notes/a.txt", "notes/big.bin"]));

    // The AWS CLI, the same way.
    std::fs::write(d.join("cli.txt"), "from the aws cli\n").unwrap();
    let src = d.join("cli.txt").display().to_string();
    for args in [
        vec!["s3", "cp", src.as_str(), "s3://agent-bucket/cli.txt"],
        // (Not `aws s3 ls`: moto refuses its `delimiter=%2F` even signed with the real key, straight.)
        vec!["s3api", "list-objects-v2", "--bucket", "agent-bucket"],
        vec!["s3", "cp", "s3://agent-bucket/cli.txt", "-"],
        vec!["iam", "list-users"],
    ] {
        let mut full = vec!["--endpoint-url", endpoint.as_str()];
        full.extend(args.iter().copied());
        let out = run("aws", &full, &env1);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        seen_by_sandboxes.push_str(&text);
        assert!(out.status.success(), "aws {args:?}: {text}");
        match args[1] {
            "list-objects-v2" => assert!(text.contains("\"cli.txt\"") && text.contains("notes/big.bin"), "{text}"),
            "list-users" => assert!(text.contains("\"UserName\": \"agent\""), "{text}"),
            _ if args[2].starts_with("s3://") => assert_eq!(text, "from the aws cli\n"),
            _ => {}
        }
    }

    // The placeholder keys are worthless anywhere but at cordon: straight to moto, refused.
    let mut straight = env1.clone();
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        straight.remove(var);
    }
    let out = run("python3", &[py, "call", &direct, "agent-bucket", "list"], &straight);
    assert_eq!(json(&out)["error"], "InvalidAccessKeyId");

    // Through cordon, anything but this sandbox's own signature is refused before it leaves.
    let (env2, text2) = sandbox(&config, "agent2", "aws");
    seen_by_sandboxes.push_str(&text2);
    let mut others = env1.clone();
    others.insert("AWS_ACCESS_KEY_ID".into(), env2["AWS_ACCESS_KEY_ID"].clone());
    others.insert("AWS_SECRET_ACCESS_KEY".into(), env2["AWS_SECRET_ACCESS_KEY"].clone());
    let refused = |env: &BTreeMap<String, String>, what: &str| -> Value {
        json(&run("python3", &[py, "call", &endpoint, "agent-bucket", what], env))
    };
    let r = refused(&others, "list");
    assert_eq!(
        (r["status"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("credential_exfiltration")),
        "{r}"
    );
    let mut wrong_secret = env1.clone();
    wrong_secret.insert("AWS_SECRET_ACCESS_KEY".into(), "not-the-placeholder".into());
    let r = refused(&wrong_secret, "list");
    assert_eq!(
        (r["status"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("aws_signature_mismatch")),
        "{r}"
    );
    let mut real_in_sandbox = env1.clone();
    real_in_sandbox.insert("AWS_ACCESS_KEY_ID".into(), real_id.into());
    real_in_sandbox.insert("AWS_SECRET_ACCESS_KEY".into(), real_secret.into());
    let r = refused(&real_in_sandbox, "list");
    assert_eq!(
        (r["status"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("aws_signature_key")),
        "the real keys are not this sandbox's: {r}"
    );
    let mut elsewhere = env1.clone();
    elsewhere.insert("AWS_DEFAULT_REGION".into(), "eu-west-1".into());
    let r = refused(&elsewhere, "list");
    assert_eq!(
        (r["status"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("aws_signature_scope")),
        "{r}"
    );
    let r = refused(&env1, "stale");
    assert_eq!(
        (r["error"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("aws_signature_expired")),
        "{r}"
    );
    let r = refused(&env1, "expired");
    assert_eq!(
        (r["error"].as_i64(), r["reason"].as_str()),
        (Some(403), Some("aws_signature_expired")),
        "{r}"
    );
    let curl = |extra: &[&str]| -> String {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--cacert"])
            .arg(&bundle)
            .args(["-x", &env1["HTTPS_PROXY"]])
            .args(extra)
            .arg(format!("{endpoint}/agent-bucket/notes/a.txt"));
        let r = crate::rigs::curl::run(c);
        format!("{} {}", r.status, r.reason())
    };
    assert_eq!(curl(&[]), "403 aws_unsigned");
    assert_eq!(
        curl(&[
            "-H",
            &format!("Authorization: AWS {}:c2lnbmF0dXJl", env1["AWS_ACCESS_KEY_ID"])
        ]),
        "400 aws_signature_unsupported"
    );

    // A presigned URL made with the placeholder keys arrives signed with the real key, and the signature
    // checks out with the real secret.
    let out = run(
        "python3",
        &[
            py,
            "presign",
            &format!("https://presign.test:{q}/agent-bucket/report.txt"),
        ],
        &env1,
    );
    let p = json(&out);
    seen_by_sandboxes.push_str(&p.to_string());
    assert_eq!(p["status"], 200, "{p}");
    let seen = presign_up.seen();
    let arrived = &seen.last().unwrap().uri;
    assert!(arrived.contains(&format!("X-Amz-Credential={real_id}%2F")), "{arrived}");
    assert!(!arrived.contains("cordon-ph-"), "{arrived}");
    assert!(
        presign_signature_holds(arrived, &format!("presign.test:{q}"), real_id, real_secret),
        "{arrived}"
    );

    // A role's keys, from STS through the real key: S3 works, IAM does not (the role may only use S3, where the
    // user's own key may do anything: moto's refusal shows the role's keys signed it).
    let (mut env3, text3) = sandbox(&config, "agent3", "role");
    seen_by_sandboxes.push_str(&text3);
    env3.insert("AWS_DEFAULT_REGION".into(), "us-east-1".into());
    write_bundle("agent3");
    let r = refused(&env3, "list");
    let detail = std::fs::read_to_string(d.join("audit.jsonl")).unwrap_or_default();
    let detail = detail
        .lines()
        .rfind(|l| l.contains("credential_unavailable"))
        .unwrap_or_default();
    assert_eq!(r["error"], Value::Null, "{r} {detail}");
    let r = refused(&env3, "iam");
    assert_eq!(
        (r["error"].as_str(), r["reason"].as_str()),
        (Some("AccessDenied"), None),
        "{r}"
    );

    // The real keys appear nowhere a sandbox looks, nor in cordon's output or audit records.
    let stopped = crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    let audit = std::fs::read_to_string(d.join("audit.jsonl")).unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&stopped.stdout),
        String::from_utf8_lossy(&stopped.stderr)
    );
    for (what, text) in [
        ("the sandboxes", &seen_by_sandboxes),
        ("the audit records", &audit),
        ("cordon's output", &logs),
    ] {
        assert!(!text.contains(real_id), "the real key id in {what}");
        assert!(!text.contains(real_secret), "the real secret in {what}");
    }
    let signed: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["credentials"].as_array().is_some_and(|c| !c.is_empty()))
        .collect();
    assert!(
        signed
            .iter()
            .any(|r| r["credentials"] == serde_json::json!(["aws-keys"]))
    );
    assert!(
        signed
            .iter()
            .any(|r| r["credentials"] == serde_json::json!(["aws-role"]))
    );
}

/// Whether a presigned URL as it arrived carries a signature of it by `secret`.
fn presign_signature_holds(uri: &str, host: &str, key_id: &str, secret: &str) -> bool {
    use aws_sigv4::http_request::{
        PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
        UriPathNormalizationMode,
    };
    let uri: http::Uri = uri.parse().unwrap();
    let (path, query) = (uri.path(), uri.query().unwrap());
    let params: BTreeMap<String, String> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let rest: Vec<&str> = query.split('&').filter(|p| !p.starts_with("X-Amz-")).collect();
    let date = &params["X-Amz-Date"];
    let time = amz_time(date);
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(params["X-Amz-Expires"].parse().unwrap()));
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let identity = aws_credential_types::Credentials::new(key_id, secret, None, None, "test").into();
    let params_sign = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(time)
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let url = if rest.is_empty() {
        format!("https://{host}{path}")
    } else {
        format!("https://{host}{path}?{}", rest.join("&"))
    };
    let signable = SignableRequest::new("GET", url, std::iter::empty(), SignableBody::UnsignedPayload).unwrap();
    let (_, signature) = aws_sigv4::http_request::sign(signable, &params_sign)
        .unwrap()
        .into_parts();
    signature == params["X-Amz-Signature"]
}

fn amz_time(date: &str) -> SystemTime {
    let format = time::format_description::parse_borrowed::<2>("[year][month][day]T[hour][minute][second]Z").unwrap();
    let t = time::PrimitiveDateTime::parse(date, &format).unwrap().assume_utc();
    SystemTime::UNIX_EPOCH + Duration::from_secs(t.unix_timestamp() as u64)
}
