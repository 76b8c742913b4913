//! VMs on a shared bridge behind the gateway (docs/src/deploying/gateway.md), in network namespaces: a gateway namespace
//! with a bridge and two VM namespaces on it, rulesets of deploy/gateway/ loaded there, and TCP and ping between
//! the namespaces.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::rigs::netns::ip;
use crate::rigs::wait::Within;

/// A gateway namespace with a bridge and two VM namespaces on it (tap2 with 52:54:00:00:00:02 and tap3 with
/// 52:54:00:00:00:03, static addresses `addr(2)` and `addr(3)`; the host is `addr(1)` on br0).
pub(crate) struct Bridge {
    pub(crate) gw: String,
    pub(crate) vm1: String,
    pub(crate) vm2: String,
    n: u32,
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for ns in [&self.gw, &self.vm1, &self.vm2] {
            let _ = Command::new("ip").args(["netns", "del", ns]).timed_output();
        }
    }
}

impl Bridge {
    pub(crate) fn new() -> Bridge {
        // Apart from other bridges of this process (tests run at once) and of other processes.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n = (std::process::id() + k * 37) % 200 + 20;
        let p = format!("cb{}-{k}", std::process::id() % 100_000);
        let b = Bridge {
            gw: format!("{p}-gw"),
            vm1: format!("{p}-vm1"),
            vm2: format!("{p}-vm2"),
            n,
        };
        for ns in [&b.gw, &b.vm1, &b.vm2] {
            let _ = Command::new("ip").args(["netns", "del", ns]).timed_output();
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        ip(&["-n", &b.gw, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &b.gw, "addr", "add", &format!("{}/24", b.addr(1)), "dev", "br0"]);
        ip(&["-n", &b.gw, "link", "set", "br0", "up"]);
        for (i, vm) in [(2u8, &b.vm1), (3u8, &b.vm2)] {
            let port = format!("tap{i}");
            ip(&[
                "-n", &b.gw, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", vm,
            ]);
            ip(&["-n", &b.gw, "link", "set", &port, "master", "br0"]);
            ip(&["-n", &b.gw, "link", "set", &port, "up"]);
            ip(&[
                "-n",
                vm,
                "link",
                "set",
                "eth0",
                "address",
                &format!("52:54:00:00:00:0{i}"),
            ]);
            ip(&["-n", vm, "addr", "add", &format!("{}/24", b.addr(i)), "dev", "eth0"]);
            ip(&["-n", vm, "link", "set", "eth0", "up"]);
        }
        // Whatever the host's default, the bridge does not hand frames to the inet tables here.
        let _ = b.exec(&b.gw, &["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0"]);
        b
    }

    pub(crate) fn addr(&self, i: u8) -> String {
        format!("10.209.{}.{i}", self.n)
    }

    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .timed_output()
            .unwrap()
    }

    pub(crate) fn load(&self, file: &str, defines: &[String]) {
        let mut args: Vec<String> = vec!["nft".into()];
        for d in defines {
            args.extend(["-D".into(), d.clone()]);
        }
        args.extend([
            "-f".into(),
            format!("{}/deploy/gateway/{file}", env!("CARGO_MANIFEST_DIR")),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.exec(&self.gw, &args);
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Run `f` with the calling thread in `ns`.
    pub(crate) fn within<T: Send + 'static>(&self, ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(path).unwrap();
            nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    pub(crate) fn tcp(&self, from: &str, to: String) -> bool {
        self.within(from, move || {
            let to: SocketAddr = to.parse().unwrap();
            std::net::TcpStream::connect_timeout(&to, Duration::from_millis(500)).is_ok()
        })
    }

    pub(crate) fn ping(&self, from: &str, to: &str) -> bool {
        self.exec(from, &["ping", "-c", "1", "-W", "1", to]).status.success()
    }
}
