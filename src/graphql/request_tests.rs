#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

const Q: &str = "{ issues { number } }";

fn post(content_type: &str, body: &str) -> Result<(Vec<Params>, bool), String> {
    read(&Method::POST, None, Some(content_type), body.as_bytes())
}

fn get(query: &str) -> Result<(Vec<Params>, bool), String> {
    read(&Method::GET, Some(query), None, b"")
}

#[test]
fn every_way_of_sending_reads_the_same_request() {
    let want = Params {
        query: Some(Q.into()),
        operation_name: Some("Issues".into()),
        hash: None,
    };
    let json = format!(
        r#"{{"query":{Q:?},"operationName":"Issues","variables":{{"n":1}},"extensions":{{"clientLibrary":{{"name":"x"}}}}}}"#
    );
    assert_eq!(post("application/json", &json).unwrap(), (vec![want.clone()], false));
    assert_eq!(
        post("Application/JSON; charset=utf-8", &json).unwrap(),
        (vec![want.clone()], false)
    );
    assert_eq!(post("application/graphql+json", &json).unwrap().0, vec![want.clone()]);
    let encoded = "query=%7B%20issues%20%7B%20number%20%7D%20%7D&operationName=Issues&variables=%7B%7D";
    assert_eq!(get(encoded).unwrap(), (vec![want.clone()], false));
    assert_eq!(
        get(&encoded.replace("%20", "+")).unwrap().0,
        vec![want.clone()],
        "+ is a space"
    );
    assert_eq!(
        get(&encoded.replace("query=", "%71uery=")).unwrap().0,
        vec![want.clone()],
        "names are decoded too"
    );
    assert_eq!(
        post("application/x-www-form-urlencoded", encoded).unwrap().0,
        vec![want.clone()]
    );
    let doc = post("application/graphql", Q).unwrap().0;
    assert_eq!(doc[0].query.as_deref(), Some(Q));
    // Parameters no server reads (a cache-buster) pass in a URL; an empty operationName is none.
    let plain = get("query=%7Ba%7D&_=123&operationName=").unwrap().0;
    assert_eq!(
        (plain[0].query.as_deref(), plain[0].operation_name.as_deref()),
        (Some("{a}"), None)
    );
}

