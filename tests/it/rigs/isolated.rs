//! A machine of the test's own to run printed command lines on as a reader would (root only): network, mount
//! and PID namespaces made with `unshare`, where
//!
//! - the fixed ports of the embedded configuration (3128, 9090) and the root jail's names (`/run/netns`,
//!   `/run/cordon`, its veth pair and nftables table) cannot meet another test's;
//! - `example.com` is a web server of the namespace's own, on a public address (93.184.215.14 on its loopback,
//!   named in its `/etc/hosts`, which cordon's resolver reads), so a request the examples send through cordon
//!   gets that server's answer and nothing reaches the internet;
//! - `/etc`, `/home`, `/var/lib` and `/usr/local` are overlays whose writes land in a tmpfs of the test's: users
//!   made with `useradd`, root's state in `/var/lib/cordon`, completion scripts and manual pages installed into
//!   system folders all vanish with the namespaces, and the host's stay as they were.
//!
//! Everything started inside dies with the namespaces when the rig is dropped (the PID namespace's init is
//! killed, and the kernel kills the rest).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::rigs::process::Killed;
use crate::rigs::wait::TimedChild;

/// The address `example.com` has inside.
pub(crate) const EXAMPLE_IP: &str = "93.184.215.14";

/// What the namespace's `example.com` answers to `GET /`.
pub(crate) const EXAMPLE_PAGE: &str = "hello from the test's example.com\n";

/// The PATH of every command run inside: the build's `cordon` first, then the system's.
const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How the namespaces are set up, as their first process (PID 1 until it becomes `sleep`).
const SETUP: &str = r#"
set -eu
T="$1"
ip link set lo up
ip addr add 93.184.215.14/32 dev lo
mkdir -p "$T/layers"
mount -t tmpfs -o mode=0755 layers "$T/layers"
for d in /etc /home /var/lib /usr/local; do
  n=$(printf %s "$d" | tr / _)
  mkdir -p "$T/layers/$n.up" "$T/layers/$n.work"
  mount -t overlay overlay -o "lowerdir=$d,upperdir=$T/layers/$n.up,workdir=$T/layers/$n.work" "$d"
done
for d in /run/cordon /run/netns; do
  mkdir -p "$d"
  mount -t tmpfs -o mode=0755 run "$d"
done
# Files of their own (a link, as resolv.conf often is, would lead the writes out to the host's /run).
rm -f /etc/hosts /etc/resolv.conf
printf '127.0.0.1 localhost\n::1 localhost\n127.0.1.1 %s\n93.184.215.14 example.com\n2606:2800:21f:cb07:6820:80da:af6b:8b2c example.com\n' \
  "$(hostname)" > /etc/hosts
printf 'nameserver 127.0.0.1\n' > /etc/resolv.conf
mkdir -p "$T/www"
printf 'hello from the test'"'"'s example.com\n' > "$T/www/index.html"
python3 -m http.server 80 --bind 93.184.215.14 --directory "$T/www" 2> "$T/www.log" > /dev/null &
for _ in $(seq 100); do
  if curl -sS --noproxy '*' -o /dev/null --max-time 1 http://93.184.215.14/setup-probe 2>/dev/null; then
    : > "$T/ready"
    exec sleep infinity
  fi
  sleep 0.1
done
echo "the example.com server never answered" >&2
exit 1
"#;

/// The namespaces, and the test's folder (0755, under /tmp) that holds the server's files and what the
/// commands leave.
pub(crate) struct Isolated {
    _holder: Killed,
    /// The namespaces' first process, as this (the host's) PID namespace numbers it.
    init: u32,
    dir: tempfile::TempDir,
    /// Background commands started so far.
    started: std::sync::atomic::AtomicUsize,
}

/// What a command run inside gave.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) out: String,
    pub(crate) err: String,
}

