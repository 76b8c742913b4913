#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::jail::activity::gvisor_wire::{GvContext, GvCredentials};

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
    assert!(names.contains(&"sentry/clone"), "the parents of programs");
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
    assert_eq!(event(SYSCALL_OPEN, &body, &mut Parents::default()), Some(made));
    let refused = open(
        libc::O_WRONLY as u32,
        Some(GvExit {
            result: -13,
            errorno: 13,
        }),
    )
    .encode_to_vec();
    assert!(matches!(
        event(SYSCALL_OPEN, &refused, &mut Parents::default()),
        Some(CallEvent::File {
            error: Some("EACCES"),
            ..
        })
    ));
    assert!(event(SYSCALL_OPEN, &open(0, None).encode_to_vec(), &mut Parents::default()).is_none());
}

#[test]
fn a_programs_parent_is_the_process_that_cloned_it_not_a_thread() {
    let ctx = |tgid: i32| GvContext {
        thread_group_id: tgid,
        credentials: None,
        cwd: "/work".into(),
    };
    let clone = |parent: i32, child: i32| {
        GvClone {
            context_data: Some(ctx(parent)),
            created_thread_group_id: child,
        }
        .encode_to_vec()
    };
    let exec = |tgid: i32| {
        GvExecve {
            context_data: Some(ctx(tgid)),
            binary_path: "/bin/true".into(),
            argv: vec!["true".into()],
        }
        .encode_to_vec()
    };
    let mut parents = Parents::default();
    assert!(event(SENTRY_CLONE, &clone(1, 5), &mut parents).is_none());
    // A thread of 5 is no new process: 5's parent stays 1.
    event(SENTRY_CLONE, &clone(5, 5), &mut parents);
    let ppid = |e: Option<CallEvent>| match e {
        Some(CallEvent::Exec { ppid, .. }) => Some(ppid),
        _ => None,
    };
    assert_eq!(ppid(event(SENTRY_EXEC, &exec(5), &mut parents)), Some(Some(1)));
    // The first program has no parent in gVisor.
    assert_eq!(ppid(event(SENTRY_EXEC, &exec(1), &mut parents)), Some(None));
}

#[test]
fn the_parents_remembered_are_bounded_and_the_newest_kept() {
    let mut parents = Parents::default();
    for child in 2..(MOST_PARENTS as i32 * 3) {
        parents.made(1, child);
    }
    assert!(parents.of.len() <= MOST_PARENTS, "{}", parents.of.len());
    assert_eq!(parents.of(MOST_PARENTS as i32 * 3 - 1), Some(1));
    assert_eq!(parents.of(2), None);
}

/// The records written, as JSON.
#[derive(Default)]
struct Kept(std::sync::Mutex<Vec<serde_json::Value>>);

impl Sink for Kept {
    fn write(&self, record: &crate::audit::Record) {
        self.0.lock().unwrap().push(serde_json::to_value(record).unwrap());
    }
}

/// One message as gVisor's remote sink frames it: the header (its size, the type, the count dropped so far, in
/// the host's byte order), then the message.
fn framed(kind: u16, dropped: u32, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&(HEADER as u16).to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&dropped.to_ne_bytes());
    m.extend_from_slice(body);
    m
}

#[test]
fn the_wire_is_read_as_gvisor_frames_it_and_what_it_dropped_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.sock");
    let listener = rustix::net::socket(AddressFamily::UNIX, SocketType::SEQPACKET, None).unwrap();
    rustix::net::bind(&listener, &SocketAddrUnix::new(&path).unwrap()).unwrap();
    rustix::net::listen(&listener, 1).unwrap();
    let ctx = |tgid| GvContext {
        thread_group_id: tgid,
        credentials: Some(GvCredentials { real_uid: 1000 }),
        cwd: "/work".into(),
    };
    // gVisor's side: the handshake, then a clone, a program, a file written, cordon's own word, a rename by
    // number, and a message of a type cordon does not read; the dropped count grows on the way.
    let messages = vec![
        framed(
            SENTRY_CLONE,
            0,
            &GvClone {
                context_data: Some(ctx(1)),
                created_thread_group_id: 2,
            }
            .encode_to_vec(),
        ),
        framed(
            SENTRY_EXEC,
            0,
            &GvExecve {
                context_data: Some(ctx(2)),
                binary_path: "/usr/bin/git".into(),
                argv: vec!["git".into(), "status".into()],
            }
            .encode_to_vec(),
        ),
        framed(
            SYSCALL_OPEN,
            3,
            &GvOpen {
                context_data: Some(ctx(2)),
                exit: Some(GvExit { result: 3, errorno: 0 }),
                sysno: u64::try_from(libc::SYS_openat).unwrap(),
                fd: i64::from(libc::AT_FDCWD),
                fd_path: String::new(),
                pathname: "notes.txt".into(),
                flags: libc::O_WRONLY as u32,
            }
            .encode_to_vec(),
        ),
        framed(
            SYSCALL_OPEN,
            3,
            &GvOpen {
                context_data: Some(ctx(2)),
                exit: None,
                sysno: u64::try_from(libc::SYS_openat).unwrap(),
                fd: i64::from(libc::AT_FDCWD),
                fd_path: String::new(),
                pathname: "/run/cordon-started".into(),
                flags: libc::O_WRONLY as u32,
            }
            .encode_to_vec(),
        ),
        framed(
            SYSCALL_RAW,
            7,
            &GvSyscall {
                context_data: Some(ctx(2)),
                exit: Some(GvExit { result: 0, errorno: 0 }),
                sysno: u64::try_from(libc::SYS_renameat2).unwrap(),
            }
            .encode_to_vec(),
        ),
        framed(99, 7, b"not a message cordon reads"),
        // Shorter than a header: skipped.
        vec![1, 2, 3],
    ];
    let gvisor = std::thread::spawn(move || {
        let conn = rustix::net::socket(AddressFamily::UNIX, SocketType::SEQPACKET, None).unwrap();
        rustix::net::connect(&conn, &SocketAddrUnix::new(&path).unwrap()).unwrap();
        rustix::net::send(&conn, &GvHandshake { version: 1 }.encode_to_vec(), SendFlags::empty()).unwrap();
        let mut answer = [0u8; 64];
        let (n, _) = rustix::net::recv(&conn, &mut answer[..], RecvFlags::empty()).unwrap();
        assert_eq!(GvHandshake::decode(&answer[..n]).unwrap().version, VERSION);
        for m in messages {
            rustix::net::send(&conn, &m, SendFlags::empty()).unwrap();
        }
    });
    let kept = Arc::new(Kept::default());
    let log = Log {
        sink: kept.clone(),
        sandbox: SandboxId::parse("sb1").unwrap(),
        user: "alice".into(),
    };
    let dropped = receive(&listener, &AtomicBool::new(false), &log, "/run/cordon-started");
    gvisor.join().unwrap();
    assert_eq!(dropped, 7);
    let records = kept.0.lock().unwrap().clone();
    let kinds: Vec<(&str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap(),
                r["exec"]["path"]
                    .as_str()
                    .or(r["file"]["path"].as_str())
                    .unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("exec", "/usr/bin/git"), ("file", "/work/notes.txt"), ("file", "?")],
        "{records:#?}"
    );
    assert_eq!(records[0]["exec"]["ppid"], 1);
    assert_eq!(records[0]["exec"]["argv"], serde_json::json!(["git", "status"]));
    assert!(records.iter().all(|r| r["sandbox"] == "sb1" && r["user"] == "alice"));
}
