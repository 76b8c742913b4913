//! An id is not an identity (issue 34 item 3), previews through the `cordon` binary: a sandbox's id revoked and
//! created again (for another user, and after its row is purged from the store), or a sandbox of the file
//! removed by a reload and declared again for another user, is another incarnation. A preview session or an
//! unopened link of the earlier one opens nothing of the later one's dev server, and each refusal is audited
//! with its reason; a link made for the later one opens it.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::rigs::client::hash;
use crate::rigs::control::admin_request;
use crate::rigs::ports::free_port;
use crate::rigs::previews::{dev_server, session_cookie};
use crate::rigs::process::Signal;
use crate::rigs::process::{BIN, spawn_cordon};
use crate::rigs::wait::Within;

/// A cordon with previews on, sandbox `fx` of the file (at 127.0.0.41), and room for run-time sandboxes.
pub(crate) struct Rig {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) child: Option<std::process::Child>,
    pub(crate) admin: u16,
    preview: u16,
    ports: (u16, u16, u16),
    /// The dev servers: one at the file sandbox's address, one at the run-time sandbox's.
    pub(crate) file_dev: u16,
    pub(crate) run_dev: u16,
}

/// The configuration, with the file sandbox `fx` declared for `user` (none: not declared).
fn yaml(d: &Path, (proxy, admin, preview): (u16, u16, u16), user: Option<&str>, expose: (u16, u16)) -> String {
    let fx = user.map_or_else(String::new, |u| {
        format!(
            "  - {{ id: fx, user: {u}, token_sha256: {}, policy: web, source_cidrs: [\"127.0.0.41/32\"] }}\n",
            hash("tokf")
        )
    });
    format!(
        r#"
listen: {{ proxy: 127.0.0.1:{proxy}, admin: 127.0.0.1:{admin}, preview: 127.0.0.1:{preview} }}
previews: {{ domain: preview.localhost }}
ca: {{ dir: {d}/cas }}
audit: {{ path: {d}/audit.jsonl }}
control: {{ admin_token: {{ file: {d}/admin-token }}, signing_key: {{ file: {d}/signing-key }}, store: {d}/cordon.db }}
sandboxes:
  - {{ id: keep, user: alice, token_sha256: {h}, policy: web }}
{fx}policies:
  web: {{ expose: [{a}, {b}], allow: [] }}
"#,
        d = d.display(),
        h = hash("tokk"),
        a = expose.0,
        b = expose.1,
    )
}

impl Drop for Rig {
    /// A test that fails before it stops cordon leaves no cordon running.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = crate::rigs::wait::TimedChild::timed_wait(&mut c);
        }
    }
}

