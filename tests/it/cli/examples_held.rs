//! The examples of `cordon approvals` and of the previews, run as printed (by `sh -c`) on a machine of their own
//! ([`Isolated`]) against a running cordon whose configuration, named by `CORDON_CONFIG` as a reader's shell
//! would, holds every request to example.com for a decision (`action: ask`) and opens previews of port 3000:
//! each held request is listed, let through once and for good (its grant listed and removed), refused one by
//! one and all at once, each client getting what the example's `# ` line says; a preview link opens the sandbox's
//! dev server until the preview is closed.

use std::path::Path;

use serde_json::Value;

use super::examples::shown;
use crate::rigs::isolated::{Background, Isolated, Ran};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The cordon the examples talk to: the embedded configuration's listeners and demo sandbox, previews, and
/// every request to example.com held.
const HELD: &str = r#"listen: { proxy: 127.0.0.1:3128, admin: 127.0.0.1:9090, preview: 127.0.0.1:8443 }
previews: { domain: preview.localhost, link_ttl: 15m }
control: { admin_token: { file: state/admin-token } }
audit: { path: audit.jsonl }
approval: { timeout: 60s }
sandboxes:
  - { id: demo, user: demo-user, token_sha256: 7c43ef5ae21d43ce2743f770c68e24def1a43ee2f416d2438410c8af7af2ff2c, policy: default }
policies:
  default:
    expose: [3000]
    allow:
      - host: example.com
        action: ask
"#;

struct Held<'a> {
    m: &'a Isolated,
    work: &'a Path,
    env: [(&'a str, &'a str); 1],
}

