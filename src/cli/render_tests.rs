#![expect(clippy::unwrap_used, reason = "tests")]

use serde_json::{Value, json};

use super::*;
use crate::cli::admin_client::tests::{grant, pending, view};

fn tricky() -> Value {
    json!({"env": {"ZED": "it's $HOME\nnext \"q\" \\", "A_PROXY": "http://x:y@h:1"}, "id": "sb"})
}

#[test]
fn env_export() {
    let out = render_env(&tricky(), EnvFormat::Export).unwrap();
    assert_eq!(
        out,
        "export A_PROXY='http://x:y@h:1'\nexport ZED='it'\\''s $HOME\nnext \"q\" \\'\n"
    );
}

#[test]
fn env_dotenv() {
    let out = render_env(&tricky(), EnvFormat::Dotenv).unwrap();
    assert_eq!(
        out,
        "A_PROXY=\"http://x:y@h:1\"\nZED=\"it's \\$HOME\\nnext \\\"q\\\" \\\\\"\n"
    );
}

#[test]
fn env_json() {
    let out = render_env(&tricky(), EnvFormat::Json).unwrap();
    assert!(out.ends_with("}\n"));
    let back: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(back, tricky()["env"]);
    assert!(out.find("A_PROXY").unwrap() < out.find("ZED").unwrap());
}

#[test]
fn env_errors() {
    for bad in [
        json!({}),
        json!({"env": "x"}),
        json!({"env": {"A": 1}}),
        json!({"env": {"$(rm)": "x"}}),
    ] {
        assert!(
            matches!(render_env(&bad, EnvFormat::Export), Err(ClientError::BadResponse(_))),
            "{bad}"
        );
    }
    assert_eq!(render_env(&json!({"env": {}}), EnvFormat::Export).unwrap(), "");
}

#[test]
fn labels() {
    assert_eq!(parse_label("team=infra").unwrap(), ("team".into(), "infra".into()));
    assert_eq!(parse_label("k=a=b").unwrap(), ("k".into(), "a=b".into()));
    assert_eq!(parse_label("k=").unwrap(), ("k".into(), String::new()));
    assert!(parse_label("team").unwrap_err().contains("KEY=VALUE"));
    assert!(parse_label("=v").unwrap_err().contains("empty"));
    assert!(parse_label("a b=v").unwrap_err().contains("whitespace"));
}

