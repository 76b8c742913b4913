//! What a root jail may spend, through the binary as root (cgroup v1 or v2 on this host): a fork flood stops
//! at `pids` while another sandbox's jail keeps being served, a memory hog is OOM-killed inside, `dd` into `/tmp`
//! stops at the disk size, `sleep 1d` ends at the wall limit and an idle `read` at the idle limit, each with its
//! `kind: jail` record (sandbox, user, limit, value, what holds it) and its exit status.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rigs::gateway::World;
use crate::rigs::jail::jail;
use crate::rigs::netns::available;

/// Fork 300 children that each wait 6 s, counting the forks refused, then wait for those that were made.
const FLOOD: &str = r#"
import os, time
kids, refused = [], 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(6)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids), "refused", refused, flush=True)
for k in kids:
    os.waitpid(k, 0)
"#;

/// The jail records of `w`'s audit file, as (event, limit) pairs, and the records themselves.
fn jail_records(w: &World) -> Vec<Value> {
    w.audit().into_iter().filter(|r| r["kind"] == "jail").collect()
}

fn limit_record<'a>(records: &'a [Value], limit: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["jail"]["event"] == "limit" && r["jail"]["limit"] == limit)
        .unwrap_or_else(|| panic!("no {limit} limit record in {records:#?}"))
}

