//! `cordon jail -- CMD`: run a command in a network namespace whose only way out is cordon.
//!
//! The jail creates a namespace and a veth pair (names and a /30 derived from the sandbox id), starts
//! cordon's explicit proxy, transparent listener and DNS responder on the host end, installs rules
//! (nftables or iptables) that redirect every TCP connection to the transparent listener and DNS to the
//! responder and drop everything else (UDP, QUIC, ICMP, IPv6), and runs the command inside with the
//! sandbox's proxy, CA and placeholders in its environment. When the command exits or the jail is
//! stopped, everything it created is removed; what a crashed jail left is removed by the next run for
//! the same sandbox (or by `--cleanup`). While nothing is removed, the rules still hold: a command that
//! outlives its jail reaches nothing. The command runs under the base seccomp filter ([`seccomp`]: io_uring,
//! ptrace, keyrings, foreign socket families and ABIs refused), which bubblewrap applies (`--seccomp FD`).

pub(crate) mod activity;
mod bubble;
use bubble::Confined;
mod common;
mod confine;
mod git;
mod gvisor;
mod inotify;
mod leftovers;
pub(crate) mod limits;
mod links;
pub(crate) mod net;
pub mod plan;
mod planted;
mod procs;
pub(crate) mod relay;
mod seccomp;
mod user;
pub(crate) mod view;

use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net};

use crate::config::Config;
use crate::config::jail::Isolation;
use crate::proxy::server::{self, Entry};
use crate::state::ProxyState;
pub use common::ChildSignals;

pub(crate) use common::{Options, pick_sandbox};
pub(crate) use net::{Firewall, Ports};
pub use plan::Plan;
pub(crate) use view::HomeMode;

/// Whether this process runs with uid 0 (read from /proc, no unsafe).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// Hold the jail's lock: one jail per sandbox at a time.
fn lock(plan: &Plan) -> Result<File, String> {
    std::fs::create_dir_all(&plan.run_dir).map_err(|e| format!("cannot create {}: {e}", plan.run_dir.display()))?;
    let path = plan.run_dir.join("lock");
    let file = File::create(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    file.try_lock().map_err(|_| {
        format!(
            "a jail for sandbox {} is already running (it holds {})",
            plan.sandbox,
            path.display()
        )
    })?;
    Ok(file)
}

/// Remove what an earlier jail for this sandbox left; returns what was found.
pub(crate) fn cleanup(config: &Config, sandbox: Option<&str>, subnet: Ipv4Net) -> Result<Vec<String>, String> {
    let id = pick_sandbox(config, sandbox)?;
    if !is_root() {
        return Err("cordon jail --cleanup needs root".into());
    }
    let plan = Plan::new(&id, subnet)?;
    let _lock = lock(&plan)?;
    let parent = config.jail.cgroup.as_deref();
    let found = leftovers::found(&plan, parent);
    let problems = leftovers::remove(&plan, parent);
    if problems.is_empty() {
        Ok(found)
    } else {
        Err(problems.join("; "))
    }
}

/// Jail `options.command`; returns its exit code (128 + signal if a signal ended it).
pub(crate) fn run(mut config: Config, options: Options) -> Result<i32, String> {
    if options.command.is_empty() {
        return Err("no command given; write it after --, e.g. cordon jail -- curl https://example.com".into());
    }
    // A signal blocked since cordon started (a parent's mask survives exec) would never reach cordon, which passes
    // on what it gets (and learns of its children's end by SIGCHLD): every thread it starts inherits this mask.
    nix::sys::signal::SigSet::all()
        .thread_unblock()
        .map_err(|e| format!("cannot unblock signals: {e}"))?;
    let id = pick_sandbox(&config, options.sandbox.as_deref())?;
    let isolation = options.isolation.unwrap_or_else(|| {
        let policy = config.sandboxes.iter().find(|s| s.id == id).map(|s| s.policy.as_str());
        config.jail.isolation_for(policy.unwrap_or_default())
    });
    if let Some(project) = options.project.clone() {
        if isolation == Isolation::Gvisor {
            return Err(format!(
                "--project runs without root, and the gVisor jail needs root (runsc's rootless mode cannot join \
                 the namespace whose rules send everything through cordon); run cordon jail --isolation gvisor \
                 through sudo without --project, or give --isolation namespace{}",
                if options.isolation.is_none() {
                    " (the configuration's jail.isolation is gvisor)"
                } else {
                    ""
                }
            ));
        }
        return user::run(config, options, &project);
    }
    let plan = Plan::new(&id, options.subnet)?;
    if !is_root() {
        return Err(
            "cordon jail without --project needs root: it creates a network namespace, a veth pair and firewall \
             rules (run it with sudo; the command itself runs as the user behind sudo). Without root, give the \
             folder the command may write: cordon jail --project DIR -- CMD"
                .into(),
        );
    }
    if isolation == Isolation::Gvisor && !net::available("runsc") {
        return Err(
            "cordon jail --isolation gvisor runs the command under gVisor's runsc, which is not installed \
                    (apt-get install runsc, or gVisor's own packages: https://gvisor.dev/docs/user_guide/install/)"
                .into(),
        );
    }
    if isolation == Isolation::Namespace && !net::available("bwrap") {
        return Err(
            "cordon jail runs the command under bubblewrap, which is not installed (apt-get install \
                    bubblewrap, dnf install bubblewrap)"
                .into(),
        );
    }
    let firewall = match options.firewall {
        Some(f) => f,
        None => Firewall::detect()?,
    };
    let sudo = |k: &str| std::env::var(k).ok();
    let who = confine::who(
        options.user.as_deref(),
        sudo("SUDO_UID").as_deref(),
        sudo("SUDO_GID").as_deref(),
        options.allow_root,
    )?;
    if let Some(path) = common::audit_apart(&mut config, &id)? {
        eprintln!(
            "cordon jail: audit records go to {} (not the command's output)",
            path.display()
        );
    }
    let view = root_view(&config, &options, &who, &plan)?;
    let _lock = lock(&plan)?;
    let _place = common::place(&config, &id)?;
    let mut view = view;
    let git = git::guard(&mut view, options.writable_git)?;
    let stale = leftovers::found(&plan, config.jail.cgroup.as_deref());
    if !stale.is_empty() {
        eprintln!("cordon jail: removing what an earlier jail left: {}", stale.join(", "));
        let problems = leftovers::remove(&plan, config.jail.cgroup.as_deref());
        if !problems.is_empty() {
            return Err(format!(
                "cannot remove an earlier jail's leftovers: {}",
                problems.join("; ")
            ));
        }
    }
    // The sandbox is known by the jail's address; nothing else changes in the config.
    if let Some(spec) = config.sandboxes.iter_mut().find(|s| s.id == id) {
        spec.source_cidrs
            .push(IpNet::V4(Ipv4Net::new(plan.jail_ip, 32).map_err(|e| e.to_string())?));
    }
    config.control.watch = false;
    let audit = crate::logging::init(&config.audit, &config.audit_chain, config.log_format)?;
    let (supervision, sink) = limits::Supervision::new(&config, &id, options.limits, audit.sink.clone());
    view.tmpfs_size = supervision.bounds.limits.disk;
    if let Some(view::PrivateHome::Host(private)) = &view.private_home {
        confine::fresh_home(private, &who, view.tmpfs_size)?;
    }
    let result = net::create_link(&plan).and_then(|()| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the runtime: {e}"))?;
        rt.block_on(serve(
            config,
            sink,
            &plan,
            firewall,
            Confined {
                who,
                view,
                command: options.command,
                child_signals: options.child_signals,
                git: git.as_ref(),
                isolation,
            },
            &supervision,
        ))
    });
    supervision.ended(&result);
    let problems = net::teardown(&plan);
    if !problems.is_empty() {
        eprintln!("cordon jail: could not remove everything: {}", problems.join("; "));
    }
    result
}

