#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn the_form_is_encoded_as_aws_sdks_encode_it() {
    let policy = r#"{"Statement":[{"Action":"s3:*","Resource":"*"}]}"#;
    assert_eq!(
        form_encode(&[
            ("Action", "AssumeRole"),
            ("Policy", policy),
            ("RoleSessionName", "a.b-c_d~e f")
        ]),
        "Action=AssumeRole&Policy=%7B%22Statement%22%3A%5B%7B%22Action%22%3A%22s3%3A%2A%22%2C%22Resource%22%3A%22%2A%22%7D%5D%7D\
         &RoleSessionName=a.b-c_d~e%20f"
    );
}

#[test]
fn answers_and_refusals_are_read_from_aws_xml() {
    let ok = r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
        <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn><AssumedRoleId>X:s</AssumedRoleId></AssumedRoleUser>
        <Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>secret</SecretAccessKey>
        <SessionToken>token</SessionToken><Expiration>2026-12-01T21:00:00Z</Expiration></Credentials>
        </AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleResponse>"#;
    let r: AssumeRoleResponse = quick_xml::de::from_str(ok).unwrap();
    assert_eq!(r.assume_role_result.credentials.access_key_id, "ASIAEXAMPLE");
    assert_eq!(r.assume_role_result.credentials.expiration, "2026-12-01T21:00:00Z");
    for refusal in [
        "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>no</Message></Error></ErrorResponse>",
        "<ErrorResponse><Errors><Error><Code>AccessDenied</Code><Message>no</Message></Error></Errors></ErrorResponse>",
    ] {
        let e: StsErrorResponse = quick_xml::de::from_str(refusal).unwrap();
        let e = e.error.or(e.errors.map(|e| e.error)).unwrap();
        assert_eq!(
            (e.code.as_deref(), e.message.as_deref()),
            (Some("AccessDenied"), Some("no"))
        );
    }
}
