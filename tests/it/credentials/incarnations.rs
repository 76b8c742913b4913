//! An id is not an identity (issue 34 item 3), credentials through the `cordon` binary with curl: after a
//! run-time sandbox's id is revoked and created again for another user (and again after its row is purged), and
//! after a reload gives a sandbox of the file to another user, the earlier incarnation's placeholder is refused
//! (never swapped for the secret), a URL presigned with its AWS keys is refused, and the credential budget it
//! spent is not the later one's; the later one's own placeholder, keys and budget work.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use crate::rigs::client::hash;
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::tls::{https_upstream, test_ca};
use crate::rigs::upstreams::Upstream;
use crate::rigs::wait::{TimedChild, Within};

const SECRET: &str = "api-secret-7f3a91";

const METERED: &str = "metered-secret-c0ffee";

/// What one incarnation holds: its proxy credential, its placeholder, its AWS keys.
#[derive(Clone, Debug, PartialEq)]
struct Held {
    proxy: (String, String),
    placeholder: String,
    key_id: String,
    secret: String,
}

struct Rig {
    dir: tempfile::TempDir,
    child: Option<std::process::Child>,
    up: Upstream,
    proxy: u16,
    admin: u16,
}

fn yaml(d: &Path, (proxy, admin, up): (u16, u16, u16), fx_user: &str) -> String {
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin} }}
network:
  allow_cidrs: ["127.0.0.0/8"]
  hosts: {{ api.test: 127.0.0.2, metered.test: 127.0.0.2, presign.test: 127.0.0.2 }}
ca: {{ dir: {d}/cas }}
upstream: {{ extra_roots: [{d}/upstream-ca.pem] }}
vault: {{ file: {{ path: {d}/vault.bin }} }}
audit: {{ path: {d}/audit.jsonl }}
control: {{ admin_token: {{ file: {d}/admin-token }}, signing_key: {{ file: {d}/signing-key }}, store: {d}/cordon.db }}
credentials:
  apikey:
    source: {{ env: CRED_APIKEY }}
    bind: {{ hosts: [api.test], ports: [{up}] }}
    inject: {{ placeholder: {{}} }}
  metered:
    source: {{ env: CRED_METERED }}
    bind: {{ hosts: [metered.test], ports: [{up}] }}
    inject: {{ header: Authorization, value: "Bearer {{secret}}" }}
    budget: {{ requests: 1, window: 1h }}
  aws-keys:
    source: {{ aws: {{ access_key_id: {{ env: REAL_AWS_KEY_ID }}, secret_access_key: {{ env: REAL_AWS_SECRET }} }} }}
    bind: {{ hosts: [presign.test], ports: [{up}] }}
    inject: {{ aws_sigv4: {{ region: us-east-1 }} }}
sandboxes:
  - {{ id: fx, user: {fx_user}, token_sha256: {h}, policy: web }}
policies:
  web:
    credentials: [apikey, metered, aws-keys]
    allow:
      - {{ host: api.test, ports: [{up}] }}
      - {{ host: metered.test, ports: [{up}] }}
      - {{ host: presign.test, ports: [{up}] }}
"#,
        d = d.display(),
        h = hash("tokf"),
    )
}

