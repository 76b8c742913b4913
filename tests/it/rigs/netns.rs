//! Network namespaces for the tests that need them (root only): a gateway namespace where cordon runs,
//! a "sandbox" behind it, an "internet" holding the upstreams, and a "metadata" namespace answering on
//! 169.254.169.254. Every address is assigned inside these namespaces; nothing touches the host's own
//! network, and everything is removed when the `Net` is dropped.

use crate::rigs::wait::Within;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsFd;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Whether namespace tests can run here. When they cannot, say so loudly; with
/// `CORDON_REQUIRE_NETNS=1` (set by .ci/run, which runs as root) that is a failure, not a skip.
pub(crate) fn available(test: &str) -> bool {
    // One name per call: tests probing at once must not find each other's probe and conclude they cannot.
    static PROBE: AtomicU32 = AtomicU32::new(0);
    let probe = format!(
        "cx-probe-{}-{}",
        std::process::id(),
        PROBE.fetch_add(1, Ordering::SeqCst)
    );
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .timed_output()
        .is_ok_and(|o| o.status.success());
    if ok {
        let _ = Command::new("ip").args(["netns", "del", &probe]).timed_status();
        return true;
    }
    crate::rigs::tool::skip(
        test,
        "needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2 to create network namespaces; run the tests \
         as root (as .ci/run does)",
        Some("CORDON_REQUIRE_NETNS"),
    );
    false
}

/// One test's namespaces and links.
pub(crate) struct Net {
    /// Where cordon runs (forwarding on, as on a real gateway host).
    pub gw: String,
    /// The jailed sandbox (or VM).
    pub sbx: String,
    /// The upstreams.
    pub inet: String,
    /// 169.254.169.254.
    pub meta: String,
    /// The third octet that keeps this test's addresses apart from others running at once.
    pub n: u8,
}

pub(crate) fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).timed_output().unwrap();
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Net {
    pub(crate) fn new() -> Net {
        let n = (NEXT.fetch_add(1, Ordering::SeqCst) + std::process::id()) as u8;
        let p = format!("cx{}", u32::from(n) * 1000 + std::process::id() % 1000);
        let net = Net {
            gw: format!("{p}-gw"),
            sbx: format!("{p}-sbx"),
            inet: format!("{p}-inet"),
            meta: format!("{p}-meta"),
            n,
        };
        for ns in [&net.gw, &net.sbx, &net.inet, &net.meta] {
            let _ = Command::new("ip").args(["netns", "del", ns]).timed_output();
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        // A /29: .2 is the sandbox; .3 is an address on the same link that no sandbox claims.
        net.link("s", &net.sbx, &format!("10.203.{n}.1/29"), &format!("10.203.{n}.2/29"));
        net.link("i", &net.inet, &format!("198.18.{n}.1/30"), &format!("198.18.{n}.2/30"));
        net.link("m", &net.meta, "169.254.169.1/24", "169.254.169.254/24");
        ip(&[
            "-n",
            &net.sbx,
            "route",
            "add",
            "default",
            "via",
            &format!("10.203.{n}.1"),
        ]);
        ip(&[
            "-n",
            &net.inet,
            "route",
            "add",
            "default",
            "via",
            &format!("198.18.{n}.1"),
        ]);
        ip(&["-n", &net.meta, "route", "add", "default", "via", "169.254.169.1"]);
        // A gateway routes; only the rules under test may keep the sandbox from the upstreams.
        net.exec_ok(&net.gw, &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
        net
    }

    fn link(&self, tag: &str, other: &str, gw_addr: &str, other_addr: &str) {
        let (a, b) = (
            format!("{}{tag}a", &self.gw[..self.gw.len() - 3]),
            format!("{}{tag}b", &self.gw[..self.gw.len() - 3]),
        );
        ip(&[
            "-n", &self.gw, "link", "add", &a, "type", "veth", "peer", "name", &b, "netns", other,
        ]);
        ip(&["-n", &self.gw, "addr", "add", gw_addr, "dev", &a]);
        ip(&["-n", &self.gw, "link", "set", &a, "up"]);
        ip(&["-n", other, "addr", "add", other_addr, "dev", &b]);
        ip(&["-n", other, "link", "set", &b, "up"]);
    }

    /// The gateway's end of the link to the sandbox.
    pub(crate) fn sbx_if(&self) -> String {
        format!("{}sa", &self.gw[..self.gw.len() - 3])
    }

    pub(crate) fn gw_ip(&self) -> String {
        format!("10.203.{}.1", self.n)
    }
    pub(crate) fn sbx_ip(&self) -> String {
        format!("10.203.{}.2", self.n)
    }
    pub(crate) fn stranger_ip(&self) -> String {
        format!("10.203.{}.3", self.n)
    }
    pub(crate) fn inet_ip(&self) -> String {
        format!("198.18.{}.2", self.n)
    }

    /// Run a command in a namespace.
    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .timed_output()
            .unwrap()
    }

    pub(crate) fn exec_ok(&self, ns: &str, args: &[&str]) -> String {
        let out = self.exec(ns, args);
        assert!(
            out.status.success(),
            "in {ns}: {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A command in a namespace, to spawn.
    pub(crate) fn command(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }

    /// A command to run in namespace `ns`'s network only, in this mount namespace (`ip netns exec` makes a
    /// private one, where a namespace the program names with `ip netns add` dies with the program): the
    /// way a program runs on a host that has only the one network.
    pub(crate) fn enter(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net=/run/netns/{ns}")).arg("--").arg(program);
        c
    }

    /// Run `f` on a thread that has entered namespace `ns` (sockets it creates stay in it).
    pub(crate) fn within<T: Send + 'static>(&self, ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap();
            nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// A tokio listener bound inside `ns`.
    pub(crate) fn listen(&self, ns: &str, addr: &str) -> tokio::net::TcpListener {
        let addr: SocketAddr = addr.parse().unwrap();
        let std = self.within(ns, move || TcpListener::bind(addr).unwrap());
        std.set_nonblocking(true).unwrap();
        tokio::net::TcpListener::from_std(std).unwrap()
    }

    /// A UDP socket bound inside `ns`.
    pub(crate) fn udp(&self, ns: &str, addr: &str) -> UdpSocket {
        let addr: SocketAddr = addr.parse().unwrap();
        self.within(ns, move || UdpSocket::bind(addr).unwrap())
    }

    /// Whether `addr` accepts a TCP connection from inside `ns`.
    pub(crate) fn connectable(&self, ns: &str, addr: &str) -> bool {
        let addr: SocketAddr = addr.parse().unwrap();
        self.within(ns, move || {
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(300)).is_ok()
        })
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in [&self.gw, &self.sbx, &self.inet, &self.meta] {
            let _ = Command::new("ip").args(["netns", "del", ns]).timed_output();
            let _ = std::fs::remove_dir_all(format!("/etc/netns/{ns}"));
        }
    }
}

/// Give a namespace a resolv.conf (`ip netns exec` mounts it over /etc/resolv.conf).
pub(crate) fn resolv_conf(ns: &str, nameserver: &str) {
    let dir = format!("/etc/netns/{ns}");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(format!("{dir}/resolv.conf"), format!("nameserver {nameserver}\n")).unwrap();
}
