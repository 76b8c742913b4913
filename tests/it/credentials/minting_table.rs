//! The book's minting table (docs/src/credentials/minting.md), row by row, through the `cordon` binary: the table
//! names exactly the calls cordon knows (what `cordon check` lists for an unknown `allow_minting` name), every
//! GitHub row's call is refused 403 `credential_minting` in every spelling GitHub routes alike and reaches nothing,
//! and every AWS row's call, made by boto3 the way botocore writes that service's calls (query, JSON with
//! `X-Amz-Target`, REST), is refused before moto sees it; the lasting-access rows by hand too, in each protocol form.

use std::collections::BTreeSet;

use crate::credentials::aws_minting::{refused_as, rig as aws_rig};
use crate::rigs::aws::{agent, json, run};
use crate::rigs::minting::rig;

const BOOK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/credentials/minting.md");

/// The rows of the book's tables: (`allow_minting` name, the second column, without backticks).
fn rows() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(BOOK).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("| `"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells[0].strip_suffix('`')?;
            name.contains(':')
                .then(|| (name.to_string(), cells[1].trim_matches('`').to_string()))
        })
        .collect()
}

fn names(prefix: &dyn Fn(&str) -> bool) -> BTreeSet<String> {
    rows().into_iter().map(|(n, _)| n).filter(|n| prefix(n)).collect()
}

/// What `cordon check` says the credentials of this kind may name, read from its error for an unknown name.
fn known(source: &str, bind: &str) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cordon.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: {{ proxy: 127.0.0.1:1 }}\ncredentials:\n  c:\n    source: {source}\n    bind: {{ hosts: [{bind}] }}\n    \
             allow_minting: [no:such_call]\n"
        ),
    )
    .unwrap();
    let (out, err) = crate::rigs::process::check_summary(&config, &[("K", "AKIAEXAMPLE"), ("S", "secretsecret")]);
    let text = format!("{out}{err}");
    let list = text
        .split("for this credential: ")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    list.lines()
        .next()
        .unwrap()
        .split(", ")
        .map(|s| s.trim().to_string())
        .collect()
}

#[test]
fn the_book_lists_exactly_the_calls_cordon_refuses() {
    let aws = known(
        "{ aws: { access_key_id: { env: K }, secret_access_key: { env: S } } }",
        "moto.test",
    );
    assert_eq!(
        names(&|n| !n.starts_with("github:") && !n.starts_with("oauth2:")),
        aws,
        "the book's AWS table and cordon's AWS calls"
    );
    let github: BTreeSet<String> = known("{ env: S }", "api.github.com")
        .into_iter()
        .filter(|n| n.starts_with("github:"))
        .collect();
    assert_eq!(names(&|n| n.starts_with("github:")), github);
}

/// A GitHub row's call with concrete owners, repositories, users and ids.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').unwrap() + open;
        out.push_str(match &rest[open + 1..close] {
            "o" | "org" => "octo-org",
            "r" | "repo" => "hello",
            "user" => "mallory",
            _ => "42",
        });
        rest = &rest[close + 1..];
    }
    out + rest
}

