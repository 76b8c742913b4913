//! GraphQL through cordon with real parts on both sides: a graphql-yoga server with automatic persisted queries
//! (`tests/servers/graphql_server.mjs`, a small GitHub-like schema: issues, addComment, deleteRepo, ticks) and the
//! agent's Apollo Client (`tests/clients/graphql_agent.mjs`), by POST, by GET and by persisted-query hash. The
//! rule lets queries through, asks before any mutation and denies deleteRepo and subscriptions: a query goes, a
//! comment waits for a person (who sees the operation) and goes or is refused with a GraphQL error, deleteRepo is
//! refused whatever the operation calls itself. With curl, what cordon cannot read as a server would.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;
use tokio::task::JoinHandle;

use super::harness::{Case, Spec};
use crate::rigs::ports::free_port;
use crate::rigs::tls::TestCa;
use crate::rigs::wait::{TimedChild, Within};

/// The GraphQL server, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
    /// Every operation it executed, one JSON line each.
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.timed_wait();
    }
}

/// Where `.ci/run` installs graphql-yoga and Apollo Client.
fn prefix() -> String {
    let prefix = std::env::var("CORDON_GRAPHQL_PREFIX")
        .unwrap_or_else(|_| format!("{}/.cache/cordon-graphql", std::env::var("HOME").unwrap()));
    assert!(
        std::path::Path::new(&prefix).join("node_modules/graphql-yoga").is_dir(),
        "graphql-yoga is not installed under {prefix} (CORDON_GRAPHQL_PREFIX): run .ci/run, or \
         npm install --prefix {prefix} as it does"
    );
    prefix
}

