//! The jail's plumbing, done with the host's own tools: `ip` (iproute2) for the namespace, the veth pair
//! and the routes, and `nft` or `iptables` for the rules. Every step is undone by `teardown`, which is
//! idempotent and also removes what a crashed jail left (the names come from the plan).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use super::plan::Plan;

/// Which firewall tool installs the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Firewall {
    /// nftables (`nft`), one table per jail.
    Nft,
    /// iptables and ip6tables, chains per jail hooked into the built-in ones.
    Iptables,
}

impl Firewall {
    /// The tool's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Firewall::Nft => "nftables",
            Firewall::Iptables => "iptables",
        }
    }

    /// `nft` when the host has it, else `iptables`; an error when it has neither.
    pub(crate) fn detect() -> Result<Firewall, String> {
        if runs("nft", &["--version"]) {
            Ok(Firewall::Nft)
        } else if runs("iptables", &["--version"]) {
            Ok(Firewall::Iptables)
        } else {
            Err("neither nft (nftables) nor iptables is installed; cordon jail needs one of them".into())
        }
    }
}

/// The ports cordon listens on at the host end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ports {
    /// The explicit proxy (`HTTP_PROXY`).
    pub(crate) proxy: u16,
    /// The transparent listener every other TCP connection is redirected to.
    pub(crate) transparent: u16,
    /// The DNS responder (UDP and TCP), where port 53 is redirected to.
    pub(crate) dns: u16,
}

/// Whether `program --version` runs.
pub(crate) fn available(program: &str) -> bool {
    runs(program, &["--version"])
}

fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run a command; its stderr becomes the error.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    run_with_input(program, args, None)
}

fn run_with_input(program: &str, args: &[&str], input: Option<&str>) -> Result<(), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write to {program}: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("{program} failed: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Create the namespace and the link: the namespace's only route is to the host end.
pub(crate) fn create_link(plan: &Plan) -> Result<(), String> {
    let (ns, h, j) = (plan.netns.as_str(), plan.host_if.as_str(), plan.jail_if.as_str());
    let host = format!("{}/30", plan.host_ip);
    let jail = format!("{}/30", plan.jail_ip);
    let gw = plan.host_ip.to_string();
    run("ip", &["netns", "add", ns])?;
    run("ip", &["link", "add", h, "type", "veth", "peer", "name", j])?;
    run("ip", &["link", "set", j, "netns", ns])?;
    // No IPv6 on the link at all: the rules below are written for IPv4, and IPv6 gets nothing.
    std::fs::write(format!("/proc/sys/net/ipv6/conf/{h}/disable_ipv6"), "1").ok();
    run("ip", &["addr", "add", &host, "dev", h])?;
    run("ip", &["link", "set", h, "up"])?;
    run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
    run(
        "ip",
        &["netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
    )
    .ok();
    run("ip", &["-n", ns, "addr", "add", &jail, "dev", j])?;
    run("ip", &["-n", ns, "link", "set", j, "up"])?;
    run("ip", &["-n", ns, "route", "add", "default", "via", &gw])?;
    // `ip netns exec` mounts this over /etc/resolv.conf inside: names are asked of cordon.
    let etc = std::path::Path::new("/etc/netns").join(ns);
    std::fs::create_dir_all(&etc).map_err(|e| format!("cannot create {}: {e}", etc.display()))?;
    std::fs::write(etc.join("resolv.conf"), format!("nameserver {gw}\n"))
        .map_err(|e| format!("cannot write {}/resolv.conf: {e}", etc.display()))?;
    Ok(())
}

/// The nftables ruleset of a jail.
pub(crate) fn nft_rules(plan: &Plan, ports: Ports) -> String {
    let (h, ip, t) = (&plan.host_if, plan.host_ip, &plan.table);
    let Ports {
        proxy,
        transparent,
        dns,
    } = ports;
    let mut s = String::new();
    let _ = write!(
        s,
        "table inet {t} {{
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname \"{h}\" ip daddr {ip} tcp dport {proxy} return
    iifname \"{h}\" meta l4proto {{ tcp, udp }} th dport 53 redirect to :{dns}
    iifname \"{h}\" meta l4proto tcp redirect to :{transparent}
  }}
  chain input {{
    type filter hook input priority filter; policy accept;
    iifname \"{h}\" ip daddr {ip} tcp dport {{ {proxy}, {transparent}, {dns} }} accept
    iifname \"{h}\" ip daddr {ip} udp dport {dns} accept
    iifname \"{h}\" drop
  }}
  chain forward {{
    type filter hook forward priority filter; policy accept;
    iifname \"{h}\" drop
    oifname \"{h}\" drop
  }}
}}
"
    );
    s
}

