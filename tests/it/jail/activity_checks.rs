//! What both jails' activity logs must say of the scripts in `activity/`: `family.py` (every way a command has
//! to name what it writes or runs, attempts the kernel refuses, calls whose memory is unreadable, non-dumpable
//! processes) and `flood.py` (30,000 spellings of one folder; 8,000 files made four ways).

use serde_json::Value;

/// The script that names what it writes and runs every way it can.
pub(crate) const FAMILY: &str = include_str!("activity/family.py");
/// The script that spells one folder 30,000 ways and makes 8,000 files.
pub(crate) const FLOOD: &str = include_str!("activity/flood.py");

/// The `exec` and `file` records of the audit file at `path`.
pub(crate) fn activity(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["kind"] == "exec" || r["kind"] == "file")
        .collect()
}

/// The one file record of `path` by `op` (failing the test unless there is exactly one).
fn file<'a>(records: &'a [Value], op: &str, path: &str) -> &'a Value {
    let found: Vec<&Value> = records
        .iter()
        .filter(|r| r["kind"] == "file" && r["file"]["op"] == op && r["file"]["path"] == path)
        .collect();
    assert_eq!(found.len(), 1, "one {op} of {path} in {records:#?}");
    found[0]
}

/// The exec records whose `argv[0]` is `name`.
fn execs<'a>(records: &'a [Value], name: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["kind"] == "exec" && r["exec"]["argv"][0] == name)
        .collect()
}

/// `family.py` run in `work` (the folder the command may write) left these records.
pub(crate) fn family(records: &[Value], work: &str) {
    let done = |op: &str, path: &str| {
        let r = file(records, op, path);
        assert_eq!(r["reason"], "jail_file_written", "{r}");
        assert!(r["file"]["error"].is_null() && r["file"]["unreadable"].is_null(), "{r}");
        r
    };
    // Every spelling names the file as the command sees it: resolved in its root, from its folder, through
    // /proc/self, /proc/thread-self, its descriptors and its links.
    for name in [
        "rel.txt",
        "proc-self.txt",
        "thread-self.txt",
        "fd-link.txt",
        "dev-fd.txt",
        "dirfd.txt",
        "dots.txt",
    ] {
        done("create", &format!("{work}/spell/{name}"));
    }
    // A link in the jail's own /tmp to a folder only the jail has: resolved in the jail's root, not cordon's.
    done("create", "/tmp/inner-real/abs-link.txt");
    assert_eq!(done("link", "/tmp/inner-link")["file"]["to"], "/tmp/inner-real");
    // openat2: its flags read from the caller's memory; a create is one, a write a write, a read nothing.
    let openat2 = done("create", &format!("{work}/spell/openat2.txt"));
    assert_eq!(openat2["file"]["syscall"], "openat2");
    let rel_writes: Vec<&Value> = records.iter().filter(|r| r["file"]["syscall"] == "openat2").collect();
    assert_eq!(rel_writes.len(), 2, "{rel_writes:#?}");
    assert!(
        rel_writes
            .iter()
            .any(|r| r["file"]["op"] == "write" && r["file"]["path"] == format!("{work}/spell/rel.txt"))
    );
    let fifo = done("create", &format!("{work}/ops/fifo"));
    assert!(fifo["file"]["syscall"].as_str().unwrap().starts_with("mknod"), "{fifo}");
    done("mkdir", &format!("{work}/ops/made"));
    done("create", &format!("{work}/ops/(unnamed)"));
    let renamed = done("rename", &format!("{work}/ops/a.txt"));
    assert_eq!(renamed["file"]["to"], format!("{work}/ops/renamed.txt"));
    let hard = done("link", &format!("{work}/ops/hard.txt"));
    assert_eq!(hard["file"]["to"], format!("{work}/ops/renamed.txt"));
    done("remove", &format!("{work}/ops/renamed.txt"));
    // An O_PATH open neither reads nor writes (the kernel ignores its other flags): no record.
    assert!(
        !records
            .iter()
            .any(|r| r["file"]["path"] == format!("{work}/ops/hard.txt") && r["file"]["op"] != "link")
    );
    // Attempts the kernel refuses are attempts, with its error.
    for (op, path, error) in [
        ("create", "/usr/cordon-read-only.txt".to_string(), "EROFS"),
        ("create", format!("{work}/missing/enoent.txt"), "ENOENT"),
        ("mkdir", format!("{work}/fail/sub"), "EEXIST"),
        ("write", format!("{work}/fail/sub"), "EISDIR"),
        ("create", format!("{work}/fail/file.txt/enotdir.txt"), "ENOTDIR"),
        ("write", format!("{work}/fail/lnk"), "ELOOP"),
        ("create", format!("{work}/locked/eacces.txt"), "EACCES"),
    ] {
        let r = records
            .iter()
            .find(|r| r["file"]["op"] == op && r["file"]["path"] == path.as_str() && !r["file"]["error"].is_null())
            .unwrap_or_else(|| panic!("no attempt {op} {path} in {records:#?}"));
        assert_eq!(r["reason"], "jail_attempted", "{r}");
        assert_eq!(r["file"]["error"], error, "{r}");
    }
    let missing = execs(records, "no-such");
    assert_eq!(missing.len(), 1, "{records:#?}");
    assert_eq!(missing[0]["reason"], "jail_attempted");
    assert_eq!(missing[0]["exec"]["error"], "ENOENT");
    assert_eq!(missing[0]["exec"]["path"], "/usr/bin/cordon-no-such-program");
    // Programs with no path: a memfd run by its descriptor and through /proc/self/fd.
    for name in ["anon-fd", "anon-proc"] {
        let run = execs(records, name);
        assert_eq!(run.len(), 1, "{name}: {records:#?}");
        assert_eq!(run[0]["exec"]["path"], "/memfd:cordon-anon (deleted)", "{}", run[0]);
        assert_eq!(run[0]["exec"]["anonymous"], true, "{}", run[0]);
        assert_eq!(run[0]["reason"], "jail_exec");
    }
    let again = execs(records, "self-exe");
    assert_eq!(again.len(), 1, "{records:#?}");
    let python = again[0]["exec"]["path"].as_str().unwrap();
    assert!(
        python.starts_with("/usr/bin/python3."),
        "/proc/self/exe names the program: {python}"
    );
    // Non-dumpable processes: one that said so, one that runs a program it may not read.
    done("create", &format!("{work}/nd.txt"));
    done("mkdir", &format!("{work}/nd-dir"));
    done("mkdir", &format!("{work}/nd-dir/nd-at"));
    let nd = execs(records, "nd-true");
    assert_eq!(nd.len(), 1, "{records:#?}");
    assert_eq!(nd[0]["exec"]["path"], "/usr/bin/true");
    assert_eq!(
        execs(records, "./touch-x")[0]["exec"]["path"],
        format!("{work}/touch-x")
    );
    done("create", &format!("{work}/nd-touch.txt"));
    // What cannot be read is recorded as unreadable, with its system call: not left out.
    for (kind, syscall) in [("exec", None), ("file", Some("openat"))] {
        let r = records
            .iter()
            .find(|r| r["kind"] == kind && r["reason"] == "jail_unreadable")
            .unwrap_or_else(|| panic!("no unreadable {kind} in {records:#?}"));
        assert_eq!(r[kind]["path"], "?", "{r}");
        assert!(r[kind]["unreadable"].as_str().unwrap().contains("memory of pid"), "{r}");
        if let Some(s) = syscall {
            assert_eq!(r[kind]["syscall"], s, "{r}");
        }
    }
    let unreadable = records.iter().filter(|r| r["reason"] == "jail_unreadable").count();
    assert_eq!(unreadable, 2, "only the two calls with no memory: {records:#?}");
}