impl Rig {
    async fn start() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ca = test_ca("incarnations upstream CA");
        std::fs::write(d.join("upstream-ca.pem"), &ca.pem).unwrap();
        let up = https_upstream(
            "127.0.0.2",
            ca.server_config(&["api.test", "metered.test", "presign.test"]),
        )
        .await;
        let (proxy, admin) = (free_port(), free_port());
        std::fs::write(d.join("cordon.yaml"), yaml(d, (proxy, admin, up.addr.port()), "alice")).unwrap();
        let mut rig = Rig {
            dir,
            child: None,
            up,
            proxy,
            admin,
        };
        rig.restart().await;
        rig
    }

    /// Stop cordon if it runs, and start it.
    async fn restart(&mut self) {
        if let Some(c) = self.child.take() {
            crate::rigs::process::signal_and_wait(c, Signal::SIGTERM).await;
        }
        let d = self.dir.path();
        let child = spawn_cordon(
            &d.join("cordon.yaml"),
            self.proxy,
            &[
                ("CRED_APIKEY", SECRET),
                ("CRED_METERED", METERED),
                ("REAL_AWS_KEY_ID", "AKIAREALKEY000000001"),
                ("REAL_AWS_SECRET", "real-aws-secret-never-seen"),
            ],
        )
        .await;
        crate::rigs::control::token(d);
        self.child = Some(child);
    }

    fn cordon(&self, args: &[&str]) -> String {
        let out = Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(self.dir.path().join("cordon.yaml"))
            .timed_output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Run-time sandbox `vm1` created for `user`: what `sandbox create --format dotenv` hands it.
    fn create(&self, user: &str) -> Held {
        let text = self.cordon(&[
            "sandbox", "create", "--user", user, "--policy", "web", "--id", "vm1", "--format", "dotenv",
        ]);
        let env = vars(&text);
        let url = &env["HTTPS_PROXY"];
        let creds = url.trim_start_matches("http://").split('@').next().unwrap();
        let (id, credential) = creds.split_once(':').unwrap();
        self.bundle("vm1");
        held((id.to_string(), credential.to_string()), &env)
    }

    /// File sandbox `fx` as the configuration now declares it: `cordon placeholders` and its token.
    fn file(&self) -> Held {
        let env = vars(&self.cordon(&["placeholders", "--sandbox", "fx"]));
        self.bundle("fx");
        held(("fx".into(), "tokf".into()), &env)
    }

    /// Write `id`'s CA bundle where curl reads it.
    fn bundle(&self, id: &str) {
        let pem = self.cordon(&["sandbox", "ca-bundle", id]);
        std::fs::write(self.dir.path().join(format!("{id}.pem")), pem).unwrap();
    }

    /// Give `fx` to `user` and reload through the admin API.
    async fn reload_for(&self, user: &str) {
        let d = self.dir.path();
        std::fs::write(
            d.join("cordon.yaml"),
            yaml(d, (self.proxy, self.admin, self.up.addr.port()), user),
        )
        .unwrap();
        let token = crate::rigs::control::token(d);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.admin));
        let (status, _, body) = admin_request(addr, "POST", "/v1/reload", Some(&token), "").await;
        assert_eq!(status, 200, "{body}");
    }

    /// Drop `vm1`'s row from the store, as the hourly purge does to one long expired.
    fn purge(&self) {
        let db = self.dir.path().join("cordon.db").display().to_string();
        let script = format!(
            "import sqlite3; c = sqlite3.connect({db:?}); c.execute(\"DELETE FROM sandboxes WHERE id = 'vm1'\"); c.commit()"
        );
        let out = Command::new("python3").args(["-c", &script]).timed_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    /// GET `url` through cordon as `who`, with `header` if any: status and reason.
    fn get(&self, who: &Held, url: &str, header: Option<&str>) -> (u16, String) {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--max-time", "10"])
            .args([
                "-x",
                &format!("http://{}:{}@127.0.0.1:{}", who.proxy.0, who.proxy.1, self.proxy),
            ])
            .arg("--cacert")
            .arg(self.dir.path().join(format!("{}.pem", who.proxy.0)));
        if let Some(h) = header {
            c.args(["-H", h]);
        }
        c.arg(url);
        let r = crate::rigs::curl::run(c);
        (r.status, r.reason().trim().to_owned())
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.up.addr.port())
    }

    /// How many requests reached the upstream carrying `secret`.
    fn carried(&self, secret: &str) -> usize {
        self.up
            .seen()
            .iter()
            .filter(|s| s.headers.iter().any(|(_, v)| v.contains(secret)))
            .count()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.timed_wait();
        }
    }
}

fn vars(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').trim_matches('\'').to_string()))
        .collect()
}

fn held(proxy: (String, String), env: &BTreeMap<String, String>) -> Held {
    Held {
        proxy,
        placeholder: env["CORDON_PLACEHOLDER_APIKEY"].clone(),
        key_id: env["AWS_ACCESS_KEY_ID"].clone(),
        secret: env["AWS_SECRET_ACCESS_KEY"].clone(),
    }
}

/// A GET of `url` presigned (SigV4 in the query, as `generate_presigned_url` makes it) with `who`'s AWS keys.
fn presign(url: &str, who: &Held) -> String {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SignatureLocation, SigningSettings};
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(600));
    let identity = aws_credential_types::Credentials::new(&who.key_id, &who.secret, None, None, "test").into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("s3")
        .time(SystemTime::now())
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let signable = SignableRequest::new("GET", url, std::iter::empty(), SignableBody::UnsignedPayload).unwrap();
    let (instructions, _) = aws_sigv4::http_request::sign(signable, &params).unwrap().into_parts();
    let mut req = http::Request::builder().uri(url).body(()).unwrap();
    instructions.apply_to_request_http1x(&mut req);
    req.uri().to_string()
}