/// The iptables commands of a jail (each one `iptables` or `ip6tables` and its arguments).
pub(crate) fn iptables_rules(plan: &Plan, ports: Ports) -> Vec<(&'static str, Vec<String>)> {
    let (h, ip, c) = (plan.host_if.clone(), plan.host_ip.to_string(), plan.chain());
    let Ports {
        proxy,
        transparent,
        dns,
    } = ports;
    let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let nat = format!("{c}_NAT");
    let input = format!("{c}_IN");
    vec![
        ("iptables", v(&format!("-t nat -N {nat}"))),
        (
            "iptables",
            v(&format!("-t nat -A {nat} -d {ip} -p tcp --dport {proxy} -j RETURN")),
        ),
        (
            "iptables",
            v(&format!(
                "-t nat -A {nat} -p udp --dport 53 -j REDIRECT --to-ports {dns}"
            )),
        ),
        (
            "iptables",
            v(&format!(
                "-t nat -A {nat} -p tcp --dport 53 -j REDIRECT --to-ports {dns}"
            )),
        ),
        (
            "iptables",
            v(&format!("-t nat -A {nat} -p tcp -j REDIRECT --to-ports {transparent}")),
        ),
        ("iptables", v(&format!("-t nat -I PREROUTING -i {h} -j {nat}"))),
        ("iptables", v(&format!("-N {input}"))),
        (
            "iptables",
            v(&format!(
                "-A {input} -d {ip} -p tcp -m multiport --dports {proxy},{transparent},{dns} -j ACCEPT"
            )),
        ),
        (
            "iptables",
            v(&format!("-A {input} -d {ip} -p udp --dport {dns} -j ACCEPT")),
        ),
        ("iptables", v(&format!("-A {input} -j DROP"))),
        ("iptables", v(&format!("-I INPUT -i {h} -j {input}"))),
        ("iptables", v(&format!("-I FORWARD -i {h} -j DROP"))),
        ("iptables", v(&format!("-I FORWARD -o {h} -j DROP"))),
        ("ip6tables", v(&format!("-I INPUT -i {h} -j DROP"))),
        ("ip6tables", v(&format!("-I FORWARD -i {h} -j DROP"))),
    ]
}

/// Install the redirect and drop rules.
pub(crate) fn install_rules(plan: &Plan, ports: Ports, firewall: Firewall) -> Result<(), String> {
    match firewall {
        Firewall::Nft => run_with_input("nft", &["-f", "-"], Some(&nft_rules(plan, ports))),
        Firewall::Iptables => {
            for (program, args) in iptables_rules(plan, ports) {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run(program, &args)?;
            }
            Ok(())
        }
    }
}

/// Remove everything a jail of this plan may have created; what could not be removed is returned.
pub(crate) fn teardown(plan: &Plan) -> Vec<String> {
    let mut problems = Vec::new();
    let (h, c) = (plan.host_if.as_str(), plan.chain());
    // SECURITY: the link goes first: while the rest is undone, nothing left inside can reach anything.
    if runs("ip", &["link", "show", h])
        && let Err(e) = run("ip", &["link", "del", h])
    {
        problems.push(e);
    }
    // Processes left in the namespace (a crashed jail's command) are killed before it goes.
    if let Ok(out) = Command::new("ip").args(["netns", "pids", &plan.netns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
    if runs("nft", &["list", "table", "inet", &plan.table])
        && let Err(e) = run("nft", &["delete", "table", "inet", &plan.table])
    {
        problems.push(e);
    }
    let (nat, input) = (format!("{c}_NAT"), format!("{c}_IN"));
    if runs("iptables", &["--version"]) {
        // Each jump may be there once; delete until it is not.
        let jumps: [(&str, Vec<&str>); 6] = [
            ("iptables", vec!["-t", "nat", "-D", "PREROUTING", "-i", h, "-j", &nat]),
            ("iptables", vec!["-D", "INPUT", "-i", h, "-j", &input]),
            ("iptables", vec!["-D", "FORWARD", "-i", h, "-j", "DROP"]),
            ("iptables", vec!["-D", "FORWARD", "-o", h, "-j", "DROP"]),
            ("ip6tables", vec!["-D", "INPUT", "-i", h, "-j", "DROP"]),
            ("ip6tables", vec!["-D", "FORWARD", "-i", h, "-j", "DROP"]),
        ];
        for (program, args) in &jumps {
            for _ in 0..8 {
                if !runs(program, args) {
                    break;
                }
            }
        }
        for (table, chain) in [("nat", &nat), ("filter", &input)] {
            if runs("iptables", &["-t", table, "-L", chain, "-n"]) {
                let _ = run("iptables", &["-t", table, "-F", chain]);
                if let Err(e) = run("iptables", &["-t", table, "-X", chain]) {
                    problems.push(e);
                }
            }
        }
    }
    if std::path::Path::new("/run/netns").join(&plan.netns).exists()
        && let Err(e) = run("ip", &["netns", "del", &plan.netns])
    {
        problems.push(e);
    }
    let etc = std::path::Path::new("/etc/netns").join(&plan.netns);
    if etc.exists()
        && let Err(e) = std::fs::remove_dir_all(&etc)
    {
        problems.push(format!("cannot remove {}: {e}", etc.display()));
    }
    problems
}

/// What of this plan exists now (for `--cleanup` and for tests).
pub(crate) fn leftovers(plan: &Plan) -> Vec<String> {
    let mut found = Vec::new();
    if std::path::Path::new("/run/netns").join(&plan.netns).exists() {
        found.push(format!("network namespace {}", plan.netns));
    }
    if runs("ip", &["link", "show", &plan.host_if]) {
        found.push(format!("link {}", plan.host_if));
    }
    if runs("nft", &["list", "table", "inet", &plan.table]) {
        found.push(format!("nftables table inet {}", plan.table));
    }
    let c = plan.chain();
    if runs("iptables", &["-t", "nat", "-L", &format!("{c}_NAT"), "-n"]) {
        found.push(format!("iptables chain {c}_NAT"));
    }
    if runs("iptables", &["-L", &format!("{c}_IN"), "-n"]) {
        found.push(format!("iptables chain {c}_IN"));
    }
    found
}

#[cfg(test)]
#[path = "net_tests.rs"]
mod tests;
