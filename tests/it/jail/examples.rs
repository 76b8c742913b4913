//! The jail's examples, run as printed on a machine of their own ([`Isolated`]: users made with `useradd` live
//! in its `/etc` alone, root's `/var/lib/cordon` is a throwaway there, and `example.com` is its own web server):
//! `cordon jail --project . -- bash` as a user without root, its shell fed a few commands on standard input;
//! `sudo cordon jail --user alice --memory 2GiB --wall 2h -- python3 agent.py` with an agent that fetches a page
//! through cordon; `sudo cordon jail --cleanup` after a root jail was killed with SIGKILL; and the Local agents
//! page's lines with `config/examples/agent.yaml`, whose sandbox has no token, as a user without root.

use std::path::Path;

use serde_json::Value;

use crate::cli::examples::shown;
use crate::rigs::isolated::{EXAMPLE_IP, EXAMPLE_PAGE, Isolated, Ran, quoted};

/// Run `script` inside `m` in `dir`; it must exit 0.
fn ok(m: &Isolated, dir: &Path, script: &str) -> String {
    let ran = m.run(dir, script, &[], "");
    assert_eq!(ran.code, 0, "{script}:\n{}{}", ran.out, ran.err);
    ran.out
}

/// Make user `name` inside (with a home), and a copy of the binary everyone may run at `bin/cordon`.
fn user(m: &Isolated, name: &str) {
    ok(m, m.path(), &format!("useradd -m -s /bin/bash {name}"));
}

/// `line` run as `name` (its whole environment `PATH`, with the binary's copy first, `HOME` and `env`), in `dir`.
fn as_user(m: &Isolated, name: &str, dir: &Path, line: &str, env: &str, stdin: &str) -> Ran {
    let bin = m.folder("bin");
    if !bin.join("cordon").exists() {
        std::fs::copy(crate::rigs::process::BIN, bin.join("cordon")).unwrap();
    }
    let script = format!(
        "exec setpriv --reuid=$(id -u {name}) --regid=$(id -g {name}) --init-groups -- env -i \
         PATH={}:/usr/local/bin:/usr/bin:/bin HOME=/home/{name} {env} sh -c {}",
        bin.display(),
        quoted(Path::new(line))
    );
    m.run(dir, &script, &[], stdin)
}

