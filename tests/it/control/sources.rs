//! Run-time sandboxes known by address (`source_cidrs` in the admin API): a VM or container created at run time
//! is identified by its source address, with the same overlap checks as the configuration file (409), and a
//! revocation ends it like any other.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpSocket;

use crate::rigs::client::read_connect_response;
use crate::rigs::control::control_rig;

/// A CONNECT to `allowed.test` on `port` through `proxy`, from `source`, with no credential: the status.
async fn connect_from(source: [u8; 4], proxy: SocketAddr, port: u16) -> u16 {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((source, 0))).unwrap();
    let mut s = socket.connect(proxy).await.unwrap();
    let req = format!("CONNECT allowed.test:{port} HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), read_connect_response(&mut s))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_created_at_run_time_by_address_is_known_by_its_source() {
    let rig = control_rig("").await;
    let token = rig.token.clone();
    let create = |body: &'static str| {
        let (admin, token) = (rig.admin, token.clone());
        async move { crate::rigs::control::admin_request(admin, "POST", "/v1/sandboxes", Some(&token), body).await }
    };
    let port = rig.up.addr.port();
    // Unknown before: an address no sandbox holds gets 407.
    assert_eq!(connect_from([127, 0, 0, 9], rig.proxy, port).await, 407);

    let (status, _, body) = create(r#"{"user":"carol","policy":"web","source_cidrs":["127.0.0.9/32"]}"#).await;
    assert_eq!(status, 201, "{body}");
    let made: Value = serde_json::from_str(&body).unwrap();
    let id = made["id"].as_str().unwrap().to_owned();
    let (_, _, shown) = rig.raw("GET", &format!("/v1/sandboxes/{id}"), Some(&token), "").await;
    assert!(shown.contains("127.0.0.9/32"), "{shown}");
    // Known by its address, with no credential at all.
    assert_eq!(connect_from([127, 0, 0, 9], rig.proxy, port).await, 200);
    let audited = rig
        .until(Duration::from_secs(2), || {
            rig.audit
                .now()
                .iter()
                .any(|r| r.sandbox.as_deref() == Some(id.as_str()))
        })
        .await;
    assert!(audited, "no audit record names the run-time sandbox");

    // Overlaps are refused, with whose range it meets: the file's gw (127.0.0.5/32) and the one just made.
    let (status, _, body) = create(r#"{"user":"carol","policy":"web","source_cidrs":["127.0.0.0/29"]}"#).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("overlap") && body.contains("\\\"gw\\\"") && body.contains("127.0.0.5/32"),
        "{body}"
    );
    let (status, _, body) = create(r#"{"user":"carol","policy":"web","source_cidrs":["127.0.0.8/30"]}"#).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains(&id), "{body}");
    // Ranges that are not ranges, have host bits set, or are everything: 422 saying which.
    for (bad, says) in [
        (
            r#"{"user":"c","policy":"web","source_cidrs":["nonsense"]}"#,
            "[0] \\\"nonsense\\\" is not a range",
        ),
        (
            r#"{"user":"c","policy":"web","source_cidrs":["127.0.0.9/24"]}"#,
            "host bits set; write 127.0.0.0/24",
        ),
        (
            r#"{"user":"c","policy":"web","source_cidrs":["0.0.0.0/0"]}"#,
            "every address",
        ),
        (
            r#"{"user":"c","policy":"web","source_cidrs":"10.0.0.1/32"}"#,
            "must be a list",
        ),
    ] {
        let (status, _, body) = create(bad).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert!(body.contains("source_cidrs") && body.contains(says), "{bad}: {body}");
    }
    // A reload that declares a sandbox on its address is refused while it lives.
    let taken = rig.yaml.replace(
        "    source_cidrs: [\"127.0.0.5/32\"]",
        "    source_cidrs: [\"127.0.0.5/32\", \"127.0.0.9/32\"]",
    );
    assert_ne!(taken, rig.yaml);
    rig.write(&taken);
    let (status, _, body) = rig.raw("POST", "/v1/reload", Some(&token), "").await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("source_cidrs[1]") && body.contains(&id), "{body}");
    rig.write(&rig.yaml);

    // Revoked: its address is unknown again.
    let (status, _, _) = rig
        .raw("DELETE", &format!("/v1/sandboxes/{id}"), Some(&token), "")
        .await;
    assert_eq!(status, 200);
    assert_eq!(connect_from([127, 0, 0, 9], rig.proxy, port).await, 407);
    // And the address can be given to a new one.
    let (status, _, body) = create(r#"{"user":"dave","policy":"web","source_cidrs":["127.0.0.9/32"]}"#).await;
    assert_eq!(status, 201, "{body}");
}