/// What the earlier incarnation `old` spent and made, before it ends: its budget, a swapped placeholder, a
/// presigned URL that passes.
fn use_up(rig: &Rig, old: &Held) -> String {
    // Its budget spent (the one request it allows, taken now or by an earlier check).
    let metered = rig.url("metered.test", "/m");
    let _ = rig.get(old, &metered, None);
    assert_eq!(
        rig.get(old, &metered, None),
        (429, "credential_budget".to_string()),
        "spent"
    );
    let before = rig.carried(SECRET);
    let header = format!("X-Api-Key: {}", old.placeholder);
    assert_eq!(rig.get(old, &rig.url("api.test", "/a"), Some(&header)).0, 200);
    assert_eq!(
        rig.carried(SECRET),
        before + 1,
        "its placeholder is swapped while it lives"
    );
    let url = presign(&rig.url("presign.test", "/bucket/old.txt"), old);
    assert_eq!(
        rig.get(old, &url, None).0,
        200,
        "its presigned URL passes while it lives"
    );
    url
}

/// The later incarnation `new`, after `old`: nothing of `old`'s works for it, its own does.
fn nothing_carries_over(rig: &Rig, old: &Held, new: &Held, old_url: &str, what: &str) {
    assert_ne!(old.placeholder, new.placeholder, "{what}: placeholders");
    assert_ne!(
        (&old.key_id, &old.secret),
        (&new.key_id, &new.secret),
        "{what}: AWS keys"
    );
    // The budget the earlier one spent is not this one's.
    assert_eq!(
        rig.get(new, &rig.url("metered.test", "/m"), None).0,
        200,
        "{what}: budget"
    );
    // The earlier placeholder is refused, and the secret does not leave for it.
    let before = rig.carried(SECRET);
    let header = format!("X-Api-Key: {}", old.placeholder);
    assert_eq!(
        rig.get(new, &rig.url("api.test", "/a"), Some(&header)),
        (403, "credential_exfiltration".to_string()),
        "{what}: the earlier placeholder"
    );
    assert_eq!(rig.carried(SECRET), before, "{what}: nothing swapped for it");
    let header = format!("X-Api-Key: {}", new.placeholder);
    assert_eq!(rig.get(new, &rig.url("api.test", "/a"), Some(&header)).0, 200, "{what}");
    assert_eq!(rig.carried(SECRET), before + 1, "{what}: its own is swapped");
    // A URL presigned with the earlier keys is refused (its key id is a placeholder this sandbox was never
    // given, found before the signature is checked); one with its own passes.
    assert_eq!(
        rig.get(new, old_url, None),
        (403, "credential_exfiltration".to_string()),
        "{what}: the earlier presigned URL"
    );
    let own = presign(&rig.url("presign.test", "/bucket/new.txt"), new);
    assert_eq!(rig.get(new, &own, None).0, 200, "{what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_an_earlier_sandbox_of_the_id_held_or_spent_carries_over_to_the_next() {
    let rig = Rig::start().await;

    // Run-time: revoked, created again for another user.
    let dave = rig.create("dave");
    let url = use_up(&rig, &dave);
    rig.cordon(&["sandbox", "revoke", "vm1"]);
    let erin = rig.create("erin");
    nothing_carries_over(&rig, &dave, &erin, &url, "revoked and created again");
    // Revoked, its row purged, created again.
    let url = use_up(&rig, &erin);
    rig.cordon(&["sandbox", "revoke", "vm1"]);
    rig.purge();
    let frank = rig.create("frank");
    nothing_carries_over(&rig, &erin, &frank, &url, "purged and created again");
    assert_ne!(dave.placeholder, frank.placeholder);

    // The file's: given to another user by a reload.
    let alice = rig.file();
    let url = use_up(&rig, &alice);
    rig.reload_for("bob").await;
    let bob = rig.file();
    nothing_carries_over(&rig, &alice, &bob, &url, "the file's, given to another user");

    // The same incarnation keeps its placeholder and keys across a restart (they are in its environment).
    assert_eq!(rig.file(), bob, "the same file sandbox, asked again");
    let mut rig = rig;
    rig.restart().await;
    let header = format!("X-Api-Key: {}", frank.placeholder);
    let before = rig.carried(SECRET);
    assert_eq!(rig.get(&frank, &rig.url("api.test", "/a"), Some(&header)).0, 200);
    assert_eq!(rig.carried(SECRET), before + 1, "swapped after a restart");
    let own = presign(&rig.url("presign.test", "/bucket/after.txt"), &frank);
    assert_eq!(rig.get(&frank, &own, None).0, 200, "its AWS keys after a restart");
}