/// The root jail's view: the working folder writable (refused when one of cordon's files lies in it), a
/// private home (or the real one, read-only), cordon's files and the host sockets listed at start hidden.
fn root_view(config: &Config, options: &Options, who: &confine::Who, plan: &Plan) -> Result<view::View, String> {
    let files = confine::cordons_files(config, options.config_file.as_deref());
    let home = confine::account(who).map(|u| view::resolve(&u.dir));
    let cwd = std::env::current_dir().map_or_else(|_| "/".into(), |c| view::resolve(&c));
    let writable = confine::working_folder(&cwd, home.as_deref());
    let what = "the working folder, which the command may write";
    if let Some(w) = &writable {
        view::refuse_inside(&files, w, what)?;
    }
    links::refuse_links(&files, writable.as_deref(), what)?;
    let mut hidden = files;
    hidden.extend(confine::host_sockets());
    Ok(view::View {
        tmpfs_size: None,
        writable,
        private_home: (options.home == view::HomeMode::Private)
            .then(|| view::PrivateHome::Host(plan.run_dir.join("private/home"))),
        home,
        git: Vec::new(),
        hidden,
        empty: plan.run_dir.join("empty"),
    })
}

async fn bind_all(plan: &Plan) -> Result<(Vec<(tokio::net::TcpListener, Entry)>, DnsSockets, Ports), String> {
    let at = SocketAddr::from((plan.host_ip, 0));
    let err = |what: &str, e: std::io::Error| format!("cannot listen on {} ({what}): {e}", plan.host_ip);
    let proxy = tokio::net::TcpListener::bind(at).await.map_err(|e| err("proxy", e))?;
    let transparent = crate::proxy::entry::transparent::origdst::bind(at, false).map_err(|e| err("transparent", e))?;
    let dns = crate::proxy::entry::dns::bind(at).await.map_err(|e| err("DNS", e))?;
    let port = |a: std::io::Result<SocketAddr>| a.map(|a| a.port()).unwrap_or(0);
    let ports = Ports {
        proxy: port(proxy.local_addr()),
        transparent: port(transparent.local_addr()),
        dns: port(dns.0.local_addr()),
    };
    Ok((
        vec![(proxy, Entry::Explicit), (transparent, Entry::Transparent)],
        dns,
        ports,
    ))
}

