//! The activity log of the project jail, run as a user without root (created by the test), through the binary:
//! what the command writes and runs is named as it sees it, however it spells it (`activity/family.py`), even
//! from a process made non-dumpable; attempts the kernel refuses say so; what cannot be read is recorded as
//! unreadable; 30,000 spellings of one folder are one key, and cordon's memory stays bounded; 8,000 files made
//! four ways are all recorded or counted (`activity/flood.py`).

use std::time::Duration;

use crate::jail::activity_checks::{FAMILY, FLOOD, activity, family, flood};
use crate::rigs::client::hash;
use crate::rigs::jail::{UserDir, chown_r, jail_as_user, user, user_dir};
use crate::rigs::wait::output_ticking;

/// cordon's peak resident memory (`VmHWM`) while it ran `script` in the project jail, and what it said.
fn run(bin: &std::path::Path, config: &std::path::Path, project: &std::path::Path, script: &str) -> (u64, String) {
    let mut peak = 0;
    let out = output_ticking(
        jail_as_user(bin, config, project, &[], script),
        Duration::from_secs(900),
        |pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let hwm = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        },
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    (peak, said)
}

#[test]
fn the_project_jail_records_what_its_command_names_as_it_sees_it_and_stays_bounded() {
    if !crate::rigs::netns::available("the_project_jail_records_what_its_command_names_as_it_sees_it_and_stays_bounded")
    {
        return;
    }
    let (uid, gid, _) = user();
    let UserDir { dir, bin, project } = user_dir("jail-activity");
    let d = dir.path();
    let yaml = format!(
        "ca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\njail: {{ grace: 1s }}\n\
         sandboxes:\n  - {{ id: laptop, user: dev, token_sha256: {h}, policy: agent }}\n\
         policies:\n  agent:\n    allow: []\n",
        d = d.display(),
        h = hash("unused"),
    );
    let config = d.join("cordon.yaml");
    std::fs::write(&config, yaml).unwrap();
    // The scripts are in the project folder (the jail shows no other folder of the test's).
    std::fs::write(project.join("family.py"), FAMILY).unwrap();
    std::fs::write(project.join("flood.py"), FLOOD).unwrap();
    std::fs::create_dir(project.join("family")).unwrap();
    std::fs::create_dir(project.join("flood")).unwrap();
    chown_r(d, uid, gid);
    let p = project.display().to_string();

    let (idle, _) = run(&bin, &config, &project, "true");
    let (_, said) = run(&bin, &config, &project, &format!("python3 {p}/family.py {p}/family"));
    assert!(said.contains("family=ok") && !said.contains("not refused"), "{said}");
    let (peak, said) = run(&bin, &config, &project, &format!("python3 {p}/flood.py {p}/flood"));
    assert!(said.contains("flood=ok"), "{said}");
    eprintln!("cordon's VmHWM: {idle} kB running `true`, {peak} kB running flood.py");

    let records = activity(&d.join("audit.jsonl"));
    assert!(records.iter().all(|r| r["sandbox"] == "laptop" && r["user"] == "dev"));
    family(&records, &format!("{p}/family"));
    flood(&records, &format!("{p}/flood"));
    // The recorder's memory is bounded: 30,000 spellings and 8,000 files cost it a few MiB at most (a recorder
    // keyed by the folder as spelled grew by 25 MiB here, and by 263 MiB in the attack that found it).
    assert!(
        peak < idle + 16 * 1024,
        "VmHWM {peak} kB after flood.py, {idle} kB after `true`"
    );
    crate::rigs::audit::assert_schema(&d.join("audit.jsonl"));
}