impl Held<'_> {
    /// Run `text`, an example of `path` (checked to be printed there); it must exit 0.
    fn ok(&self, path: &str, text: &str) -> Ran {
        shown(path, text);
        let ran = self.m.run(self.work, text, &self.env, "");
        assert_eq!(ran.code, 0, "{text}:\n{}{}", ran.out, ran.err);
        ran
    }

    /// A request of the demo sandbox to example.com/`page`, in the background (it prints the status it got).
    fn request(&self, page: &str) -> Background {
        std::fs::write(self.m.path().join("www").join(page), format!("{page}\n")).unwrap();
        let line = format!(
            "curl -sS -o /dev/null -w '%{{http_code}}' -x http://demo:demo-token@127.0.0.1:3128 http://example.com/{page}"
        );
        self.m.spawn(self.work, &line, &[])
    }

    /// The ids of the held requests, once there are `n` (at most 10 s).
    fn held(&self, n: usize) -> Vec<String> {
        for _ in 0..100 {
            let ran = self.m.run(self.work, "cordon approvals list --ids", &self.env, "");
            assert_eq!(ran.code, 0, "{}", ran.err);
            let ids: Vec<String> = ran.out.lines().map(str::to_owned).collect();
            if ids.len() == n {
                return ids;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("never {n} held requests");
    }
}

/// The status a held request got, once it was decided.
fn status(request: Background) -> String {
    let ran = request.wait(30);
    assert_eq!(ran.code, 0, "{}", ran.err);
    ran.out
}

#[test]
fn the_approvals_and_previews_examples_run_as_printed_against_held_requests() {
    let Some(m) = Isolated::new("cli::examples_held") else {
        return;
    };
    let work = m.folder("work");
    std::fs::write(work.join("held.yaml"), HELD).unwrap();
    let config = work.join("held.yaml").display().to_string();
    let h = Held {
        m: &m,
        work: &work,
        env: [("CORDON_CONFIG", config.as_str())],
    };
    let server = m.spawn(&work, "cordon run", &h.env);
    assert!(m.listening(3128) && m.listening(9090), "{}", server.stderr());

    // Nothing held yet: an empty table, no ids, an empty list.
    let ran = h.ok("approvals list", "cordon approvals list");
    assert_eq!(ran.out, "ID  SANDBOX  USER  METHOD  URL  EXPIRES  EXCERPT\n");
    assert_eq!(h.ok("approvals list", "cordon approvals list --ids").out, "");
    let ran = h.ok("approvals list", "cordon approvals list --json");
    assert_eq!(json(&ran.out)["pending"], serde_json::json!([]));

    // Two held, oldest first: the table and --ids list both; the oldest is let through once.
    let first = h.request("p1");
    let oldest = h.held(1).remove(0);
    let second = h.request("p2");
    let ids = h.held(2);
    assert_eq!(ids[0], oldest, "oldest first");
    let table = h.ok("approvals list", "cordon approvals list").out;
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(rows[0].starts_with(&ids[0]) && rows[1].starts_with(&ids[1]), "{table}");
    assert!(rows[0].contains("http://example.com/p1"), "{table}");
    let line = "cordon approvals allow \"$(cordon approvals list --ids | head -n 1)\"";
    let decided = json(&h.ok("approvals allow", line).out);
    assert_eq!(decided["approval"]["id"], oldest.as_str(), "{decided}");
    assert_eq!(decided["decision"]["scope"], "once");
    assert_eq!(status(first), "200");
    assert_eq!(h.held(1), [ids[1].clone()]);

    // For good: the second goes through, and the same request again is not held; the grant is listed.
    let line = "cordon approvals allow \"$(cordon approvals list --ids | head -n 1)\" --always";
    let decided = json(&h.ok("approvals allow", line).out);
    assert_eq!(decided["decision"]["scope"], "always", "{decided}");
    assert_eq!(status(second), "200");
    assert_eq!(
        status(h.request("p2")),
        "200",
        "a standing grant lets it through without asking"
    );
    let table = h.ok("approvals grants", "cordon approvals grants").out;
    let grant = h.ok("approvals grants", "cordon approvals grants --ids").out;
    let grant = grant.trim();
    assert!(
        grant.starts_with("gr-") && table.lines().nth(1).unwrap().starts_with(grant),
        "{table}"
    );
    let listed = json(&h.ok("approvals grants", "cordon approvals grants --json").out);
    assert_eq!(listed["grants"][0]["path"], "/p2", "{listed}");

    // The grant removed, the same request is held again; refused, its client gets 403.
    let line = "cordon approvals revoke-grant \"$(cordon approvals grants --ids | tail -n 1)\"";
    assert_eq!(json(&h.ok("approvals revoke-grant", line).out)["removed"], grant);
    assert_eq!(h.ok("approvals grants", "cordon approvals grants --ids").out, "");
    let again = h.request("p2");
    h.held(1);
    let line = "cordon approvals deny \"$(cordon approvals list --ids | head -n 1)\"";
    assert_eq!(json(&h.ok("approvals deny", line).out)["decision"]["verdict"], "deny");
    assert_eq!(status(again), "403");

    // Every held request refused at once.
    let (a, b) = (h.request("p3"), h.request("p4"));
    h.held(2);
    h.ok(
        "approvals deny",
        "cordon approvals list --ids | xargs -r -n 1 cordon approvals deny",
    );
    assert_eq!((status(a), status(b)), ("403".to_owned(), "403".to_owned()));
    h.held(0);

    // The command's own example: the list, then the oldest let through for good.
    let held = h.request("p5");
    let id = h.held(1).remove(0);
    let lines = "cordon approvals list\ncordon approvals allow \"$(cordon approvals list --ids | head -n 1)\" --always";
    let ran = h.ok("approvals", lines);
    assert!(ran.out.lines().nth(1).unwrap().starts_with(&id), "{}", ran.out);
    assert_eq!(status(held), "200");
    assert!(h.ok("approvals grants", "cordon approvals grants").out.contains("/p5"));
    previews(&h);
    let stopped = server.stop(&m, "TERM");
    assert_eq!(stopped.code, 0, "{}", stopped.err);
}

/// The preview examples: agent-1 (known by the address its dev server listens on) exposes port 3000.
fn previews(h: &Held<'_>) {
    let m = h.m;
    let site = m.folder("site");
    std::fs::write(site.join("index.html"), "the dev server of agent-1\n").unwrap();
    let dev = format!(
        "python3 -m http.server 3000 --bind 127.0.0.5 --directory {}",
        crate::rigs::isolated::quoted(&site)
    );
    let _dev = m.spawn(h.work, &dev, &[]);
    let create = "cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h --source-cidr 127.0.0.5/32";
    let ran = m.run(h.work, create, &h.env, "");
    assert_eq!(ran.code, 0, "{}", ran.err);
    assert!(wait_for(m, "127.0.0.5", 3000), "the dev server did not start");

    let line = "cordon sandbox preview agent-1 --port 3000 --user alice --ttl 15m";
    let link = h.ok("sandbox preview", line).out.trim().to_owned();
    assert!(
        link.starts_with("http://3000-agent-1.preview.localhost:8443/"),
        "{link}"
    );
    assert_eq!(open(m, h.work, &link), "the dev server of agent-1\n");
    let line = "cordon sandbox preview agent-1 --port 3000 --user alice --json";
    let made = json(&h.ok("sandbox preview", line).out);
    let (id, url) = (made["id"].as_str().unwrap(), made["url"].as_str().unwrap());
    assert!(id.starts_with("pv-") && made["expires_at"].is_string(), "{made}");

    let line = "cordon sandbox close-preview agent-1 \"$PREVIEW\"";
    shown("sandbox close-preview", line);
    let env = [h.env[0], ("PREVIEW", id)];
    let ran = m.run(h.work, line, &env, "");
    assert_eq!(ran.code, 0, "{}", ran.err);
    assert_eq!(json(&ran.out)["revoked"], true, "{}", ran.out);
    let refused = m.run(h.work, &format!("{CURL_PREVIEW} '{url}'"), &[], "");
    assert!(
        refused.out.starts_with("HTTP/1.1 4"),
        "a closed preview's link still opens: {}",
        refused.out
    );
}

/// curl to the preview listener, whatever the link's host, showing the answer's head.
const CURL_PREVIEW: &str = "curl -sS -o /dev/null -D - --connect-to ::127.0.0.1:8443";

/// Open a preview `link` as a browser would: it answers 303 with a session cookie (`Secure`, which curl keeps
/// only for https), then its origin's page is asked for with that cookie; the page.
fn open(m: &Isolated, dir: &Path, link: &str) -> String {
    let head = m.run(dir, &format!("{CURL_PREVIEW} '{link}'"), &[], "").out;
    assert!(head.starts_with("HTTP/1.1 303"), "{head}");
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name}: {head}"))
            .trim()
            .to_owned()
    };
    let cookie = header("set-cookie: ").split(';').next().unwrap().to_owned();
    let location = header("location: ");
    let origin = link.split('/').take(3).collect::<Vec<_>>().join("/");
    let url = if location.starts_with('/') {
        format!("{origin}{location}")
    } else {
        location
    };
    let ran = m.run(
        dir,
        &format!("curl -sS --connect-to ::127.0.0.1:8443 -H 'Cookie: {cookie}' '{url}'"),
        &[],
        "",
    );
    assert_eq!(ran.code, 0, "{}", ran.err);
    ran.out
}

/// Whether something accepts connections at `ip`:`port` inside `m` within 10 s.
fn wait_for(m: &Isolated, ip: &str, port: u16) -> bool {
    let probe = format!(
        "for _ in $(seq 100); do (exec 3<>/dev/tcp/{ip}/{port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
    );
    m.run(m.path(), &format!("exec bash -c '{probe}'"), &[], "").code == 0
}
