#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]
use super::*;

#[test]
fn a_record_keeps_its_line_as_the_body_and_its_fields_as_attributes() {
    let line = br#"{"time":"2026-12-01T10:00:00.250Z","sandbox":"sb1","user":"alice","kind":"http","method":"GET","host":"a.test","port":443,"path":"/x","decision":"deny","reason":"no_rule","status":403,"error":null,"seq":7,"prev":"00"}"#;
    let bytes = request(&Sender::new("replica-1", "host-1"), &[line.to_vec()]);
    let decoded = ExportLogsServiceRequest::decode(&bytes[..]).unwrap();
    let rl = &decoded.resource_logs[0];
    let resource = rl.resource.as_ref().unwrap();
    assert!(resource.attributes.iter().any(|a| a.key == "service.instance.id"));
    let r = &rl.scope_logs[0].log_records[0];
    assert_eq!(r.time_unix_nano, 1_796_119_200_250_000_000);
    assert_eq!(r.severity_number, SeverityNumber::Warn as i32);
    assert_eq!(r.event_name, "cordon.audit.http");
    let Some(Value::StringValue(body)) = r.body.as_ref().unwrap().value.as_ref() else {
        panic!("the body is the line")
    };
    assert_eq!(body.as_bytes(), line);
    let attr = |k: &str| {
        r.attributes
            .iter()
            .find(|a| a.key == k)
            .unwrap()
            .value
            .clone()
            .unwrap()
            .value
            .unwrap()
    };
    assert_eq!(attr("cordon.seq"), Value::IntValue(7));
    assert_eq!(attr("cordon.sandbox"), Value::StringValue("sb1".into()));
    assert_eq!(attr("cordon.user"), Value::StringValue("alice".into()));
    assert_eq!(attr("cordon.reason"), Value::StringValue("no_rule".into()));
    assert_eq!(attr("http.response.status_code"), Value::IntValue(403));
}
