//! Deadlines for everything a test waits on, so that no test can hang: a command run to its end, a started
//! process waited for, a port or a file polled for. Past its deadline the process and everything it started
//! (its process group and its descendants: a jailed command starts children) are killed, and the test fails
//! saying what it waited for, how long, and what the process had said by then.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a test waits for a process, at most, unless it says otherwise: the slowest command here (a git
/// clone and a pip install through cordon in a jail, on two shared cores) takes well under a minute.
pub(crate) const DEADLINE: Duration = Duration::from_secs(240);

/// A watch on a started process: past `limit`, it, its process group and its descendants are killed (SIGKILL),
/// and [`Deadline::check`] fails the test saying what it waited for.
pub(crate) struct Deadline {
    stop: Option<std::sync::mpsc::Sender<()>>,
    fired: Arc<AtomicBool>,
    watchdog: Option<std::thread::JoinHandle<()>>,
    what: String,
    limit: Duration,
}

impl Deadline {
    /// Watch `child` (`what` it is, for the failure) for `limit`.
    pub(crate) fn start(child: &Child, limit: Duration, what: &str) -> Deadline {
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let pid = child.id();
        let watchdog = std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                flag.store(true, Ordering::SeqCst);
                kill_tree(pid);
            }
        });
        Deadline {
            stop: Some(stop),
            fired,
            watchdog: Some(watchdog),
            what: what.to_owned(),
            limit,
        }
    }

    /// Stop watching; fail the test if the deadline passed (`seen`: what the process said, for the message).
    pub(crate) fn check(mut self, seen: &str) {
        self.stop.take();
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        assert!(
            !self.fired.load(Ordering::SeqCst),
            "{} did not end within {:?}, and was killed (with its process group and children); it said:\n{seen}",
            self.what,
            self.limit
        );
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.stop.take();
    }
}

/// Kill `pid`, every process descended from it and its process group when it leads one: stopped first, so
/// none forks or is re-parented away while the others are found.
pub(crate) fn kill_tree(pid: u32) {
    use crate::rigs::process::{Signal, signal};
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;
    let as_pid = |p: u32| Pid::from_raw(i32::try_from(p).unwrap_or(i32::MAX));
    let mut seen = vec![pid];
    // Twice: what forked between the first walk and its stop is found on the second.
    for _ in 0..2 {
        for p in descendants(pid) {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        for p in &seen {
            let _ = signal(*p, Signal::SIGSTOP);
        }
    }
    if nix::unistd::getpgid(Some(as_pid(pid))).ok() == Some(as_pid(pid)) {
        let _ = killpg(as_pid(pid), Signal::SIGKILL);
    }
    for p in &seen {
        let _ = signal(*p, Signal::SIGKILL);
    }
}

/// The processes descended from `root`, read from /proc (the parent is the 4th field of /proc/PID/stat).
fn descendants(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `PID (COMM) STATE PPID ...`; COMM may hold spaces and parentheses, so read after its last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == parent).map(|(p, _)| *p));
        i += 1;
    }
    found.remove(0);
    found
}

/// The command line of a live process, for a message (`PID` alone when it is gone).
fn cmdline(pid: u32) -> String {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(raw) if !raw.is_empty() => {
            let words: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            format!("process {pid} `{}`", words.join(" "))
        }
        _ => format!("process {pid}"),
    }
}

fn said(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A command run to its end with a deadline, in place of `output()` and `status()`, which wait for ever. Its
/// stdin is empty and its stdout and stderr are captured whatever the command set; a test that hands it other
/// streams spawns it and waits with [`TimedChild`].
pub(crate) trait Within {
    /// Run it (stdin empty, stdout and stderr captured, in a process group of its own) and wait at most
    /// [`DEADLINE`]; the test fails, naming the command, if it is not done by then.
    fn output_within(&mut self) -> Output;
    /// `output()` with a deadline of [`DEADLINE`]: `Err` only when it cannot start (a missing program).
    fn timed_output(&mut self) -> io::Result<Output>;
    /// `output()` with a deadline of `limit`.
    fn output_in(&mut self, limit: Duration) -> io::Result<Output>;
    /// `status()` with a deadline of [`DEADLINE`]; what it printed is passed on to the test's own output.
    fn timed_status(&mut self) -> io::Result<ExitStatus>;
}

impl Within for Command {
    fn output_within(&mut self) -> Output {
        self.timed_output().unwrap()
    }

    fn timed_output(&mut self) -> io::Result<Output> {
        self.output_in(DEADLINE)
    }

    fn output_in(&mut self, limit: Duration) -> io::Result<Output> {
        let what = format!("{self:?}");
        let child = self
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        Ok(wait_for(child, &what, limit))
    }

    fn timed_status(&mut self) -> io::Result<ExitStatus> {
        let out = self.timed_output()?;
        // Passed on through the test harness's capture (shown when the test fails), as `status()` would show it.
        eprint!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(out.status)
    }
}

/// Waits with a deadline on a process a test started itself (`spawn()`), in place of `wait()` and
/// `wait_with_output()`.
pub(crate) trait TimedChild {
    /// `wait()` with a deadline of [`DEADLINE`].
    fn timed_wait(&mut self) -> io::Result<ExitStatus>;
    /// `wait()` with a deadline of `limit`.
    fn wait_in(&mut self, limit: Duration) -> io::Result<ExitStatus>;
    /// `wait_with_output()` with a deadline of [`DEADLINE`].
    fn timed_wait_with_output(self) -> io::Result<Output>;
}

impl TimedChild for Child {
    fn timed_wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_in(DEADLINE)
    }

    fn wait_in(&mut self, limit: Duration) -> io::Result<ExitStatus> {
        let what = cmdline(self.id());
        let deadline = Deadline::start(self, limit, &what);
        let status = self.wait();
        deadline.check("(its output was not captured by the waiter)");
        status
    }

    fn timed_wait_with_output(self) -> io::Result<Output> {
        let what = cmdline(self.id());
        Ok(wait_for(self, &what, DEADLINE))
    }
}