impl Isolated {
    /// New namespaces; `None` (said loudly, or a failure under `CORDON_REQUIRE_NETNS=1`) when this machine
    /// cannot make them.
    pub(crate) fn new(test: &str) -> Option<Isolated> {
        if !crate::rigs::netns::available(test) {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("cordon-isolated-")
            .tempdir_in("/tmp")
            .unwrap();
        set_mode(dir.path(), 0o755);
        let log = std::fs::File::create(dir.path().join("setup.log")).unwrap();
        let holder = Command::new("unshare")
            .args(["--net", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc"])
            .args(["bash", "-c", SETUP, "setup"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut holder = Killed(holder);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !dir.path().join("ready").exists() {
            let ended = holder.0.try_wait().unwrap();
            assert!(
                ended.is_none() && Instant::now() < deadline,
                "the namespaces were not set up ({ended:?}): {}",
                std::fs::read_to_string(dir.path().join("setup.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let pid = holder.0.id();
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
        let init = children.split_whitespace().next().unwrap().parse().unwrap();
        Some(Isolated {
            _holder: holder,
            init,
            dir,
            started: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The test's folder (also seen inside, at the same path).
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A new empty folder in the test's folder (0755).
    pub(crate) fn folder(&self, name: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        set_mode(&path, 0o755);
        path
    }

    /// `sh -c SCRIPT` inside, in `dir`, with nothing of this process's environment but `env` (and `PATH`:
    /// the build's `cordon` first), within `secs` seconds (then killed).
    fn command(&self, dir: &Path, script: &str, env: &[(&str, &str)], secs: u64) -> Command {
        let bin = Path::new(crate::rigs::process::BIN).parent().unwrap();
        let mut c = Command::new("timeout");
        c.args(["-k", "5", &secs.to_string(), "nsenter", "-t", &self.init.to_string()])
            .args(["--net", "--mount", "--pid", "--", "sh", "-c"])
            .arg(format!("cd {} || exit 99\n{script}", quoted(dir)))
            .env_clear()
            .env("PATH", format!("{}:{SYSTEM_PATH}", bin.display()))
            .envs(env.iter().copied());
        c
    }

    /// Run `script` inside (see [`Isolated::command`]), with `stdin` as its standard input, for at most two
    /// minutes.
    pub(crate) fn run(&self, dir: &Path, script: &str, env: &[(&str, &str)], stdin: &str) -> Ran {
        let mut child = self
            .command(dir, script, env, 120)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_owned();
        let feeder = std::thread::spawn(move || {
            let _ = input.write_all(stdin.as_bytes());
        });
        let out = child.timed_wait_with_output().unwrap();
        let _ = feeder.join();
        Ran {
            code: out.status.code().unwrap_or(-1),
            out: String::from_utf8_lossy(&out.stdout).into_owned(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Start `line` inside in the background (see [`Isolated::command`]), its output into files; stopped
    /// (and waited for) with [`Background::stop`], killed when dropped, and after ten minutes at most.
    pub(crate) fn spawn(&self, dir: &Path, line: &str, env: &[(&str, &str)]) -> Background {
        let n = self.started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let files = self.path().join(format!("background-{n}"));
        std::fs::create_dir(&files).unwrap();
        let pid = files.join("pid");
        // `$!` is the line's own process (sh forks, redirects, then execs it), which a signal then reaches.
        let script = format!("{line} &\necho $! > {}\nwait $!", quoted(&pid));
        let child = self
            .command(dir, &script, env, 600)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(files.join("stdout")).unwrap())
            .stderr(std::fs::File::create(files.join("stderr")).unwrap())
            .spawn()
            .unwrap();
        Background {
            child: Killed(child),
            files,
        }
    }

    /// Wait until something inside accepts TCP connections on 127.0.0.1:`port` (at most 20 s); false if
    /// nothing did.
    pub(crate) fn listening(&self, port: u16) -> bool {
        let probe = format!(
            "for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
        );
        let ran = self.run(self.path(), &format!("exec bash -c {}", quoted_str(&probe)), &[], "");
        ran.code == 0
    }

    /// Give `name` the address `ip` (on the loopback inside, in `/etc/hosts` with an IPv6 address that leads
    /// nowhere, so that no lookup waits for a DNS server), for a server the test starts there.
    pub(crate) fn add_host(&self, name: &str, ip: &str) {
        let script = format!(
            "ip addr add {ip}/32 dev lo && printf '%s %s\\n' {ip} {name} 2606:2800:220:1::{last} {name} >> /etc/hosts",
            last = ip.rsplit('.').next().unwrap_or("1")
        );
        let ran = self.run(self.path(), &script, &[], "");
        assert_eq!(ran.code, 0, "{script}: {}", ran.err);
    }

    /// The `example.com` server's request log so far (one line per request, with the client's address).
    pub(crate) fn served(&self) -> String {
        std::fs::read_to_string(self.path().join("www.log")).unwrap_or_default()
    }
}

/// A command started in the background by [`Isolated::spawn`].
pub(crate) struct Background {
    child: Killed,
    files: PathBuf,
}

impl Background {
    /// What it printed on standard error so far.
    pub(crate) fn stderr(&self) -> String {
        std::fs::read_to_string(self.files.join("stderr")).unwrap_or_default()
    }

    /// Its process id inside the namespaces, once it is known (at most 10 s).
    pub(crate) fn pid(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(self.files.join("pid"))
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "the background command never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait for it to end by itself (at most `secs` seconds): its exit code, standard output and error.
    pub(crate) fn wait(mut self, secs: u64) -> Ran {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let status = loop {
            if let Some(status) = self.child.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "it did not end within {secs} s: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Ran {
            code: status.code().unwrap_or(-1),
            out: std::fs::read_to_string(self.files.join("stdout")).unwrap_or_default(),
            err: self.stderr(),
        }
    }

    /// Send `signal` (`TERM`, `KILL`) to it inside `isolated`, and wait for it to end (at most 30 s): its exit
    /// code (128 + the signal's number when the signal ended it), standard output and error.
    pub(crate) fn stop(self, isolated: &Isolated, signal: &str) -> Ran {
        let pid = self.pid();
        let sent = isolated.run(isolated.path(), &format!("kill -{signal} {pid}"), &[], "");
        assert_eq!(sent.code, 0, "kill -{signal} {pid}: {}", sent.err);
        self.wait(30)
    }
}

/// `path` quoted for sh.
pub(crate) fn quoted(path: &Path) -> String {
    quoted_str(&path.display().to_string())
}

fn quoted_str(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
