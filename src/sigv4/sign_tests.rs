#![expect(clippy::unwrap_used, reason = "tests")]

use std::time::{Duration, SystemTime};

use secrecy::SecretString;

use super::*;
use crate::sigv4::signature::read;

/// AWS's own example (IAM ListUsers, "Create a signed AWS API request" in the IAM user guide).
fn example() -> (Parts, AwsKeys) {
    let parts = http::Request::get("/?Action=ListUsers&Version=2010-05-08")
        .header("host", "iam.amazonaws.com")
        .header("content-type", "application/x-www-form-urlencoded; charset=utf-8")
        .header("x-amz-date", "20150830T123600Z")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        )
        .body(())
        .unwrap()
        .into_parts()
        .0;
    let keys = AwsKeys {
        id: "AKIDEXAMPLE".into(),
        secret: SecretString::from("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        token: None,
    };
    (parts, keys)
}

#[test]
fn signing_the_request_as_received_gives_the_signature_it_carries() {
    let (parts, keys) = example();
    let signed = read(&parts).unwrap().unwrap();
    let request = canonical(&parts, &signed, "iam.amazonaws.com").unwrap();
    let made = sign(
        &request,
        &keys,
        ("us-east-1", "iam"),
        signed.time,
        signed.location,
        &Payload::Bytes(b""),
    )
    .unwrap();
    assert!(same(&made.signature, &signed.signature), "{}", made.signature);
}

#[test]
fn any_change_or_other_key_gives_another_signature() {
    let (parts, keys) = example();
    let signed = read(&parts).unwrap().unwrap();
    let request = canonical(&parts, &signed, "iam.amazonaws.com").unwrap();
    let scope = ("us-east-1", "iam");
    let other_key = AwsKeys {
        secret: SecretString::from("another"),
        ..keys.clone()
    };
    let made = sign(
        &request,
        &other_key,
        scope,
        signed.time,
        signed.location,
        &Payload::Bytes(b""),
    )
    .unwrap();
    assert!(!same(&made.signature, &signed.signature));
    let body = sign(
        &request,
        &keys,
        scope,
        signed.time,
        signed.location,
        &Payload::Bytes(b"x"),
    )
    .unwrap();
    assert!(!same(&body.signature, &signed.signature), "the body is covered");
    let later = signed.time + Duration::from_secs(1);
    let made = sign(&request, &keys, scope, later, signed.location, &Payload::Bytes(b"")).unwrap();
    assert!(!same(&made.signature, &signed.signature), "the time is covered");
    let mut moved = request.clone();
    moved.uri = "https://iam.amazonaws.com/?Action=DeleteUser&Version=2010-05-08".into();
    let made = sign(&moved, &keys, scope, signed.time, signed.location, &Payload::Bytes(b"")).unwrap();
    assert!(!same(&made.signature, &signed.signature), "the query is covered");
}

#[test]
fn a_session_token_is_signed_and_set() {
    let (parts, mut keys) = example();
    keys.token = Some(SecretString::from("session"));
    let signed = read(&parts).unwrap().unwrap();
    let request = canonical(&parts, &signed, "iam.amazonaws.com").unwrap();
    let made = sign(
        &request,
        &keys,
        ("us-east-1", "iam"),
        SystemTime::now(),
        signed.location,
        &Payload::Bytes(b""),
    )
    .unwrap();
    let names: Vec<&str> = made.headers.iter().map(|h| h.0).collect();
    assert!(names.contains(&"x-amz-security-token"), "{names:?}");
    let auth = &made.headers.iter().find(|h| h.0 == "authorization").unwrap().1;
    assert!(
        auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
        "{auth}"
    );
}

#[test]
fn only_a_presigned_signatures_own_parameters_are_taken_out_of_a_query() {
    assert_eq!(
        unsigned_query("a=1&X-Amz-Signature=ff&b=%20x&X-Amz-Credential=K%2F1&X%2DAmz%2DDate=1&c"),
        "a=1&b=%20x&c"
    );
}