/// Wait at most [`DEADLINE`] for `child` (`what` it is) and collect its output; the test fails if it is not done.
pub(crate) fn wait_within(child: Child, what: &str) -> Output {
    wait_for(child, what, DEADLINE)
}

/// Wait at most `limit` for `child` (`what` it is) and collect its output; the test fails if it is not done,
/// showing what it had written by then.
pub(crate) fn wait_for(child: Child, what: &str, limit: Duration) -> Output {
    let deadline = Deadline::start(&child, limit, what);
    let out = child.wait_with_output().unwrap();
    deadline.check(&said(&out));
    out
}

/// Poll `ready` every 50 ms until it holds; past `limit`, fail the test saying `what` was awaited.
pub(crate) fn until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}, in vain");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The text of the file at `path` once `ready` holds for it, at most 10 s; the test fails saying `what` was
/// awaited. For records a process writes after it has answered (the audit log), which a test can be ahead of.
pub(crate) fn file_once(path: &std::path::Path, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let mut text = String::new();
    until(what, Duration::from_secs(10), || {
        text = std::fs::read_to_string(path).unwrap_or_default();
        ready(&text)
    });
    text
}

/// [`until`] for async tests: the runtime's other tasks go on while it waits.
pub(crate) async fn until_async(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}, in vain");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Wait until something accepts TCP connections on `addr` (`host:port`), at most `limit`: the test fails saying
/// `who` was to listen there.
pub(crate) async fn listening(who: &str, addr: &str, limit: Duration) {
    use std::net::ToSocketAddrs;
    let addrs: Vec<_> = addr.to_socket_addrs().unwrap().collect();
    until_async(&format!("{who} to listen on {addr}"), limit, || {
        addrs
            .iter()
            .any(|a| std::net::TcpStream::connect_timeout(a, Duration::from_millis(500)).is_ok())
    })
    .await;
}

/// A future awaited at most `limit`: the test fails saying `what` it awaited.
pub(crate) async fn within<F: std::future::IntoFuture>(what: &str, limit: Duration, f: F) -> F::Output {
    match tokio::time::timeout(limit, f).await {
        Ok(v) => v,
        Err(_) => panic!("waited {limit:?} for {what}, in vain"),
    }
}

/// Run `c` to its end with its output captured, calling `tick` with its pid every 50 ms while it runs (to
/// sample it); past `limit` it and everything it started are killed and the test fails, showing its output.
pub(crate) fn output_ticking(mut c: Command, limit: Duration, mut tick: impl FnMut(u32)) -> Output {
    use std::io::Read;
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let until = Instant::now() + limit;
    let (status, late) = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break (s, false);
        }
        if Instant::now() > until {
            kill_tree(child.id());
            break (child.wait().unwrap(), true);
        }
        tick(child.id());
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    assert!(
        !late,
        "{c:?} did not end within {limit:?}, and was killed; it said:\n{}",
        said(&out)
    );
    out
}

/// The first line `child` writes on its stdout that `wanted` accepts (its stdout is taken; what follows is
/// read and dropped, so the child never writes into a closed pipe). Past `limit`, or when it ends its stdout
/// first, the child and everything it started are killed and the test fails, saying `what` it waited for and
/// the lines it had written.
pub(crate) fn line_where(
    child: &mut Child,
    what: &str,
    limit: Duration,
    wanted: impl Fn(&str) -> bool + Send + 'static,
) -> String {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("the child's stdout, piped");
    let (tx, rx) = std::sync::mpsc::channel::<Result<String, Vec<String>>>();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut lines = std::io::BufReader::new(stdout).lines().map_while(Result::ok);
        for line in lines.by_ref() {
            if wanted(&line) {
                let _ = tx.send(Ok(line));
                lines.for_each(drop);
                return;
            }
            seen.push(line);
        }
        let _ = tx.send(Err(seen));
    });
    let name = cmdline(child.id());
    match rx.recv_timeout(limit) {
        Ok(Ok(line)) => line,
        Ok(Err(seen)) => panic!(
            "{what} ({name}) ended its output without the line awaited:\n{}",
            seen.join("\n")
        ),
        Err(_) => {
            kill_tree(child.id());
            panic!("waited {limit:?} for {what} ({name}) to say the line awaited, in vain; it was killed");
        }
    }
}

/// The first line `child` writes on its stdout, within `limit` (see [`line_where`]).
pub(crate) fn first_line(child: &mut Child, what: &str, limit: Duration) -> String {
    line_where(child, what, limit, |_| true)
}
