#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

fn parts(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

fn sts() -> Vec<String> {
    services("sts", None, "sts.amazonaws.com")
}

#[test]
fn the_query_actions_are_found_in_every_spelling() {
    for query in [
        "Action=GetSessionToken&Version=2011-06-15",
        "action=GetSessionToken",
        "ACTION=getsessiontoken",
        "%41ction=%47etSessionToken",
        "Action=Get%53ession%54oken",
        "Version=1&Action=GetCallerIdentity&Action=GetSessionToken",
        "Action=+GetSessionToken+",
        "Action=GetSessionToken%20",
        "&&Action=GetSessionToken&",
    ] {
        let p = parts("GET", &format!("/?{query}"), &[]);
        assert_eq!(refused(&p, None, &sts(), &[]), Some("sts:GetSessionToken"), "{query}");
    }
    // Encoded twice is another name to STS, as to cordon.
    let p = parts("GET", "/?Action=Get%2553essionToken", &[]);
    assert_eq!(refused(&p, None, &sts(), &[]), None);
}

#[test]
fn a_form_body_is_read_as_the_query_is() {
    for body in [
        "Action=AssumeRole&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fx&RoleSessionName=s",
        "RoleSessionName=s&action=assumerole",
        "Action=ListRoles&Action=AssumeRole",
        "%41ction=AssumeRole",
    ] {
        let p = parts("POST", "/", &[("content-type", "application/x-www-form-urlencoded")]);
        assert_eq!(
            refused(&p, Some(body.as_bytes()), &sts(), &[]),
            Some("sts:AssumeRole"),
            "{body}"
        );
    }
    let p = parts("POST", "/", &[]);
    assert_eq!(refused(&p, Some(b"Action=GetCallerIdentity"), &sts(), &[]), None);
}

#[test]
fn iam_actions_are_refused_and_others_pass() {
    let iam = services("iam", None, "iam.amazonaws.com");
    for (action, call) in [
        ("CreateAccessKey", "iam:CreateAccessKey"),
        ("CreateLoginProfile", "iam:CreateLoginProfile"),
        ("UpdateLoginProfile", "iam:UpdateLoginProfile"),
        ("CreateServiceSpecificCredential", "iam:CreateServiceSpecificCredential"),
        ("ResetServiceSpecificCredential", "iam:ResetServiceSpecificCredential"),
        ("UploadSSHPublicKey", "iam:UploadSSHPublicKey"),
    ] {
        let p = parts("POST", "/", &[]);
        let body = format!("Action={action}&UserName=agent");
        assert_eq!(refused(&p, Some(body.as_bytes()), &iam, &[]), Some(call));
    }
    let p = parts("POST", "/", &[]);
    assert_eq!(refused(&p, Some(b"Action=ListUsers"), &iam, &[]), None);
}

#[test]
fn a_named_action_is_allowed_and_only_that_one() {
    let p = parts("GET", "/?Action=AssumeRole", &[]);
    assert_eq!(refused(&p, None, &sts(), &["sts:AssumeRole"]), None);
    assert_eq!(refused(&p, None, &sts(), &["STS:assumerole"]), None);
    let p = parts("GET", "/?Action=AssumeRole&Action=GetSessionToken", &[]);
    assert_eq!(
        refused(&p, None, &sts(), &["sts:AssumeRole"]),
        Some("sts:GetSessionToken")
    );
}

#[test]
fn json_protocol_targets_are_read_from_the_header() {
    let cases = [
        (
            "cognito-identity",
            "AWSCognitoIdentityService.GetCredentialsForIdentity",
            "cognito-identity:GetCredentialsForIdentity",
        ),
        (
            "ecr",
            "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken",
            "ecr:GetAuthorizationToken",
        ),
        (
            "redshift-serverless",
            "RedshiftServerless.GetCredentials",
            "redshift-serverless:GetCredentials",
        ),
        ("ssm", "AmazonSSM.StartSession", "ssm:StartSession"),
        ("sts", "AWSSecurityTokenServiceV20110615.AssumeRole", "sts:AssumeRole"),
    ];
    for (service, target, call) in cases {
        let p = parts("POST", "/", &[("x-amz-target", target)]);
        let s = services(service, None, "example.test");
        assert_eq!(refused(&p, Some(b"{}"), &s, &[]), Some(call), "{target}");
    }
    let p = parts("POST", "/", &[("x-amz-target", "AmazonSSM.GetParameter")]);
    assert_eq!(refused(&p, Some(b"{}"), &services("ssm", None, "x"), &[]), None);
}

#[test]
fn rest_actions_are_read_from_the_method_and_path() {
    let ca = services("codeartifact", None, "codeartifact.us-east-1.amazonaws.com");
    for path in [
        "/v1/authorization-token?domain=d",
        "/v1//authorization-token",
        "/v1/x/../authorization-token",
        "/V1/Authorization-Token/",
        "/v1/authorization%2Dtoken",
    ] {
        let p = parts("POST", path, &[]);
        assert_eq!(
            refused(&p, Some(b""), &ca, &[]),
            Some("codeartifact:GetAuthorizationToken"),
            "{path}"
        );
    }
    let p = parts("GET", "/v1/authorization-token", &[]);
    assert_eq!(refused(&p, Some(b""), &ca, &[]), None);
    let p = parts("POST", "/v1/apis/abc/apikeys", &[]);
    assert_eq!(
        refused(&p, Some(b""), &services("appsync", None, "x"), &[]),
        Some("appsync:CreateApiKey")
    );
}

#[test]
fn the_service_is_the_scope_the_pin_and_the_host() {
    assert_eq!(
        services("ecr", None, "api.ecr.us-east-1.amazonaws.com:443"),
        ["api", "ecr", "us-east-1"]
    );
    // Signed for S3 but sent to STS: STS's actions still count.
    let s = services("s3", None, "STS.amazonaws.com.");
    assert!(mints(&s));
    let p = parts("GET", "/?Action=GetSessionToken", &[]);
    assert_eq!(refused(&p, None, &s, &[]), Some("sts:GetSessionToken"));
    // A pinned service counts too, and a plain S3 request mints nothing.
    assert!(mints(&services("s3", Some("iam"), "moto.test")));
    // S3's calls that grant access are its method, path and query: its bodies (uploads) are never read for them.
    let s3 = services("s3", None, "bucket.s3.us-east-1.amazonaws.com");
    assert!(mints(&s3) && !reads_body(&s3) && reads_body(&s));
    assert_eq!(refused(&parts("PUT", "/key?x=1", &[]), None, &s3, &[]), None);
    for (method, path) in [
        ("PUT", "/?policy"),
        ("put", "/b?Policy="),
        ("PUT", "/b/a/b/c?acl"),
        ("PUT", "/%3Facl?ACL"),
    ] {
        assert!(
            refused(&parts(method, path, &[]), None, &s3, &[]).is_some(),
            "{method} {path}"
        );
    }
    assert_eq!(
        refused(&parts("PUT", "/b?acl", &[]), None, &s3, &["s3:PutBucketAcl"]),
        Some("s3:PutObjectAcl"),
        "a bucket's ?acl is not told from an object's"
    );
    let p = parts("GET", "/?Action=GetSessionToken", &[]);
    assert_eq!(refused(&p, None, &services("s3", None, "moto.test"), &[]), None);
}