#[test]
fn table_is_aligned() {
    let mut revoked = view("a-much-longer-id");
    revoked["revoked_at"] = json!("2025-01-01T00:30:00Z");
    let mut forever = view("x\u{1b}[2J");
    forever["expires_at"] = Value::Null;
    forever["origin"] = json!("config");
    forever.as_object_mut().unwrap().remove("open_tunnels");
    let out = render_table(&json!({"sandboxes": [view("sb-1"), revoked, forever]}));
    let expected = "\
ID                USER   POLICY   ORIGIN  EXPIRES               OPEN
sb-1              alice  default  api     2025-01-01T01:00:00Z  3
a-much-longer-id  alice  default  api     revoked               3
x\\u{001b}[2J      alice  default  config  never                 2
";
    assert_eq!(out, expected);
    assert_eq!(
        render_table(&json!({"sandboxes": []})),
        "ID  USER  POLICY  ORIGIN  EXPIRES  OPEN\n"
    );
}

#[test]
fn approvals_table() {
    let mut long = pending("ap-2");
    long["excerpt"] = json!("0123456789".repeat(5));
    long["host"] = json!("::1");
    long["port"] = json!(8080);
    long["path"] = json!("/");
    let mut odd = pending("ap-\u{1b}[2J");
    odd["excerpt"] = json!("é".repeat(40));
    let mut bare = pending("ap-4");
    bare["excerpt"] = json!("");
    let out = render_approvals(&json!({"pending": [pending("ap-1"), long, odd, bare]}));
    let expected = "\
ID              SANDBOX  USER   METHOD  URL                            EXPIRES               EXCERPT
ap-1            sb-1     alice  POST    api.example.com:443/v1/issues  2025-01-01T00:05:00Z  {\"title\": \"hello\"}
ap-2            sb-1     alice  POST    [::1]:8080/                    2025-01-01T00:05:00Z  012345678901234567890123456789012345678…
ap-\\u{001b}[2J  sb-1     alice  POST    api.example.com:443/v1/issues  2025-01-01T00:05:00Z  éééééééééééééééééééééééééééééééééééééééé
ap-4            sb-1     alice  POST    api.example.com:443/v1/issues  2025-01-01T00:05:00Z  -
";
    assert_eq!(out, expected);
    assert_eq!(
        render_approvals(&json!({"pending": []})),
        "ID  SANDBOX  USER  METHOD  URL  EXPIRES  EXCERPT\n"
    );
}

#[test]
fn grants_table() {
    let mut exact = grant("gr-1");
    exact["reach"] = json!("exact");
    exact["query"] = json!("to=bob&amount=5");
    exact["body_sha256"] = json!("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    let out = render_grants(&json!({"grants": [grant("gr-0123456789abcdef"), exact]}));
    let expected = "\
ID                   SANDBOX  REACH   METHOD  URL                                            BODY                 BY   AT                    APPROVAL
gr-0123456789abcdef  sb-1     always  POST    api.example.com:443/v1/issues                  any                  bob  2025-01-01T00:01:00Z  ap-0123456789abcdef
gr-1                 sb-1     exact   POST    api.example.com:443/v1/issues?to=bob&amount=5  sha256:2cf24dba5fb0  bob  2025-01-01T00:01:00Z  ap-0123456789abcdef
";
    assert_eq!(out, expected);
    assert_eq!(
        render_grants(&json!([])),
        "ID  SANDBOX  REACH  METHOD  URL  BODY  BY  AT  APPROVAL\n"
    );
}

#[test]
fn an_approval_shows_its_url_with_the_query_and_nothing_raw_that_misleads() {
    let mut full = pending("ap-1");
    full["url"] = json!("https://api.example.com/v1/send?to=x\u{202e}moc.live");
    let out = render_approvals(&json!({"pending": [full]}));
    assert!(
        out.contains("https://api.example.com/v1/send?to=x\\u{202e}moc.live"),
        "{out}"
    );
    assert!(!out.contains('\u{202e}'), "{out}");
}

/// Wide (CJK, emoji) and combining characters take the columns a terminal gives them, so the next column starts
/// at the same display column on every line.
#[test]
fn columns_line_up_by_display_width() {
    let rows = vec![
        vec!["ID".to_owned(), "NAME".to_owned(), "NEXT".to_owned()],
        vec!["a".to_owned(), "沙盒".to_owned(), "x".to_owned()],
        vec!["b".to_owned(), "e\u{301}te\u{301}".to_owned(), "y".to_owned()],
        vec!["c".to_owned(), "🦀".to_owned(), "z".to_owned()],
    ];
    let out = align(&rows);
    let columns: Vec<usize> = out
        .lines()
        .map(|line| {
            let at = line.rfind(' ').unwrap() + 1;
            unicode_width::UnicodeWidthStr::width(&line[..at])
        })
        .collect();
    assert_eq!(columns, vec![columns[0]; 4], "{out}");
    assert_eq!(columns[0], "ID  NAME  ".len(), "{out}");
}

#[test]
fn an_approval_of_mcp_tools_or_graphql_operations_shows_them_instead_of_the_body() {
    let mut mcp = pending("ap-1");
    mcp["tools"] = json!(["send_email"]);
    let mut graphql = pending("ap-2");
    graphql["operations"] = json!(["mutation AddComment: addComment", "mutation Close: closeIssue"]);
    let out = render_approvals(&json!({"pending": [mcp, graphql]}));
    let rows: Vec<&str> = out.lines().collect();
    assert!(rows[1].ends_with("  send_email"), "{out}");
    assert!(rows[2].ends_with("  mutation AddComment: addComment; mutati…"), "{out}");
}