#[test]
fn a_batch_is_every_request_of_it() {
    let (items, batch) = post(
        "application/json",
        r#"[{"query":"{a}"},{"query":"mutation{b}","operationName":null}]"#,
    )
    .unwrap();
    assert!(batch);
    assert_eq!(items.len(), 2);
    assert_eq!(items[1].query.as_deref(), Some("mutation{b}"));
    assert!(post("application/json", "[]").unwrap_err().contains("empty batch"));
    let many = format!("[{}]", vec![r#"{"query":"{a}"}"#; 65].join(","));
    assert!(post("application/json", &many).unwrap_err().contains("at most 64"));
    let e = post("application/json", r#"[{"query":"{a}"},{"query":"{b}","id":"x"}]"#).unwrap_err();
    assert!(e.starts_with("request 1 of the batch"), "{e}");
}

#[test]
fn a_parameter_written_twice_anywhere_is_refused() {
    // SECURITY: the family of "two values for one parameter": JSON members (at any depth), URL pairs, the URL
    // and the body at once.
    for body in [
        r#"{"query":"{a}","query":"mutation{b}"}"#,
        r#"{"query":"{a}","operationName":"A","operationName":"B"}"#,
        r#"{"query":"{a}","variables":{"x":1,"x":2}}"#,
        r#"[{"query":"{a}"},{"query":"{a}","extensions":{"persistedQuery":{"version":1,"version":1}}}]"#,
    ] {
        assert!(post("application/json", body).unwrap_err().contains("twice"), "{body}");
    }
    for q in [
        "query=%7Ba%7D&query=mutation%7Bb%7D",
        "query=%7Ba%7D&%71uery=x",
        "query=%7Ba%7D&operationName=A&operationName=B",
    ] {
        assert!(get(q).unwrap_err().contains("twice"), "{q}");
    }
    let e = read(
        &Method::POST,
        Some("query=mutation%7Bb%7D"),
        Some("application/json"),
        br#"{"query":"{a}"}"#,
    )
    .unwrap_err();
    assert!(e.contains("in its URL"), "{e}");
    // Other URL parameters beside a POST are no one's document.
    assert!(
        read(
            &Method::POST,
            Some("trace=1"),
            Some("application/json"),
            br#"{"query":"{a}"}"#
        )
        .is_ok()
    );
    assert!(get("query=%7Ba%7D;query=mutation%7Bb%7D").unwrap_err().contains("';'"));
}

#[test]
fn what_cordon_cannot_read_as_a_server_would_is_refused() {
    for (ct, body, says) in [
        ("application/json", r#"{"query":"{a}","mutation":"x"}"#, "unknown field"),
        ("application/json", r#"{"query":1}"#, "not a GraphQL request"),
        (
            "application/json",
            r#"{"query":"{a}","variables":[1]}"#,
            "not a GraphQL request",
        ),
        ("application/json", r#""{a}""#, "a JSON object"),
        ("application/json", "{a}", "not a GraphQL request"),
        ("multipart/form-data; boundary=x", "--x--", "multipart/form-data"),
        ("text/plain", "{a}", "text/plain"),
        ("", "{a}", "without a Content-Type"),
    ] {
        let e = if ct.is_empty() {
            read(&Method::POST, None, None, body.as_bytes()).unwrap_err()
        } else {
            post(ct, body).unwrap_err()
        };
        assert!(e.contains(says), "{ct} {body}: {e}");
    }
    assert!(
        read(&Method::PUT, None, Some("application/json"), br#"{"query":"{a}"}"#)
            .unwrap_err()
            .contains("GET and POST")
    );
    assert!(
        read(&Method::GET, Some("query=%7Ba%7D"), None, b"{}")
            .unwrap_err()
            .contains("with a body")
    );
    assert!(
        get("query=%7Ba%7D&variables=%5B1%5D")
            .unwrap_err()
            .contains("not a JSON object")
    );
    assert!(
        post("application/graphql", "\u{ff}").is_ok(),
        "UTF-8 text is a document (which parses or not later)"
    );
    assert!(
        read(&Method::POST, None, Some("application/graphql"), &[0xff, 0xfe])
            .unwrap_err()
            .contains("UTF-8")
    );
}

#[test]
fn stored_documents_are_read_only_as_automatic_persisted_queries() {
    let hash = "a".repeat(64);
    let body = format!(r#"{{"extensions":{{"persistedQuery":{{"version":1,"sha256Hash":"{hash}"}}}}}}"#);
    let p = post("application/json", &body).unwrap().0;
    assert_eq!(
        (p[0].query.as_deref(), p[0].hash.as_deref()),
        (None, Some(hash.as_str()))
    );
    let url =
        format!("extensions=%7B%22persistedQuery%22%3A%7B%22version%22%3A1%2C%22sha256Hash%22%3A%22{hash}%22%7D%7D");
    assert_eq!(get(&url).unwrap().0[0].hash.as_deref(), Some(hash.as_str()));
    for bad in [
        format!(r#"{{"extensions":{{"persistedQuery":{{"version":2,"sha256Hash":"{hash}"}}}}}}"#),
        format!(
            r#"{{"extensions":{{"persistedQuery":{{"version":1,"sha256Hash":"{}"}}}}}}"#,
            "A".repeat(64)
        ),
        r#"{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}"#.to_owned(),
        format!(r#"{{"extensions":{{"persistedQuery":{{"version":1,"sha256Hash":"{hash}","x":1}}}}}}"#),
    ] {
        assert!(
            post("application/json", &bad).unwrap_err().contains("persistedQuery"),
            "{bad}"
        );
    }
    // SECURITY: every parameter a server reads a stored document's id from is refused, in a body and a URL.
    for k in PERSISTED_IDS {
        let e = post("application/json", &format!(r#"{{"{k}":"x"}}"#)).unwrap_err();
        assert!(e.contains("stored on the server"), "{k}: {e}");
        assert!(
            get(&format!("{k}=x")).unwrap_err().contains("stored on the server"),
            "{k}"
        );
        let e = read(
            &Method::POST,
            Some(&format!("{k}=x")),
            Some("application/json"),
            br#"{"query":"{a}"}"#,
        )
        .unwrap_err();
        assert!(e.contains("in its URL"), "{k}: {e}");
    }
}

#[test]
fn a_form_of_a_hundred_thousand_pairs_is_read_in_one_pass() {
    let pairs: Vec<String> = (0..100_000).map(|i| format!("k{i}=")).collect();
    let form = format!("query=%7Ba%7D&{}", pairs.join("&"));
    assert_eq!(
        post("application/x-www-form-urlencoded", &form).unwrap().0[0]
            .query
            .as_deref(),
        Some("{a}")
    );
    let twice = format!("{form}&k99999=x");
    assert!(
        post("application/x-www-form-urlencoded", &twice)
            .unwrap_err()
            .contains("\"k99999\" twice")
    );
}

#[test]
fn a_member_of_the_wrong_shape_is_named_in_graphql_words_not_rusts() {
    for (body, says) in [
        ("[1]", "expected a GraphQL request (a JSON object)"),
        (
            r#"{"query":"{a}","extensions":{"persistedQuery":1}}"#,
            "expected a persisted query (a JSON object)",
        ),
    ] {
        let e = post("application/json", body).unwrap_err();
        assert!(e.contains(says) && !e.contains("struct"), "{body}: {e}");
    }
}