/// `flood.py` run in `work` left these records: its 30,000 spellings keyed by the one folder they name, and every
/// one of its 8,000 files recorded or counted.
pub(crate) fn flood(records: &[Value], work: &str) {
    let in_folder = |folder: &str| -> (u64, u64) {
        let one_by_one = records
            .iter()
            .filter(|r| {
                r["kind"] == "file"
                    && (r["file"]["op"] == "create" || r["file"]["op"] == "write")
                    && r["file"]["path"]
                        .as_str()
                        .is_some_and(|p| p.rsplit_once('/').is_some_and(|(d, _)| d == folder))
            })
            .count() as u64;
        let counted: u64 = records
            .iter()
            .filter(|r| r["file"]["op"] == "many" && r["file"]["path"] == folder)
            .map(|r| {
                let by = &r["file"]["aggregated"]["by"];
                by["create"].as_u64().unwrap_or(0) + by["write"].as_u64().unwrap_or(0)
            })
            .sum();
        (one_by_one, counted)
    };
    // 8,000 files, 2,000 each way: every one recorded or counted in its folder's summaries.
    let ways: Vec<(&str, u64, u64)> = ["shell", "xargs", "spawn", "threads"]
        .into_iter()
        .map(|way| {
            let (one, counted) = in_folder(&format!("{work}/count/{way}"));
            (way, one, counted)
        })
        .collect();
    assert!(
        ways.iter().all(|(_, one, counted)| one + counted == 2_000),
        "(way, recorded, counted): {ways:?}"
    );
    // 30,000 opens of one file, spelled 30,000 ways: one folder, one key, a summary per window.
    let (one, counted) = in_folder(&format!("{work}/sp"));
    assert_eq!(one + counted, 30_000, "{one} recorded, {counted} counted");
    let summaries = records.iter().filter(|r| r["file"]["op"] == "many").count();
    assert!(summaries < 60, "{summaries} summaries");
    assert!(records.len() < 3_000, "{} records", records.len());
    assert!(
        !records
            .iter()
            .any(|r| r["file"]["path"].as_str().is_some_and(|p| p.contains("/./"))),
        "no path as spelled"
    );
    assert!(
        !records.iter().any(|r| r["file"]["path"] == "*"),
        "nothing past the bounds on folders"
    );
}