impl Rig {
    async fn start() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let file_dev = dev_server("127.0.0.41", "the file's sandbox").await;
        let run_dev = dev_server("127.0.0.42", "the run-time sandbox").await;
        let ports = (free_port(), free_port(), free_port());
        let d = dir.path();
        std::fs::write(
            d.join("cordon.yaml"),
            yaml(d, ports, Some("alice"), (file_dev, run_dev)),
        )
        .unwrap();
        let child = spawn_cordon(&d.join("cordon.yaml"), ports.0, &[]).await;
        crate::rigs::control::token(d);
        Rig {
            dir,
            child: Some(child),
            admin: ports.1,
            preview: ports.2,
            ports,
            file_dev,
            run_dev,
        }
    }

    fn config(&self) -> std::path::PathBuf {
        self.dir.path().join("cordon.yaml")
    }

    fn cordon(&self, args: &[&str]) -> Output {
        let out = Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(self.config())
            .timed_output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Declare `fx` for `user` (or not at all) and reload through the admin API.
    async fn redeclare(&self, user: Option<&str>) {
        let d = self.dir.path();
        std::fs::write(self.config(), yaml(d, self.ports, user, (self.file_dev, self.run_dev))).unwrap();
        let token = crate::rigs::control::token(d);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.admin));
        let (status, _, body) = admin_request(addr, "POST", "/v1/reload", Some(&token), "").await;
        assert_eq!(status, 200, "{body}");
    }

    /// Create run-time sandbox `vm1` for `user` at 127.0.0.42.
    fn create(&self, user: &str) {
        self.cordon(&[
            "sandbox",
            "create",
            "--user",
            user,
            "--policy",
            "web",
            "--id",
            "vm1",
            "--source-cidr",
            "127.0.0.42/32",
        ]);
    }

    /// A link to `port` of `sandbox`, for carol.
    fn link(&self, sandbox: &str, port: u16) -> String {
        let out = self.cordon(&[
            "sandbox",
            "preview",
            sandbox,
            "--port",
            &port.to_string(),
            "--user",
            "carol",
            "--json",
        ]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["url"].as_str().unwrap().to_string()
    }

    /// curl to the preview listener: status, reason, head and body.
    fn curl(&self, url: &str, cookie: Option<&str>) -> (u16, String, String, String) {
        let mut c = crate::rigs::process::curl();
        c.args(["-s", "--connect-to", &format!("::127.0.0.1:{}", self.preview)]);
        if let Some(cookie) = cookie {
            c.args(["-H", &format!("Cookie: {cookie}")]);
        }
        c.arg(url);
        let r = crate::rigs::curl::run(c);
        (r.status, r.reason().to_owned(), r.head(), r.text())
    }

    /// Open `link`: the session cookie it sets.
    fn open(&self, link: &str) -> String {
        let (status, _, head, _) = self.curl(link, None);
        assert_eq!(status, 303, "{head}");
        session_cookie(&head).0
    }

    fn page(&self, port: u16, sandbox: &str) -> String {
        format!("http://{port}-{sandbox}.preview.localhost:{}/", self.preview)
    }

    /// What `cookie` (or, without one, `link`) gets of the page of `port` of `sandbox`: status and reason.
    fn reach(&self, port: u16, sandbox: &str, cookie: Option<&str>, link: Option<&str>) -> (u16, String, String) {
        let (status, reason, _, body) = match link {
            Some(link) => self.curl(link, None),
            None => self.curl(&self.page(port, sandbox), cookie),
        };
        (status, reason, body)
    }

    /// Drop run-time sandbox `id`'s row from the store, as the hourly purge does to one long expired.
    fn purge(&self, id: &str) {
        let db = self.dir.path().join("cordon.db");
        let script = format!(
            "import sqlite3; c = sqlite3.connect({:?}); c.execute('DELETE FROM sandboxes WHERE id = ?', ({id:?},)); c.commit()",
            db.display().to_string()
        );
        let out = Command::new("python3").args(["-c", &script]).timed_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Whatever an earlier incarnation's link and session hold, they are refused 403 `preview_other_incarnation`
/// and never reach the dev server now at that address.
fn refused(rig: &Rig, port: u16, sandbox: &str, cookie: &str, link: &str, what: &str) {
    for (c, l) in [(Some(cookie), None), (None, Some(link))] {
        let (status, reason, body) = rig.reach(port, sandbox, c, l);
        assert_eq!(
            (status, reason.as_str()),
            (403, "preview_other_incarnation"),
            "{what} ({}): {body}",
            if c.is_some() { "session" } else { "unopened link" }
        );
        assert!(!body.contains("dev server of"), "{what}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_preview_of_an_earlier_sandbox_of_the_id_opens_nothing_of_the_next() {
    let mut rig = Rig::start().await;
    let (run, file) = (rig.run_dev, rig.file_dev);

    // Run-time: vm1 of dave; a session and a link not yet opened.
    rig.create("dave");
    let cookie = rig.open(&rig.link("vm1", run));
    let unopened = rig.link("vm1", run);
    let (status, _, body) = rig.reach(run, "vm1", Some(&cookie), None);
    assert_eq!(status, 200, "{body}");
    // Revoked, and vm1 created again for erin: dave's session and link open nothing of erin's sandbox.
    rig.cordon(&["sandbox", "revoke", "vm1"]);
    rig.create("erin");
    refused(&rig, run, "vm1", &cookie, &unopened, "revoked and created again");
    // erin's own link opens it.
    let erin = rig.open(&rig.link("vm1", run));
    let (status, _, body) = rig.reach(run, "vm1", Some(&erin), None);
    assert!(
        status == 200 && body.contains("dev server of the run-time sandbox"),
        "{body}"
    );
    // Revoked, its row purged, created again for frank: erin's session and a link of hers are refused too.
    let erins_unopened = rig.link("vm1", run);
    rig.cordon(&["sandbox", "revoke", "vm1"]);
    rig.purge("vm1");
    rig.create("frank");
    refused(&rig, run, "vm1", &erin, &erins_unopened, "purged and created again");

    // The file's: fx of alice, a session and an unopened link.
    let cookie = rig.open(&rig.link("fx", file));
    let unopened = rig.link("fx", file);
    assert_eq!(rig.reach(file, "fx", Some(&cookie), None).0, 200);
    // A reload that removes it: closed.
    rig.redeclare(None).await;
    let (status, reason, _) = rig.reach(file, "fx", Some(&cookie), None);
    assert_eq!((status, reason.as_str()), (403, "preview_revoked"));
    // Declared again, for bob: alice's session and link open nothing of bob's.
    rig.redeclare(Some("bob")).await;
    refused(
        &rig,
        file,
        "fx",
        &cookie,
        &unopened,
        "the file's, declared again for another user",
    );
    let bobs = rig.open(&rig.link("fx", file));
    let (status, _, body) = rig.reach(file, "fx", Some(&bobs), None);
    assert!(
        status == 200 && body.contains("dev server of the file's sandbox"),
        "{body}"
    );
    // In one reload, from bob to carol (no reload in between without it): the same.
    let bobs_unopened = rig.link("fx", file);
    rig.redeclare(Some("carol")).await;
    refused(
        &rig,
        file,
        "fx",
        &bobs,
        &bobs_unopened,
        "the file's, given to another user",
    );

    // Every refusal is audited, as a denial, with its reason and the sandbox it was refused for.
    let child = rig.child.take().expect("cordon runs");
    crate::rigs::process::signal_and_wait(child, Signal::SIGTERM).await;
    let dir = &rig.dir;
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
    let refusals: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "preview" && r["reason"] == "preview_other_incarnation")
        .collect();
    assert_eq!(refusals.len(), 8, "{refusals:#?}");
    for r in &refusals {
        assert_eq!(r["decision"], "deny", "{r}");
        assert_eq!(r["status"], 403, "{r}");
        assert!(
            r["error"].as_str().unwrap_or_default().contains("earlier sandbox"),
            "{r}"
        );
    }
    for sandbox in ["vm1", "fx"] {
        assert!(
            refusals
                .iter()
                .any(|r| r["host"].as_str().unwrap().contains(&format!("-{sandbox}.")))
        );
    }
}
