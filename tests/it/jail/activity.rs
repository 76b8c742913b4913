//! The activity log of the root jail, through the binary as root: a script that clones a git repository, installs
//! a wheel with pip and opens a file for writing with Python yields, in order, an `exec` record for each program
//! (path, arguments, folder, pid, parent, uid) and a `file` record for what each wrote, in the same hash-chained
//! log as the network records, with the sandbox and its user; a flood of files in one folder is summarised.

use std::process::Command;

use serde_json::Value;

use crate::jail::activity_checks::{FAMILY, FLOOD, family, flood};
use crate::rigs::gateway::World;
use crate::rigs::jail::jail;
use crate::rigs::netns::available;
use crate::rigs::wait::Within;

#[tokio::test(flavor = "multi_thread")]
async fn what_the_jailed_command_runs_and_writes_is_recorded_in_order_in_the_chain() {
    if !available("what_the_jailed_command_runs_and_writes_is_recorded_in_order_in_the_chain") {
        return;
    }
    let w = World::new().await;
    let id = format!("activity{}", w.net.n);
    let config = w.config(&id, "audit: { path: AUDIT }\n", None);
    // The audit chain checked below: this test's own file (the world's is shared with the config's default).
    let text = std::fs::read_to_string(&config).unwrap();
    let audit = w.path("activity-audit.jsonl");
    let text = text.replace("audit: { path: AUDIT }\n", "").replace(
        &format!("{}/audit.log", w.dir.path().display()),
        &audit.display().to_string(),
    );
    std::fs::write(&config, text).unwrap();
    // The work folder the jail may write: a bare repository and a wheel in it.
    let work = w.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let (_repos, _, root) = crate::e2e::git::repositories();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(root.join("repo.git"))
        .arg(&work)
        .timed_status()
        .unwrap();
    assert!(copied.success());
    let built = Command::new("python3")
        .args(["-c", crate::e2e::pip::BUILD_WHEEL])
        .arg(&work)
        .timed_output()
        .unwrap();
    assert!(built.status.success());
    // The command's user (nobody) owns it, as a user owns the project they jail.
    crate::rigs::jail::chown_r(&work, 65534, 65534);
    let wheel = crate::e2e::pip::WHEEL;
    let w_ = work.display();
    let script = format!(
        "cd {w_} && git clone -q ./repo.git clone && echo cloned=$(cat clone/README)
python3 -m pip install -q --no-deps --no-index --disable-pip-version-check --no-cache-dir --target lib ./{wheel} && echo pip=ok
python3 -c 'open(\"{w_}/opened.txt\", \"w\").write(\"x\")' && echo opened=ok
mkdir many && for i in $(seq 1 100); do : > many/f$i; done; echo many=ok"
    );
    let (code, out, err) = jail(&w, &config, &id, &[], &["sh", "-c", &script]);
    assert_eq!(code, 0, "{out}{err}");
    for said in ["cloned=first", "pip=ok", "opened=ok", "many=ok"] {
        assert!(out.contains(said), "{said}: {out}{err}");
    }
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let activity: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "exec" || r["kind"] == "file")
        .collect();
    assert!(
        activity
            .iter()
            .all(|r| r["sandbox"] == id.as_str() && r["user"] == "alice")
    );
    // A program by the name it was run as (argv[0]): its path is where that name leads, links followed
    // (`sh` is /usr/bin/dash here, `python3` /usr/bin/python3.11).
    let execs: Vec<&str> = activity
        .iter()
        .filter(|r| r["reason"] == "jail_exec" && r["exec"]["aggregated"].is_null())
        .map(|r| r["exec"]["argv"][0].as_str().unwrap())
        .collect();
    let position = |name: &str| {
        execs
            .iter()
            .position(|p| *p == name)
            .unwrap_or_else(|| panic!("no exec of {name} in {execs:#?}"))
    };
    assert!(position("sh") < position("git"), "{execs:#?}");
    assert!(position("git") < position("python3"), "{execs:#?}");
    let git = activity
        .iter()
        .find(|r| r["reason"] == "jail_exec" && r["exec"]["path"].as_str().is_some_and(|p| p.ends_with("/git")))
        .unwrap();
    assert_eq!(
        git["exec"]["argv"],
        serde_json::json!(["git", "clone", "-q", "./repo.git", "clone"])
    );
    assert_eq!(git["exec"]["cwd"], w_.to_string());
    assert_eq!(git["exec"]["uid"], 65534);
    assert!(git["exec"]["pid"].as_u64().unwrap() > 0 && git["exec"]["ppid"].as_u64().unwrap() > 0);
    // What each wrote, after the program that wrote it.
    let file_at = |suffix: &str| {
        activity
            .iter()
            .position(|r| r["kind"] == "file" && r["file"]["path"].as_str().is_some_and(|p| p.ends_with(suffix)))
            .unwrap_or_else(|| panic!("no file record for {suffix}"))
    };
    let exec_at = |name: &str| {
        activity
            .iter()
            .position(|r| r["reason"] == "jail_exec" && r["exec"]["argv"][0] == name)
            .unwrap()
    };
    assert!(exec_at("git") < file_at("/clone/README"));
    assert!(exec_at("python3") < file_at("/lib/cordon_e2e_hello.py"));
    assert!(file_at("/lib/cordon_e2e_hello.py") < file_at("/opened.txt"));
    let opened = &activity[file_at("/opened.txt")];
    assert!(
        activity.iter().all(|r| r["reason"] != "jail_unreadable"),
        "{activity:#?}"
    );
    assert_eq!(opened["file"]["op"], "create");
    assert_eq!(opened["reason"], "jail_file_written");
    // A program that exits as soon as its call went on (mkdir) is recorded all the same: what a record says is
    // read while the call waits, not from a /proc entry that may be gone by then.
    assert!(
        activity
            .iter()
            .any(|r| r["file"]["op"] == "mkdir" && r["file"]["path"] == format!("{w_}/many")),
        "no record of mkdir many"
    );
    // 100 files in one folder: the first recorded one by one, the rest in a summary.
    let one_by_one = activity
        .iter()
        .filter(|r| r["file"]["path"].as_str().is_some_and(|p| p.contains("/many/f")))
        .count();
    assert!(one_by_one < 100, "{one_by_one} records for 100 files");
    let summary = activity
        .iter()
        .find(|r| r["file"]["op"] == "many" && r["file"]["path"].as_str().is_some_and(|p| p.ends_with("/many")))
        .expect("a summary of the folder");
    let many: Vec<&&Value> = activity
        .iter()
        .filter(|r| r["file"]["path"].as_str().is_some_and(|p| p.contains("many")))
        .collect();
    assert_eq!(
        summary["file"]["aggregated"]["count"].as_u64().unwrap() + one_by_one as u64,
        100,
        "{many:#?}"
    );
    // One chain with the network records.
    crate::rigs::audit::assert_schema(&audit);
    let (code, _, said) =
        crate::rigs::process::cordon(&["audit", "verify", "--no-signatures", audit.to_str().unwrap()]);
    assert_eq!(code, 0, "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_jail_records_what_its_command_names_as_it_sees_it_and_every_file_it_makes() {
    if !available("the_root_jail_records_what_its_command_names_as_it_sees_it_and_every_file_it_makes") {
        return;
    }
    let w = World::new().await;
    let id = format!("family{}", w.net.n);
    let config = w.config(&id, "audit: { path: AUDIT }\n", None);
    let text = std::fs::read_to_string(&config).unwrap();
    let audit = w.path("family-audit.jsonl");
    let text = text.replace("audit: { path: AUDIT }\n", "").replace(
        &format!("{}/audit.log", w.dir.path().display()),
        &audit.display().to_string(),
    );
    std::fs::write(&config, text).unwrap();
    let work = w.path("work");
    for sub in ["family", "flood"] {
        std::fs::create_dir_all(work.join(sub)).unwrap();
    }
    std::fs::write(work.join("family.py"), FAMILY).unwrap();
    std::fs::write(work.join("flood.py"), FLOOD).unwrap();
    crate::rigs::jail::chown_r(&work, 65534, 65534);
    let w_ = work.display().to_string();
    for (script, said) in [("flood", "flood=ok"), ("family", "family=ok")] {
        let (code, out, err) = jail(
            &w,
            &config,
            &id,
            &[],
            &["python3", &format!("{w_}/{script}.py"), &format!("{w_}/{script}")],
        );
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains(said) && !out.contains("not refused"), "{out}{err}");
    }
    let records = crate::jail::activity_checks::activity(&audit);
    assert!(
        records
            .iter()
            .all(|r| r["sandbox"] == id.as_str() && r["user"] == "alice")
    );
    flood(&records, &format!("{w_}/flood"));
    family(&records, &format!("{w_}/family"));
    crate::rigs::audit::assert_schema(&audit);
}