type DnsSockets = (tokio::net::UdpSocket, tokio::net::TcpListener);

async fn serve(
    config: Config,
    audit: Arc<dyn crate::audit::Sink>,
    plan: &Plan,
    firewall: Firewall,
    confined: Confined<'_>,
    supervision: &limits::Supervision,
) -> Result<i32, String> {
    let (listeners, (udp, tcp), ports) = bind_all(plan).await?;
    let own: Vec<SocketAddr> = [ports.proxy, ports.transparent, ports.dns]
        .into_iter()
        .map(|p| SocketAddr::from((plan.host_ip, p)))
        .collect();
    let no_proxy = config.control.no_proxy.clone();
    let state = ProxyState::new(config, audit, own).await?;
    net::install_rules(plan, ports, firewall)?;
    let generation = state.current();
    let sandbox = generation
        .identities
        .get(&plan.sandbox)
        .ok_or_else(|| format!("sandbox {} vanished from the config", plan.sandbox))?;
    let ca = state
        .ca(&generation, &sandbox)
        .map_err(|e| format!("the sandbox's CA: {e}"))?;
    let audit_sink = state.audit.clone();
    // The bundle (the sandbox's CA and the roots cordon trusts upstream), so tunnelled destinations verify too.
    let ca_file = plan.run_dir.join("ca.pem");
    let bundle = crate::sandbox_env::ca_bundle(ca.cert_pem(), &generation.config.upstream.extra_roots);
    write_public(&ca_file, &bundle)?;
    let allowed = generation
        .policy_for(&sandbox, Some(&state.control))
        .map(|p| p.credentials.clone())
        .unwrap_or_default();
    let placeholders: BTreeMap<String, String> = generation
        .credentials
        .placeholders_for(sandbox.incarnation(), &allowed)
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let aws = generation.credentials.aws_env(sandbox.incarnation(), &allowed);
    drop(generation);
    let proxy_url = format!("http://{}:{}", plan.host_ip, ports.proxy);
    let env = crate::sandbox_env::sandbox_env(&proxy_url, &no_proxy, &ca_file.to_string_lossy(), &placeholders, aws);
    let kernel = match confined.isolation {
        Isolation::Namespace => format!("seccomp: {}", seccomp::BASE),
        Isolation::Gvisor => "under gVisor (runsc)".into(),
    };
    eprintln!(
        "cordon jail: sandbox {} in namespace {} ({} → {}), rules by {}; proxy {proxy_url}; {kernel}",
        plan.sandbox,
        plan.netns,
        plan.jail_ip,
        plan.host_ip,
        firewall.name(),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let st = state.clone();
    let dns_stop = stop.clone();
    tokio::spawn(async move {
        crate::proxy::entry::dns::serve(udp, tcp, st, async move { dns_stop.cancelled().await }).await
    });
    let server_stop = stop.clone();
    let proxy = tokio::spawn(server::serve(
        listeners,
        state,
        async move { server_stop.cancelled().await },
    ));
    let env = confine::environment(&env, &confined.who);
    let cwd = std::env::current_dir().map_or_else(|_| "/".into(), |c| view::resolve(&c));
    // What hidden files show instead: nothing.
    write_public(&confined.view.empty, "")?;
    let visible = vec![(ca_file.clone(), ca_file.clone())];
    let before = confined.view.writable.as_deref().map(planted::snapshot);
    let code = match confined.isolation {
        Isolation::Namespace => bubble::run(plan, &confined, visible, &env, &cwd, supervision).await,
        Isolation::Gvisor => {
            if supervision.activity().is_some() {
                eprintln!("cordon jail: {}", gvisor::UNRECORDED);
            }
            let what = gvisor::Sandboxed {
                who: &confined.who,
                view: &confined.view,
                visible: &visible,
                env: &env,
                cwd: &cwd,
                command: &confined.command,
            };
            supervision.started();
            gvisor::run(plan, &what, supervision, confined.child_signals).await
        }
    };
    if let (Some(folder), Some(before)) = (&confined.view.writable, &before) {
        let protected = confined.git.map(git::GitGuard::protected).unwrap_or_default();
        planted::report(folder, before, &audit_sink, plan.sandbox.as_str(), protected);
    }
    if let Some(view::PrivateHome::Host(home)) = &confined.view.private_home {
        confine::unmount(home);
        if let Some(private) = home.parent() {
            let _ = std::fs::remove_dir_all(private);
        }
    }
    stop.cancel();
    let _ = proxy.await;
    code
}

fn write_public(path: &Path, pem: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, pem).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    // The CA certificate is public; the command may run as another user than the jail.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
    }
    Ok(())
}
