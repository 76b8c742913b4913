#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_name_is_joined_to_its_folder_without_dots() {
    assert_eq!(joined("/work", "a/./b"), "/work/a/b");
    assert_eq!(joined("/work", "/etc//x"), "/etc/x");
    assert_eq!(joined("/work/", "../x"), "/work/../x");
}

#[test]
fn the_session_names_the_points_and_the_socket() {
    let s = session(Path::new("/run/x/trace.sock"));
    let t = &s["trace_session"];
    assert_eq!(t["sinks"][0]["name"], "remote");
    assert_eq!(t["sinks"][0]["config"]["endpoint"], "/run/x/trace.sock");
    let names: Vec<&str> = t["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"sentry/execve") && names.contains(&"syscall/openat/exit"));
}

#[test]
fn an_open_for_writing_is_a_file_record_and_one_for_reading_is_not() {
    let ctx = GvContext {
        thread_group_id: 7,
        credentials: None,
        cwd: "/work".into(),
    };
    let open = |flags: u32, exit: Option<GvExit>| GvOpen {
        context_data: Some(ctx.clone()),
        exit,
        sysno: u64::try_from(libc::SYS_openat).unwrap(),
        fd: i64::from(libc::AT_FDCWD),
        fd_path: String::new(),
        pathname: "out.txt".into(),
        flags,
    };
    let body = open((libc::O_WRONLY | libc::O_CREAT) as u32, None).encode_to_vec();
    let made = CallEvent::File {
        op: "create",
        path: "/work/out.txt".into(),
        to: None,
        pid: 7,
        error: None,
        unreadable: None,
        syscall: "openat",
    };
    assert_eq!(event(SYSCALL_OPEN, &body), Some(made));
    let refused = open(
        libc::O_WRONLY as u32,
        Some(GvExit {
            result: -13,
            errorno: 13,
        }),
    )
    .encode_to_vec();
    assert!(matches!(
        event(SYSCALL_OPEN, &refused),
        Some(CallEvent::File {
            error: Some("EACCES"),
            ..
        })
    ));
    assert!(event(SYSCALL_OPEN, &open(0, None).encode_to_vec()).is_none());
}
