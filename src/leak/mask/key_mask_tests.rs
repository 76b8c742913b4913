#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const TOKEN: &str = "FwoGZXIvYXdzEBYaDkiOiJ+IQoJb3JpZ2luX2VjEHUaCXVzLWVhc3QtMSJHMEUCIQ==";

/// `text` masked when it arrives in pieces of `n` bytes.
fn masked(text: &str, n: usize) -> String {
    let mut m = KeyMask::of(Fields::Aws);
    let mut out = Vec::new();
    for piece in text.as_bytes().chunks(n.max(1)) {
        out.extend(m.push(piece));
    }
    out.extend(m.finish());
    String::from_utf8(out).unwrap()
}

fn every_split(text: &str) -> String {
    let whole = masked(text, text.len());
    for n in 1..24 {
        assert_eq!(masked(text, n), whole, "in pieces of {n}");
    }
    whole
}

#[test]
fn sts_xml_keeps_its_shape_and_loses_its_secrets() {
    let xml = format!(
        "<GetSessionTokenResponse><GetSessionTokenResult><Credentials>\
         <AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId><SecretAccessKey>{SECRET}</SecretAccessKey>\
         <SessionToken>{TOKEN}</SessionToken><Expiration>2026-12-02T18:00:00Z</Expiration>\
         </Credentials></GetSessionTokenResult></GetSessionTokenResponse>"
    );
    let out = every_split(&xml);
    assert!(!out.contains(SECRET) && !out.contains(TOKEN), "{out}");
    assert!(
        out.contains("<SecretAccessKey>masked-by-cordon</SecretAccessKey>"),
        "{out}"
    );
    assert!(out.contains("<SessionToken>masked-by-cordon</SessionToken>"), "{out}");
    assert!(out.contains("<AccessKeyId>ASIAIOSFODNN7EXAMPLE</AccessKeyId>"), "{out}");
}

#[test]
fn json_in_any_case_and_spacing_is_masked() {
    for json in [
        format!(r#"{{"Credentials":{{"AccessKeyId":"ASIA1","SecretKey":"{SECRET}","SessionToken":"{TOKEN}"}}}}"#),
        format!("{{\"roleCredentials\": {{\"secretAccessKey\" :\n \"{SECRET}\", \"sessionToken\"\t:\"{TOKEN}\"}}}}"),
        format!(r#"{{"AccessKey":{{"SECRETACCESSKEY":"{SECRET}","x":"\"{TOKEN}"}}}}"#),
        format!(r#"{{"authorizationData":[{{"authorizationToken":"{SECRET}"}}],"DbPassword":"{TOKEN}"}}"#),
    ] {
        let out = every_split(&json);
        assert!(!out.contains(SECRET), "{out}");
        assert!(out.contains("masked-by-cordon"), "{out}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
    }
}

#[test]
fn an_escaped_quote_does_not_end_a_json_value() {
    let json = r#"{"SessionToken":"abc\"SECRETPART","next":1}"#;
    assert_eq!(every_split(json), r#"{"SessionToken":"masked-by-cordon","next":1}"#);
}

#[test]
fn xml_attributes_and_cdata_are_masked_and_look_alikes_are_not() {
    let xml = format!("<SecretAccessKey xmlns=\"x\"><![CDATA[{SECRET}]]></SecretAccessKey>");
    assert_eq!(
        every_split(&xml),
        "<SecretAccessKey xmlns=\"x\">masked-by-cordon</SecretAccessKey>"
    );
    for kept in [
        "<SecretAccessKeyId>keep</SecretAccessKeyId>",
        "<SecretAccessKey/>",
        r#"{"SessionTokenId":"keep"}"#,
        r#"{"SessionToken":null}"#,
        "sessiontoken: keep",
        "my_aws_secret_access_key=keep",
    ] {
        assert_eq!(every_split(kept), kept);
    }
}

#[test]
fn credentials_files_are_masked() {
    let ini = format!(
        "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = {SECRET}\naws_session_token={TOKEN}\n"
    );
    let out = every_split(&ini);
    assert_eq!(
        out,
        "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = masked-by-cordon\naws_session_token=masked-by-cordon\n"
    );
    let env = format!("export AWS_SECRET_ACCESS_KEY=\"{SECRET}\"\n");
    assert_eq!(every_split(&env), "export AWS_SECRET_ACCESS_KEY=\"masked-by-cordon\"\n");
}

#[test]
fn a_value_cut_off_by_the_end_is_masked_and_plain_text_passes_at_once() {
    assert_eq!(
        every_split(&format!("<SessionToken>{TOKEN}")),
        "<SessionToken>masked-by-cordon"
    );
    let mut m = KeyMask::of(Fields::Aws);
    // Nothing that could begin a field is held back.
    assert_eq!(
        m.push(b"data: {\"delta\": \"hello\"}\n\n"),
        b"data: {\"delta\": \"hello\"}\n\n"
    );
    // A tail that could is, until the next bytes say it is not.
    assert_eq!(m.push(b"x <Sess"), b"x ");
    assert_eq!(m.push(b"ionLength>1"), b"<SessionLength>1");
}

fn tokens(text: &str) -> String {
    let whole = {
        let mut m = KeyMask::of(Fields::Tokens);
        let mut out = m.push(text.as_bytes());
        out.extend(m.finish());
        String::from_utf8(out).unwrap()
    };
    for n in 1..24 {
        let mut m = KeyMask::of(Fields::Tokens);
        let mut out = Vec::new();
        for piece in text.as_bytes().chunks(n) {
            out.extend(m.push(piece));
        }
        out.extend(m.finish());
        assert_eq!(String::from_utf8(out).unwrap(), whole, "in pieces of {n}");
    }
    whole
}

#[test]
fn github_and_oauth2_tokens_are_masked_in_json_and_forms() {
    let json = r#"{"token": "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "expires_at": "2030-01-01T00:00:00Z", "Access_Token":"gho_x", "refresh_token" : "ghr_y", "id_token": "eyJ\"z", "pem": "-----BEGIN RSA PRIVATE KEY-----\nMII", "client_secret": "s", "webhook_secret": "w", "encoded_jit_config": "e", "device_code": "d", "user_code": "WDJB-MJHT", "tokens": "kept"}"#;
    assert_eq!(
        tokens(json),
        r#"{"token": "masked-by-cordon", "expires_at": "2030-01-01T00:00:00Z", "Access_Token":"masked-by-cordon", "refresh_token" : "masked-by-cordon", "id_token": "masked-by-cordon", "pem": "masked-by-cordon", "client_secret": "masked-by-cordon", "webhook_secret": "masked-by-cordon", "encoded_jit_config": "masked-by-cordon", "device_code": "masked-by-cordon", "user_code": "WDJB-MJHT", "tokens": "kept"}"#
    );
    assert_eq!(
        tokens("access_token=gho_16C7e42F&scope=repo&refresh_token=ghr_1&token_type=bearer"),
        "access_token=masked-by-cordon&scope=repo&refresh_token=masked-by-cordon&token_type=bearer"
    );
    // AWS fields are not token fields, nor the other way round.
    assert_eq!(tokens(r#"{"SecretAccessKey": "k"}"#), r#"{"SecretAccessKey": "k"}"#);
    assert_eq!(every_split(r#"{"token": "t"}"#), r#"{"token": "t"}"#);
}