fn server(ca: &TestCa, dir: &std::path::Path) -> Server {
    let (cert, key) = ca.pem_pair(&["graphql.test"]);
    let (cert_path, key_path) = (dir.join("graphql-cert.pem"), dir.join("graphql-key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let port = free_port();
    let log = dir.join("executed.jsonl");
    let mut child = Command::new("node")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/graphql_server.mjs"))
        .args(["--port", &port.to_string(), "--cert"])
        .arg(&cert_path)
        .arg("--key")
        .arg(&key_path)
        .arg("--log")
        .arg(&log)
        .env("CORDON_GRAPHQL_PREFIX", prefix())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node tests/servers/graphql_server.mjs");
    let line = crate::rigs::wait::first_line(
        &mut child,
        "the GraphQL server (node tests/servers/graphql_server.mjs)",
        std::time::Duration::from_secs(60),
    );
    assert_eq!(line.trim(), "ready", "the GraphQL server did not start");
    Server { child, port, log }
}

const RULE: &str = "graphql: { operations: [query], ask: [mutation], deny: [\"mutation.delete*\", subscription] }";

async fn case() -> (Case, Server, tempfile::TempDir) {
    let ca = Case::ca();
    let scratch = tempfile::tempdir().unwrap();
    let server = server(&ca, scratch.path());
    let spec = Spec {
        rules: format!(
            "      - host: graphql.test\n        ports: [{}]\n        paths: [/graphql]\n        {RULE}\n",
            server.port
        ),
        names: vec!["graphql.test"],
        ..Spec::default()
    };
    (Case::start(ca, spec).await, server, scratch)
}

fn url(server: &Server) -> String {
    format!("https://graphql.test:{}/graphql", server.port)
}

/// What reached the server: `(operation, name, fields)` of each operation it executed.
fn executed(server: &Server) -> Vec<(String, String, Vec<String>)> {
    std::fs::read_to_string(&server.log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let fields = v["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect();
            (
                v["operation"].as_str().unwrap().to_owned(),
                v["name"].as_str().unwrap_or("").to_owned(),
                fields,
            )
        })
        .collect()
}

/// The agent's steps, run in the background by one Apollo Client (`flags`: `--apq`, `--get`).
fn agent(case: &Case, server: &Server, flags: &[&str], steps: &[&str]) -> JoinHandle<Output> {
    let mut c = case.client("node");
    c.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/graphql_agent.mjs"))
        .env("CORDON_GRAPHQL_PREFIX", prefix())
        .env("NODE_NO_WARNINGS", "1")
        .args(["--url", &url(server), "--ca"])
        .arg(case.path("sandbox-ca.pem"))
        .args(flags)
        .args(steps)
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || c.timed_output().unwrap())
}

fn lines(out: &Output) -> Vec<Value> {
    let said: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        !said.is_empty(),
        "the agent said nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

fn refused_by_cordon(step: &Value, reason: &str) {
    assert_eq!(step["data"], Value::Null, "{step}");
    assert_eq!(step["errors"][0]["extensions"]["code"], reason, "{step}");
    assert!(
        step["errors"][0]["message"].as_str().unwrap().starts_with("cordon: "),
        "{step}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn apollo_client_queries_asks_before_a_mutation_and_is_refused_a_denied_one_by_post_get_and_hash() {
    for flags in [&[][..], &["--get"], &["--apq"], &["--apq", "--get"]] {
        let (case, server, _scratch) = case().await;
        let steps = ["issues", "delete:cordon", "comment:1:looks good", "issues"];
        let (held, run) = case.held(agent(&case, &server, flags, &steps)).await;
        // The person sees the operation by type, name and root fields, and the document in the body.
        assert_eq!(
            held["operations"],
            serde_json::json!(["mutation AddComment: addComment"]),
            "{flags:?} {held}"
        );
        assert!(
            held["excerpt"].as_str().unwrap().contains("looks good"),
            "{flags:?} {held}"
        );
        case.reviewer(&["approvals", "allow", held["id"].as_str().unwrap()]);
        let said = lines(&run.await.unwrap());
        assert_eq!(said.len(), 4, "{flags:?}: {said:#?}");
        assert_eq!(said[0]["data"]["issues"][0]["number"], 1, "{flags:?}: {}", said[0]);
        refused_by_cordon(&said[1], "graphql_operation_denied");
        assert_eq!(
            said[2]["data"]["addComment"]["comments"],
            serde_json::json!(["looks good"]),
            "{flags:?}: {}",
            said[2]
        );
        assert_eq!(said[3]["data"]["issues"][1]["number"], 2, "{flags:?}: {}", said[3]);
        if flags.contains(&"--get") {
            assert_eq!(
                said[0]["http"].as_array().unwrap().last().unwrap()["method"],
                "GET",
                "{}",
                said[0]
            );
        }
        if flags.contains(&"--apq") {
            // First the hash alone, which cordon had not seen (answered PersistedQueryNotFound, so Apollo sent the
            // document); the second time the hash alone goes, judged by the document cordon saw with it.
            let first = said[0]["http"].as_array().unwrap();
            assert_eq!(
                (first.len(), &first[0]["reason"]),
                (2, &Value::from("graphql_persisted_unknown")),
                "{}",
                said[0]
            );
            assert_eq!(said[3]["http"].as_array().unwrap().len(), 1, "{}", said[3]);
            let deleted = said[1]["http"].as_array().unwrap();
            assert_eq!(
                deleted.last().unwrap()["reason"],
                "graphql_operation_denied",
                "{}",
                said[1]
            );
            case.audited(|r| r["graphql"]["persisted"].is_string() && r["reason"] == "graphql_persisted_unknown")
                .await;
        }
        // Only what cordon let through reached the server.
        let ran: Vec<String> = executed(&server).into_iter().map(|(_, name, _)| name).collect();
        assert_eq!(ran, ["Issues", "AddComment", "Issues"], "{flags:?}");
        let denied = case
            .audited(|r| r["graphql"]["name"] == "DeleteRepo" && r["reason"] == "graphql_operation_denied")
            .await;
        assert_eq!(denied["graphql"]["operation"], "mutation");
        assert_eq!(denied["graphql"]["fields"], serde_json::json!(["deleteRepo"]));
        assert_eq!(denied["decision"], "deny");
        case.audited(|r| r["graphql"]["name"] == "AddComment" && r["approval"]["outcome"] == "allow")
            .await;
        case.audited(|r| r["graphql"]["operation"] == "query" && r["status"] == 200)
            .await;
        crate::rigs::audit::assert_schema(&case.path("audit.log"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mutation_a_person_denies_is_a_graphql_error_and_never_reaches_the_server() {
    let (case, server, _scratch) = case().await;
    let (held, run) = case.held(agent(&case, &server, &[], &["comment:2:spam"])).await;
    case.reviewer(&["approvals", "deny", held["id"].as_str().unwrap()]);
    let said = lines(&run.await.unwrap());
    refused_by_cordon(&said[0], "protocol_approval_denied");
    assert!(executed(&server).is_empty());
}

/// curl through cordon: the status, and the body (with curl's own complaints).
fn curl(case: &Case, server: &Server, extra: &[&str], query: &str) -> (String, String) {
    let mut c = case.client("curl");
    c.args(["-sS", "-o", "-", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(format!("{}{query}", url(server)));
    let out = c.timed_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (
        code.to_owned(),
        format!("{body}{}", String::from_utf8_lossy(&out.stderr)),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn what_cordon_cannot_read_as_the_server_would_is_400_and_every_operation_is_judged() {
    let (case, server, _scratch) = case().await;
    let json = |body: &str| -> Vec<String> {
        vec![
            "-H".into(),
            "content-type: application/json".into(),
            "--data-binary".into(),
            body.into(),
        ]
    };
    let post = |body: &str, extra: &[&str]| {
        let mut args = json(body);
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl(&case, &server, &args, "")
    };
    let delete = r#"mutation { deleteRepo(name: \"cordon\") }"#;
    // SECURITY: each way of making cordon judge one thing while the server runs another.
    for (body, extra, query, why) in [
        (format!(r#"{{"query":"{{ issues {{ number }} }}","query":"{delete}"}}"#), &[][..], "", "twice"),
        (format!(r#"{{"query":"{{ issues {{ number }} }}","qu\u0065ry":"{delete}"}}"#), &[], "", "twice"),
        (r#"{"query":"{ issues { number } }"}"#.to_owned(), &[], "?query=mutation%7BdeleteRepo(name%3A%22x%22)%7D", "in its URL"),
        (r#"{"documentId":"abc"}"#.to_owned(), &[], "", "stored on the server"),
        (r#"{"query":"{ issues { number }"}"#.to_owned(), &[], "", "does not parse"),
        (r#"{"query":"query A { issues { number } } query B { issues { title } }"}"#.to_owned(), &[], "", "needs an operationName"),
        (r#"{"query":"{ issues { number } }"}"#.to_owned(), &["-H", "content-encoding: gzip"], "", "content coding"),
        (r#"{"query":"{ issues { number } }"}"#.to_owned(), &["-X", "PUT"], "", "GET and POST"),
        (r#"{"query":"{ issues { number } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"0000000000000000000000000000000000000000000000000000000000000000"}}}"#.to_owned(), &[], "", "SHA-256"),
    ] {
        let mut args = json(&body);
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, said) = curl(&case, &server, &args, query);
        assert_eq!(code, "400", "{body} {extra:?} {query}: {said}");
        assert!(said.contains(why), "{body} {extra:?} {query}: {said}");
    }
    for (args, query, why) in [
        (
            &["-F", "operations={\"query\":\"{ issues { number } }\"}"][..],
            "",
            "multipart/form-data",
        ),
        (
            &[][..],
            "?query=%7Bissues%7Bnumber%7D%7D&query=mutation%7BdeleteRepo(name%3A%22x%22)%7D",
            "twice",
        ),
        (
            &[],
            "?query=%7Bissues%7Bnumber%7D%7D;query=mutation%7BdeleteRepo(name%3A%22x%22)%7D",
            "';'",
        ),
        (
            &[
                "-H",
                "connection: upgrade",
                "-H",
                "upgrade: websocket",
                "-H",
                "sec-websocket-version: 13",
                "-H",
                "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==",
                "--http1.1",
            ],
            "?query=%7Bissues%7Bnumber%7D%7D",
            "WebSocket",
        ),
    ] {
        let (code, said) = curl(&case, &server, args, query);
        assert_eq!(code, "400", "{args:?} {query}: {said}");
        assert!(said.contains(why), "{args:?} {query}: {said}");
    }
    // A denied field hidden beside a query, picked or not by operationName; a GET of a denied mutation; an alias.
    for body in [
        r#"{"query":"query Q { issues { number } } mutation M { deleteRepo(name: \"x\") }","operationName":"Q"}"#
            .to_owned(),
        r#"{"query":"query Harmless { issues { number } } mutation Also { ... on Mutation { gone: deleteRepo(name: \"x\") } }","operationName":"Harmless"}"#
            .to_owned(),
        r#"{"query":"mutation { ...F } fragment F on Mutation { deleteRepo(name: \"x\") }"}"#.to_owned(),
        format!(r#"[{{"query":"{{ issues {{ number }} }}"}},{{"query":"{delete}"}}]"#),
        r#"{"query":"subscription { ticks(count: 2) }"}"#.to_owned(),
    ] {
        let (code, said) = post(&body, &[]);
        assert_eq!(code, "200", "{body}: {said}");
        assert!(said.contains("graphql_operation_denied"), "{body}: {said}");
    }
    let (code, said) = curl(&case, &server, &[], "?query=mutation%7BdeleteRepo(name%3A%22x%22)%7D");
    assert_eq!(code, "200", "{said}");
    assert!(said.contains("graphql_operation_denied"), "{said}");
    // A batch is answered request by request.
    let (_, said) = post(
        &format!(r#"[{{"query":"{{ issues {{ number }} }}"}},{{"query":"{delete}"}}]"#),
        &[],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&said).unwrap().as_array().unwrap().len(),
        2,
        "{said}"
    );
    // What may go, goes: a query by POST (JSON, a document, a form) and by GET.
    assert_eq!(post(r#"{"query":"{ issues { number } }"}"#, &[]).0, "200");
    let (code, said) = curl(
        &case,
        &server,
        &[
            "-H",
            "content-type: application/graphql",
            "--data-binary",
            "{ issues { title } }",
        ],
        "",
    );
    assert!(code == "200" || code == "415", "{said}");
    let (code, said) = curl(&case, &server, &[], "?query=%7Bissues%7Bnumber%7D%7D");
    assert_eq!(code, "200", "{said}");
    assert!(said.contains("\"number\":1"), "{said}");
    assert!(
        executed(&server)
            .iter()
            .all(|(op, _, fields)| op == "query" && fields == &["issues"]),
        "{:?}",
        executed(&server)
    );
    // `cordon explain` names the GraphQL step.
    let out = case.explain("POST", &url(&server));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("graphql  rule 0 reads the GraphQL request of a GET or POST"),
        "{}",
        super::harness::text(&out)
    );
}