/// The records of a JSON-lines audit file inside `m`.
fn records(m: &Isolated, file: &str) -> Vec<Value> {
    ok(m, m.path(), &format!("cat {file}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn the_project_jail_example_runs_a_shell_whose_only_way_out_is_cordon() {
    let Some(m) = Isolated::new("jail::examples::project") else {
        return;
    };
    user(&m, "dev");
    let project = m.folder("project");
    ok(&m, &project, "chown dev: .");
    let line = "cordon jail --project . -- bash";
    shown("jail", line);
    // What the person types into the shell, then leaves it.
    let typed = format!(
        "curl -sS http://example.com/\ncurl -sS --noproxy '*' --max-time 5 http://{EXAMPLE_IP}/ || echo DIRECT-REFUSED\n\
         echo written > made-inside\nexit 7\n"
    );
    let ran = as_user(&m, "dev", &project, line, "", &typed);
    assert_eq!(ran.code, 7, "the shell's exit is the jail's:\n{}{}", ran.out, ran.err);
    assert!(ran.out.starts_with(EXAMPLE_PAGE), "{}{}", ran.out, ran.err);
    assert!(
        ran.out.contains("DIRECT-REFUSED"),
        "reached the server without cordon: {}",
        ran.out
    );
    assert!(ran.err.contains("cordon jail: sandbox demo, project "), "{}", ran.err);
    assert_eq!(
        ok(&m, &project, "stat -c %U made-inside && cat made-inside"),
        "dev\nwritten\n"
    );
    // One request reached the server, from cordon; cordon's state is in the user's state folder, not here.
    assert_eq!(
        m.served().matches("\"GET / HTTP/1.1\" 200").count(),
        1,
        "{}",
        m.served()
    );
    let audit = records(&m, "/home/dev/.local/state/cordon/jail/demo/audit.jsonl");
    assert!(
        audit
            .iter()
            .any(|r| r["host"] == "example.com" && r["sandbox"] == "demo" && r["decision"] == "allow"),
        "{audit:?}"
    );
    assert_eq!(
        ok(&m, &project, "ls -A"),
        "made-inside\n",
        "the jail left files in the project"
    );
}

/// What the example's agent does: fetch a page through the jail's only way out, keep it in the working folder,
/// and say who it ran as.
const AGENT: &str = r#"import os, pwd, urllib.request
page = urllib.request.urlopen("http://example.com/", timeout=10).read().decode()
open("answer.txt", "w").write(page)
print("agent", pwd.getpwuid(os.getuid()).pw_name, "got:", page.strip())
"#;

#[test]
fn the_root_jail_examples_run_the_agent_as_alice_within_its_limits_and_clean_up_after_a_crash() {
    let Some(m) = Isolated::new("jail::examples::root") else {
        return;
    };
    crate::rigs::tool::must("sudo", &["--version"], "apt-get install sudo");
    user(&m, "alice");
    // cordon installed where sudo's secure_path finds it (in this machine's own /usr/local).
    let installed = Path::new("/usr/local/bin/cordon");
    ok(
        &m,
        m.path(),
        &format!(
            "install -m 755 {} {}",
            quoted(Path::new(crate::rigs::process::BIN)),
            installed.display()
        ),
    );
    let folder = m.folder("agent");
    std::fs::write(folder.join("agent.py"), AGENT).unwrap();
    ok(&m, &folder, "chown -R alice: .");

    let line = "sudo cordon jail --user alice --memory 2GiB --wall 2h -- python3 agent.py";
    shown("jail", line);
    let ran = m.run(&folder, line, &[], "");
    assert_eq!(ran.code, 0, "{}{}", ran.out, ran.err);
    assert_eq!(ran.out, format!("agent alice got: {}", EXAMPLE_PAGE), "{}", ran.err);
    assert_eq!(
        ok(&m, &folder, "stat -c %U answer.txt && cat answer.txt"),
        format!("alice\n{EXAMPLE_PAGE}")
    );
    let limits = ran
        .err
        .lines()
        .find(|l| l.starts_with("cordon jail: limits: "))
        .unwrap_or_default();
    assert!(
        limits.contains("memory 2GiB (") && limits.contains("wall 2h ("),
        "{}",
        ran.err
    );
    // Root's state folder (this machine's own /var/lib): the request and the jail's start with its limits.
    let audit = records(&m, "/var/lib/cordon/jail/demo/audit.jsonl");
    assert!(
        audit
            .iter()
            .any(|r| r["host"] == "example.com" && r["user"] == "demo-user" && r["decision"] == "allow"),
        "{audit:?}"
    );
    assert!(
        audit.iter().any(|r| r["kind"] == "jail"
            && r["jail"]["event"] == "start"
            && r["jail"]["mechanism"]
                .as_str()
                .is_some_and(|m| m.contains("memory 2GiB"))),
        "{audit:?}"
    );
    assert_eq!(left(&m), "", "the jail left something behind");

    // A jail killed with SIGKILL leaves its namespace, link and rules; the example removes them.
    let crashed = m.spawn(&folder, "sudo cordon jail --user alice -- sleep 600", &[]);
    for _ in 0..200 {
        if crashed.stderr().contains("cordon jail: limits: ") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        crashed.stderr().contains("cordon jail: limits: "),
        "{}",
        crashed.stderr()
    );
    let sudo = crashed.pid();
    let cordon = ok(&m, m.path(), &format!("{FIND_CORDON}\nfind {sudo}"));
    ok(&m, m.path(), &format!("kill -KILL {}", cordon.trim()));
    let ran = crashed.wait(30);
    assert_eq!(ran.code, 137, "{}", ran.err);
    let before = left(&m);
    assert!(before.contains("cordon-jail-") && before.contains("cjh-"), "{before}");
    let line = "sudo cordon jail --cleanup";
    shown("jail", line);
    let ran = m.run(&folder, line, &[], "");
    assert_eq!(ran.code, 0, "{}{}", ran.out, ran.err);
    assert!(
        ran.out.starts_with("removed: network namespace cordon-jail-") && ran.out.contains("link cjh-"),
        "{}",
        ran.out
    );
    assert_eq!(left(&m), "", "--cleanup left something");
    assert_eq!(
        ok(&m, m.path(), "pgrep -x sleep | grep -vx 1 || true"),
        "",
        "the crashed jail's command outlived it"
    );
    assert_eq!(m.run(&folder, line, &[], "").out, "nothing to remove\n");
}

/// A shell function that prints the first process named cordon below the process `$1`.
const FIND_CORDON: &str = r#"find() {
  for p in $(cat /proc/$1/task/*/children); do
    if [ "$(cat /proc/$p/comm)" = cordon ]; then echo $p; return 0; fi
    find $p && return 0
  done
  return 1
}"#;

/// What of a root jail is there: network namespaces, its links, nftables tables (one a line each).
fn left(m: &Isolated) -> String {
    ok(
        m,
        m.path(),
        "ip netns list; ip -o link show | grep -o 'cjh-[0-9a-f]*' ; nft list tables | grep cordon_jail; true",
    )
}

/// The model API of the test: `GET /v1/models` answers the list to the key it is given (argv 4) and a version
/// header, 401 otherwise; each request's key is logged on stderr.
const MODEL_API: &str = r#"import http.server, json, ssl, sys
ip, cert, key, want = sys.argv[1:5]
class Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        good = self.headers.get("x-api-key") == want and self.headers.get("anthropic-version") == "2023-06-01"
        body = {"data": [{"type": "model", "id": "claude-of-the-test"}]} if good else {"type": "error"}
        raw = json.dumps(body).encode()
        self.send_response(200 if good else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
    def log_message(self, fmt, *args):
        sys.stderr.write("key=%s %s\n" % (self.headers.get("x-api-key"), fmt % args))
        sys.stderr.flush()
server = http.server.HTTPServer((ip, 443), Api)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(cert, key)
server.socket = tls.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"#;

/// An agent that will not start without a key: it sends the key its environment holds to the model API.
const FAKE_CLAUDE: &str = "#!/bin/sh\n[ -n \"$ANTHROPIC_API_KEY\" ] || { echo 'no ANTHROPIC_API_KEY' >&2; exit 1; }\n\
exec curl -sS -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'anthropic-version: 2023-06-01' https://api.anthropic.com/v1/models\n";

/// The commands of the Local agents page's block that starts with `first`.
fn page_block(first: &str) -> Vec<String> {
    let page = include_str!("../../../docs/src/local-agents.md");
    let start = page.find(&format!("```sh\n{first}\n")).expect("the page's block");
    let body = &page[start + "```sh\n".len()..];
    body[..body.find("```").unwrap()].lines().map(str::to_owned).collect()
}

#[test]
fn the_agent_configuration_runs_as_the_local_agents_page_prints_it() {
    let Some(m) = Isolated::new("jail::examples::agent") else {
        return;
    };
    user(&m, "dev");
    let lines = page_block("mkdir -p ~/.config/cordon");
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(
        lines[4].ends_with(" -- claude"),
        "the last line starts the agent: {lines:?}"
    );
    // A checkout of cordon (the file alone), the reader's project, and the model API.
    let checkout = m.folder("checkout");
    std::fs::create_dir_all(checkout.join("config/examples")).unwrap();
    let agent = include_str!("../../../config/examples/agent.yaml");
    std::fs::write(checkout.join("config/examples/agent.yaml"), agent).unwrap();
    ok(&m, &checkout, "chmod -R a+rX . && su dev -c 'mkdir -p ~/src/myapp'");
    let api = m.folder("api");
    let ca = crate::rigs::tls::test_ca("the model API's CA");
    let (cert, key) = ca.pem_pair(&["api.anthropic.com"]);
    for (name, text) in [("ca.pem", &ca.pem), ("cert.pem", &cert), ("key.pem", &key)] {
        std::fs::write(api.join(name), text).unwrap();
    }
    m.add_host("api.anthropic.com", "93.184.215.20");
    let secret = "sk-ant-of-the-test-0123456789";
    let server = m.spawn(
        &api,
        &format!(
            "exec python3 -c {} 93.184.215.20 cert.pem key.pem {secret}",
            quoted(Path::new(MODEL_API))
        ),
        &[],
    );
    let env = format!("ANTHROPIC_API_KEY={secret}");
    let run = |line: &str| {
        let ran = as_user(&m, "dev", &checkout, line, &env, "");
        assert_eq!(ran.code, 0, "{line}:\n{}{}", ran.out, ran.err);
        ran
    };

    run(&lines[0]);
    run(&lines[1]);
    // The reader edits the copy to their agent's hosts; here, the test's model API is trusted.
    ok(
        &m,
        m.path(),
        &format!(
            "printf 'upstream:\\n  extra_roots: [%s]\\n' {} >> /home/dev/.config/cordon/agent.yaml",
            quoted(&api.join("ca.pem"))
        ),
    );
    let checked = run(&lines[2]);
    assert!(
        checked.out.starts_with("/home/dev/.config/cordon/agent.yaml: ok\n"),
        "{}",
        checked.out
    );
    assert!(checked.out.contains("by cordon jail alone"), "{}", checked.out);
    assert!(
        !checked.err.contains("WARN") && !checked.err.contains("warning"),
        "{}",
        checked.err
    );
    let ran = run(&lines[3]);
    let models: Value = serde_json::from_str(&ran.out).unwrap_or_else(|e| panic!("{e}: {}{}", ran.out, ran.err));
    assert_eq!(models["data"][0]["id"], "claude-of-the-test", "{models}");
    assert!(
        ran.err
            .contains("cordon jail: sandbox agent, project /home/dev/src/myapp writable"),
        "{}",
        ran.err
    );

    // What the page says besides: the key is not in the command's environment; an agent given a stand-in key
    // (as the page prints it) sends that, and cordon puts the real one in its place; a host the policy does
    // not name gets 403 no_rule.
    let jail = "cordon jail --config ~/.config/cordon/agent.yaml --project ~/src/myapp --";
    let inside = run(&format!("{jail} env")).out;
    assert!(
        !inside.contains(secret) && !inside.contains("ANTHROPIC_API_KEY="),
        "{inside}"
    );
    let stand_in = "-- sh -c 'ANTHROPIC_API_KEY=none exec claude'";
    assert!(include_str!("../../../docs/src/local-agents.md").contains(&format!("`{stand_in}`")));
    // The agent: a `claude` on the jail's PATH (this machine's own /usr/local) that calls the model API with the
    // key its environment holds.
    std::fs::write(m.path().join("claude"), FAKE_CLAUDE).unwrap();
    ok(&m, m.path(), "install -m 755 claude /usr/local/bin/claude");
    let line = format!("{} {stand_in}", jail.trim_end_matches(" --"));
    let ran = run(&line);
    assert!(ran.out.contains("claude-of-the-test"), "{line}: {}{}", ran.out, ran.err);
    let refused = run(&format!("{jail} curl -sS -o /dev/null -D - http://example.com/")).out;
    assert!(
        refused.starts_with("HTTP/1.1 403") && refused.contains("x-cordon-reason: no_rule"),
        "{refused}"
    );
    // Where the file's own comment says: the sandbox's CA beside the copy, the jail's audit in the state folder.
    ok(&m, m.path(), "test -s /home/dev/.config/cordon/certs/agent/ca.pem");
    let audit = records(&m, "/home/dev/.local/state/cordon/jail/agent/audit.jsonl");
    assert!(
        audit.iter().any(|r| r["host"] == "api.anthropic.com"
            && r["credentials"] == serde_json::json!(["anthropic"])
            && r["user"] == "developer"),
        "{audit:?}"
    );
    let served = server.stop(&m, "TERM").err;
    // (The shell that started the server says "Terminated" when it is stopped.)
    let requests: Vec<&str> = served.lines().filter(|l| l.starts_with("key=")).collect();
    assert!(
        requests.iter().all(|l| l.starts_with(&format!("key={secret} "))),
        "{served}"
    );
    assert_eq!(
        requests.len(),
        2,
        "the page's curl and the agent with a stand-in key: {served}"
    );
}