/// A world, a sandbox id of its own (`prefix` and the world's number: jails of one id would share their
/// namespace and links), and a configuration for it whose jails stop with a 1 s grace.
async fn world(prefix: &str) -> (World, String, std::path::PathBuf) {
    let w = World::new().await;
    let id = format!("{prefix}{}", w.net.n);
    let config = w.config(&id, "jail: { grace: 1s }\n", None);
    (w, id, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_flood_stops_at_pids_while_another_sandbox_is_served() {
    if !available("a_fork_flood_stops_at_pids_while_another_sandbox_is_served") {
        return;
    }
    let w = World::new().await;
    let (flood_id, other_id) = (format!("flood{}", w.net.n), format!("other{}", w.net.n));
    let config = w.config(&flood_id, "jail: { grace: 1s }\n", None);
    // The other sandbox's jail: its own configuration and audit file.
    let text = std::fs::read_to_string(&config).unwrap();
    let other = w.path("other.yaml");
    std::fs::write(
        &other,
        text.replace(&flood_id, &other_id)
            .replace("audit.log", "other-audit.log"),
    )
    .unwrap();
    let flood = {
        let mut c = w.cordon_in_gateway();
        c.args(["jail", "--sandbox", &flood_id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--pids", "32", "--wall", "12s", "--"])
            .args(["python3", "-c", FLOOD])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    // Wait until the flood has hit the limit, then the other sandbox's jail works as ever.
    let until = Instant::now() + Duration::from_secs(20);
    while !jail_records(&w).iter().any(|r| r["jail"]["limit"] == "pids") {
        if Instant::now() > until {
            let out = crate::rigs::wait::wait_within(flood, "the jail");
            panic!("no pids record: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, out, err) = jail(
        &w,
        &other,
        &other_id,
        &[],
        &["curl", "-sS", "-m", "5", "https://api.test/hello"],
    );
    assert_eq!((code, out.trim()), (0, "hello from upstream"), "{err}");
    let out = crate::rigs::wait::wait_within(flood, "the jail");
    let err = String::from_utf8_lossy(&out.stderr);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{err}");
    let refused: u32 = said.split_whitespace().last().unwrap().parse().unwrap();
    assert!(said.starts_with("forked ") && refused > 250, "{said}");
    assert!(err.contains("limits: ") && err.contains("pids 32 (cgroup v"), "{err}");
    let records = jail_records(&w);
    let pids = limit_record(&records, "pids");
    assert_eq!(pids["sandbox"], flood_id.as_str());
    assert_eq!(pids["user"], "alice");
    assert_eq!(pids["jail"]["value"], "32");
    assert!(pids["jail"]["count"].as_u64().unwrap() > 0, "{pids}");
    assert!(
        pids["jail"]["mechanism"].as_str().unwrap().starts_with("cgroup v"),
        "{pids}"
    );
    assert_eq!(pids["reason"], "jail_limit");
    let events: Vec<&str> = records.iter().map(|r| r["jail"]["event"].as_str().unwrap()).collect();
    assert_eq!(events.first(), Some(&"start"));
    assert_eq!(events.last(), Some(&"end"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_hog_is_oom_killed_inside_the_jail() {
    if !available("a_memory_hog_is_oom_killed_inside_the_jail") {
        return;
    }
    let (w, id, config) = world("hog").await;
    let id = id.as_str();
    let hog = "b = bytearray(256 * 1024 * 1024); print('survived')";
    let (code, out, err) = jail(&w, &config, id, &["--memory", "48MiB"], &["python3", "-c", hog]);
    assert_eq!(code, 137, "killed by SIGKILL: {out}{err}");
    assert!(!out.contains("survived"));
    let records = jail_records(&w);
    let memory = limit_record(&records, "memory");
    assert_eq!(memory["jail"]["value"], "48MiB");
    assert!(
        memory["jail"]["detail"].as_str().unwrap().contains("OOM-killed"),
        "{memory}"
    );
    let end = records.iter().find(|r| r["jail"]["event"] == "end").unwrap();
    assert_eq!(end["jail"]["status"], 137);
}

#[tokio::test(flavor = "multi_thread")]
async fn dd_into_tmp_stops_at_the_disk_size() {
    if !available("dd_into_tmp_stops_at_the_disk_size") {
        return;
    }
    let (w, id, config) = world("disk").await;
    let id = id.as_str();
    let script = "dd if=/dev/zero of=/tmp/big bs=1M count=64 2>&1; echo dd=$?; du -m /tmp/big | cut -f1; sleep 1";
    let (code, out, err) = jail(&w, &config, id, &["--disk", "8MiB"], &["sh", "-c", script]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No space left on device"), "{out}");
    assert!(out.contains("dd=1"), "{out}");
    let written: u64 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(written <= 8, "{written} MiB in /tmp");
    // The private home too: a tmpfs of its own of that size, not a folder on the host's /run.
    let script = "dd if=/dev/zero of=$HOME/big bs=1M count=64 2>&1; echo dd=$?; du -m $HOME/big | cut -f1; \
                  grep \" $HOME \" /proc/self/mountinfo | grep -c tmpfs";
    let (code, out, err) = jail(&w, &config, id, &["--disk", "8MiB"], &["sh", "-c", script]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("No space left on device") && out.contains("dd=1"), "{out}");
    let lines: Vec<&str> = out.lines().collect();
    let written: u64 = lines[lines.len() - 2].trim().parse().unwrap();
    assert!(written <= 8, "{written} MiB in the private home");
    assert_eq!(
        lines.last().map(|l| l.trim()),
        Some("1"),
        "the home is not a tmpfs of its own: {out}"
    );
    let records = jail_records(&w);
    let disk = limit_record(&records, "disk");
    assert_eq!(disk["jail"]["value"], "8MiB");
    assert!(
        disk["jail"]["detail"].as_str().unwrap().contains("/tmp is full"),
        "{disk}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sleep_ends_at_the_wall_limit_and_an_idle_read_at_the_idle_limit() {
    if !available("sleep_ends_at_the_wall_limit_and_an_idle_read_at_the_idle_limit") {
        return;
    }
    let (w, id, config) = world("clock").await;
    let id = id.as_str();
    let started = Instant::now();
    let (code, _, err) = jail(&w, &config, id, &["--wall", "2s"], &["sleep", "1d"]);
    assert_eq!(code, 124, "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(err.contains("wall limit (2s) reached"), "{err}");
    // An idle `read`: its standard input is a pipe the test keeps open and never writes.
    let started = Instant::now();
    let mut child = w
        .cordon_in_gateway()
        .args(["jail", "--sandbox", id, "--config"])
        .arg(&config)
        .args([
            "--user",
            "65534:65534",
            "--idle",
            "2s",
            "--",
            "sh",
            "-c",
            "read line; echo got $line",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let out = crate::rigs::wait::wait_within(child, "the jail");
    drop(stdin);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(123), "{err}");
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert!(err.contains("idle limit (2s) reached"), "{err}");
    let records = jail_records(&w);
    let wall = limit_record(&records, "wall");
    assert_eq!(
        (wall["jail"]["value"].as_str(), wall["jail"]["mechanism"].as_str()),
        (Some("2s"), Some("cordon"))
    );
    let idle = limit_record(&records, "idle");
    assert_eq!(idle["jail"]["value"], "2s");
    let ends: Vec<i64> = records
        .iter()
        .filter(|r| r["jail"]["event"] == "end")
        .map(|r| r["jail"]["status"].as_i64().unwrap())
        .collect();
    assert_eq!(ends, [124, 123]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_runs_at_most_so_many_jails_at_once() {
    if !available("a_user_runs_at_most_so_many_jails_at_once") {
        return;
    }
    let w = World::new().await;
    let n = w.net.n;
    let ids: Vec<String> = (1..=4).map(|i| format!("cap{n}x{i}")).collect();
    let config = w.config(&ids[0], "limits: { per_user: { jails: 2 } }\n", None);
    let token = crate::rigs::client::hash("unused-token");
    let more: String = ids[1..]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let user = if i == 2 { "bob" } else { "alice" };
            format!("  - {{ id: {id}, user: {user}, policy: p, token_sha256: \"{token}\" }}\n")
        })
        .collect();
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("sandboxes:\n", &format!("sandboxes:\n{more}"));
    std::fs::write(&config, text).unwrap();
    let start = |id: &str| {
        w.cordon_in_gateway()
            .args(["jail", "--sandbox", id, "--config"])
            .arg(&config)
            .args(["--user", "65534:65534", "--", "sleep", "6"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // alice's first two jails run; her third is refused while they do; bob's runs.
    let first = start(&ids[0]);
    let second = start(&ids[1]);
    let running = |id: &str| {
        let plan = cordon::jail::Plan::new(
            &cordon::names::SandboxId::parse(id).unwrap(),
            cordon::jail::plan::DEFAULT_SUBNET.parse().unwrap(),
        )
        .unwrap();
        std::path::Path::new("/run/netns").join(&plan.netns).exists()
    };
    let until = Instant::now() + Duration::from_secs(20);
    while !(running(&ids[0]) && running(&ids[1])) {
        assert!(Instant::now() < until, "the first two jails never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _, err) = jail(&w, &config, &ids[2], &[], &["true"]);
    assert_eq!(code, 125, "{err}");
    assert!(
        err.contains("user alice runs 2 jail(s) on this host already")
            && err.contains(&ids[0])
            && err.contains(&ids[1])
            && err.contains("limits.per_user.jails (2)"),
        "{err}"
    );
    let (code, _, err) = jail(&w, &config, &ids[3], &[], &["true"]);
    assert_eq!(code, 0, "bob's jail runs: {err}");
    for child in [first, second] {
        let out = crate::rigs::wait::wait_within(child, "the jail");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Once they ended, alice's third jail runs.
    let (code, _, err) = jail(&w, &config, &ids[2], &[], &["true"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn wrong_limits_are_refused_by_check_and_the_command_line_naming_them() {
    use crate::rigs::process::cordon_env;
    let dir = tempfile::tempdir().unwrap();
    let config = |jail: &str| {
        let path = dir.path().join("cordon.yaml");
        std::fs::write(
            &path,
            format!(
                "{jail}\nsandboxes:\n  - {{ id: s, user: u, token_sha256: {}, policy: p }}\npolicies:\n  p:\n    allow: []\n",
                crate::rigs::client::hash("t")
            ),
        )
        .unwrap();
        path.to_str().unwrap().to_owned()
    };
    let cases = [
        (
            "jail: { cpu: lots }",
            "jail.cpu: \"lots\" is not a number of CPUs; write e.g. 1.5",
        ),
        ("jail: { cpu: 0 }", "jail.cpu: 0 is not a number of CPUs"),
        ("jail: { memory: 2GB0 }", "jail.memory: \"2GB0\" is not a size"),
        ("jail: { pids: 0 }", "jail.pids: 0 must be at least 1"),
        ("jail: { wall: soon }", "jail.wall: \"soon\" is not a duration"),
        ("jail: { grace: 0s }", "jail.grace: \"0s\" is zero"),
        (
            "jail: { cgroup: relative/path }",
            "jail.cgroup: relative/path is not an absolute path",
        ),
        ("jail: { memroy: 1GiB }", "unknown field `memroy`"),
        (
            "limits: { per_user: { jails: 0 } }",
            "limits.per_user.jails: 0 must be at least 1",
        ),
        ("audit: { activity: maybe }", "audit.activity: expected true or false"),
        ("policies_extra: 1", "unknown field `policies_extra`"),
    ];
    for (jail, said) in cases {
        let c = config(jail);
        let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
        assert_eq!(code, 2, "check must refuse {jail}: {out}{err}");
        assert!(err.contains(said), "{jail}: {err}");
    }
    let c = config("jail: { memory: 2GiB, idle: 15m }\nlimits: { per_user: { jails: 3 } }\naudit: { activity: false }");
    let text = std::fs::read_to_string(&c)
        .unwrap()
        .replace("    allow: []", "    jail: { memory: 512MiB, wall: 1h }\n    allow: []");
    std::fs::write(&c, text).unwrap();
    let (code, out, err) = cordon_env(&["check", "--config", &c], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "jail     limits memory 2GiB, pids 4096, disk 1GiB, idle 15m; policy p: memory 512MiB, pids 4096, disk \
             1GiB, wall 1h, idle 15m; activity log off; at most 3 per user"
        ),
        "{out}"
    );
    for (flag, said) in [
        (["--cpu", "1.5x"], "\"1.5x\" is not a number of CPUs"),
        (["--memory", "0"], "is zero"),
        (["--pids", "0"], "0 is not in 1.."),
        (["--wall", "later"], "\"later\" is not a duration"),
    ] {
        let (code, _, err) = cordon_env(&["jail", "--config", &c, flag[0], flag[1], "--", "true"], &[]);
        assert_eq!(code, 2, "{flag:?}: {err}");
        assert!(err.contains(said), "{flag:?}: {err}");
    }
}