#[tokio::test(flavor = "multi_thread")]
async fn every_github_row_is_refused_in_every_spelling() {
    let r = rig().await;
    let calls: Vec<(String, String)> = rows()
        .into_iter()
        .filter(|(n, _)| n.starts_with("github:"))
        .map(|(_, call)| {
            let (method, path) = call.split_once(' ').unwrap();
            (method.to_string(), concrete(path))
        })
        .collect();
    assert!(calls.len() >= 44, "{calls:?}");
    for (method, path) in &calls {
        let encoded = path.replacen('e', "%65", 1).replacen('o', "%6F", 1);
        for (host, spelt) in [
            ("api.github.com", path.clone()),
            ("api.github.com", path.to_ascii_uppercase()),
            ("api.github.com", encoded),
            ("api.github.com", format!("{path}/")),
            ("api.github.com", path.replacen('/', "//", 1)),
            ("ghe.test", format!("/api/v3{path}")),
            ("ghe.test", format!("/API/V3{}/", path.to_ascii_uppercase())),
        ] {
            for (m, h2) in [(method.clone(), false), (method.to_ascii_lowercase(), true)] {
                let got = r.curl("plain", (&m, host, &spelt), "{}", "application/json", h2);
                assert_eq!(
                    (got.status, got.reason.as_str()),
                    (403, "credential_minting"),
                    "{m} {host}{spelt}: {got:?}"
                );
            }
        }
    }
    assert!(
        r.reached().is_empty(),
        "a refused call reached GitHub: {:?}",
        r.reached()
    );
    for needle in [
        "github:collaborators through credential gh",
        "github:transfers through credential ghe",
        "github:members through credential gh",
    ] {
        r.audit_once(needle, |a| a.contains(needle));
    }
    // Reading who has access is no grant: it still goes.
    let got = r.curl(
        "plain",
        ("GET", "api.github.com", "/repos/o/r/collaborators"),
        "",
        "",
        false,
    );
    assert_eq!(got.status, 200, "{got:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_aws_row_is_refused_as_botocore_sends_it() {
    let r = aws_rig().await;
    let aws: Vec<String> = names(&|n| !n.starts_with("github:") && !n.starts_with("oauth2:"))
        .into_iter()
        .collect();
    let mut args = vec!["table", r.endpoint.as_str()];
    args.extend(aws.iter().map(String::as_str));
    let results = json(&run(
        "python3",
        &[&[agent().to_str().unwrap()][..], &args].concat(),
        &r.plain,
    ));
    let mut tried = 0;
    let mut skipped = Vec::new();
    for got in results.as_array().unwrap() {
        let name = got["name"].as_str().unwrap();
        if let Some(why) = got["skipped"].as_str() {
            skipped.push((name.to_string(), why.to_string()));
            continue;
        }
        refused_as(got, "credential_minting", name);
        tried += 1;
    }
    // What is no signed call: the web-identity, SAML and identity-pool calls and the SSO portal's (unsigned, so
    // no key is injected into them), and rds-db:connect (a presigned token).
    let unsigned: Vec<&str> = skipped.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        unsigned,
        [
            "cognito-identity:GetCredentialsForIdentity",
            "cognito-identity:GetOpenIdToken",
            "rds-db:connect",
            "sso:GetRoleCredentials",
            "sts:AssumeRoleWithSAML",
            "sts:AssumeRoleWithWebIdentity",
        ],
        "{skipped:?}"
    );
    assert_eq!(tried, aws.len() - unsigned.len());
    // The lasting-access rows written by hand, signed as written: the query, a form body, JSON targets,
    // any case; S3's subresources path-style and virtual-hosted, in any case, with and without a value; a
    // REST path in another case.
    let form = "Content-Type:application/x-www-form-urlencoded";
    let json11 = "Content-Type:application/x-amz-json-1.1";
    let role = "RoleName=agent-s3&PolicyDocument=%7B%7D&Version=2010-05-08";
    for (service, method, path, query, body, headers) in [
        (
            "iam",
            "GET",
            "",
            format!("Action=UpdateAssumeRolePolicy&{role}"),
            "-".to_string(),
            vec![],
        ),
        (
            "iam",
            "GET",
            "",
            format!("ACTION=updateassumerolepolicy&{role}"),
            "-".into(),
            vec![],
        ),
        (
            "iam",
            "POST",
            "",
            "-".into(),
            format!("%41ction=UpdateAssumeRolePolicy&{role}"),
            vec![form],
        ),
        (
            "iam",
            "POST",
            "",
            "-".into(),
            format!("Action=GetUser&Action=CreateRole&{role}"),
            vec![form],
        ),
        (
            "kms",
            "POST",
            "",
            "-".into(),
            "{}".into(),
            vec![json11, "X-Amz-Target:TrentService.PutKeyPolicy"],
        ),
        (
            "sso",
            "POST",
            "",
            "-".into(),
            "{}".into(),
            vec![json11, "X-Amz-Target:SWBExternalService.createaccountassignment"],
        ),
        ("s3", "PUT", "", "policy".into(), "{}".into(), vec![]),
        ("s3", "PUT", "/agent-bucket", "Policy=".into(), "{}".into(), vec![]),
        ("s3", "PUT", "/agent-bucket/a/b.txt", "ACL".into(), "-".into(), vec![]),
        (
            "lambda",
            "POST",
            "/2015-03-31/FUNCTIONS/f/Policy",
            "-".into(),
            "{}".into(),
            vec![],
        ),
        ("sso-oauth", "POST", "/token", "aws_iam=t".into(), "{}".into(), vec![]),
    ] {
        let url = format!("{}{path}", r.endpoint);
        let mut args = vec!["raw", service, method, query.as_str(), body.as_str()];
        args.extend(headers.iter().copied());
        let got = json(&run(
            "python3",
            &[&[agent().to_str().unwrap(), args[0], url.as_str()][..], &args[1..]].concat(),
            &r.plain,
        ));
        refused_as(
            &got,
            "credential_minting",
            &format!("{service} {method} {path}?{query} {body}"),
        );
    }
    // A named call goes through: the role's trust is changed on moto, and only through the credential that
    // names it.
    let trust = r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "sts:AssumeRole"}]}"#;
    let body = form_urlencoded::Serializer::new(String::new())
        .append_pair("Action", "UpdateAssumeRolePolicy")
        .append_pair("RoleName", "agent-s3")
        .append_pair("PolicyDocument", trust)
        .append_pair("Version", "2010-05-08")
        .finish();
    let got = json(&run(
        "python3",
        &[agent().to_str().unwrap(), "raw", &r.endpoint, "iam", "POST", "-", &body],
        &r.mint,
    ));
    assert_eq!(got["status"], 200, "{got}");
    r.audit_once("the allowed call audited", |a| {
        a.contains("iam:UpdateAssumeRolePolicy through credential aws-plain")
    });
}
