//! `cordon jail --project DIR -- CMD` for a user without root (a coding agent on a developer's laptop). cordon
//! runs as the user; the command runs under bubblewrap in new user, network, mount, PID, IPC and UTS
//! namespaces. Its network namespace has only a loopback device: the one way out is the relay
//! ([`super::relay`]) on `127.0.0.1:3128` in there, which reaches cordon through a Unix socket bound into the
//! jail; cordon serves it as the sandbox, known by a credential made for this jail alone. The file system is
//! the view of [`super::view`]: the system folders read-only, the project folder read-write (its `.git/config`
//! and `.git/hooks` read-only), a private home, private `/tmp`, `/var` and `/run`, cordon's own files hidden (and
//! refused inside the project); the environment is scrubbed to what the sandbox's `env` gives and a few harmless
//! variables; seccomp filters ([`super::seccomp`]) keep the command from opening Unix sockets to host services
//! around the bridge and from the kernel's other ways round it (io_uring, ptrace, keyrings, foreign socket
//! families and ABIs). The relay is the PID namespace's init (`--as-pid-1`) and non-dumpable, so no process
//! outside the command's filter is within its reach.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::common::{Options, pick_sandbox, wait};
use super::view::{self, HomeMode, View};
use super::{confine, planted};
use crate::config::Config;
use crate::proxy::server::{self, Entry};
use crate::state::ProxyState;

/// Where the command finds the proxy.
const INSIDE_PROXY: &str = "127.0.0.1:3128";
/// Where cordon's files appear inside the jail.
const INSIDE: &str = "/run/cordon";

/// Variables of the caller that pass into the jail (nothing secret; everything else is scrubbed).
const KEPT: [&str; 6] = ["HOME", "USER", "LOGNAME", "LANG", "TERM", "TZ"];

/// Jail `options.command` with `project` writable; its exit code.
pub(crate) fn run(mut config: Config, options: Options, project: &Path) -> Result<i32, String> {
    if options.command.is_empty() {
        return Err("no command given; write it after --, e.g. cordon jail --project . -- claude".into());
    }
    if !super::net::available("bwrap") {
        return Err(
            "cordon jail runs the command under bubblewrap, which is not installed (apt-get install bubblewrap)".into(),
        );
    }
    refuse_privileged()?;
    let project = project
        .canonicalize()
        .map_err(|e| format!("--project {}: {e}", project.display()))?;
    if !project.is_dir() {
        return Err(format!("--project {}: not a folder", project.display()));
    }
    let id = pick_sandbox(&config, options.sandbox.as_deref())?;
    let _place = super::common::place(&config, &id)?;
    // SECURITY: the sandbox is whoever holds a credential made for this jail alone (its declared token, if
    // any, does not open this cordon).
    let token = crate::secret_file::random_hex(24)?;
    if let Some(spec) = config.sandboxes.iter_mut().find(|s| s.id == id) {
        spec.token_sha256 = Some(Sha256::digest(token.as_bytes()).into());
    }
    config.control.watch = false;
    if let Some(path) = super::common::audit_apart(&mut config, &id)? {
        eprintln!(
            "cordon jail: audit records go to {} (not the command's output)",
            path.display()
        );
    }
    let hidden = confine::cordons_files(&config, options.config_file.as_deref());
    view::refuse_inside(&hidden, &project, "--project, which the command may write")?;
    super::links::refuse_links(&hidden, Some(&project), "--project, which the command may write")?;
    let view = View {
        tmpfs_size: None,
        writable: Some(project.clone()),
        home: std::env::var_os("HOME").map(|h| view::resolve(Path::new(&h))),
        // Set once the jail's own folder is made.
        private_home: None,
        git: Vec::new(),
        hidden,
        empty: PathBuf::from("/dev/null"),
    };
    let audit = crate::logging::init(&config.audit, &config.audit_chain, config.log_format)?;
    let (supervision, sink) = super::limits::Supervision::new(&config, &id, options.limits, audit.sink.clone());
    let mut view = view;
    view.tmpfs_size = supervision.bounds.limits.disk;
    let git = super::git::guard(&mut view, options.writable_git)?;
    if options.home == HomeMode::Private {
        view.private_home = Some(view::PrivateHome::Fresh);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let result = rt.block_on(serve(
        config,
        sink,
        (id.as_str(), &token),
        view,
        (&options.command, options.child_signals),
        git.as_ref(),
        &supervision,
    ));
    supervision.ended(&result);
    result
}

/// Refuse to run as root or with capabilities. The project jail is a user's: bubblewrap maps whoever starts it
/// into the jail's user namespace, so uid 0 would stay the host's root there, with every capability of that
/// namespace over the host's files (`/etc/shadow` readable, any file the view shows writable by owner).
fn refuse_privileged() -> Result<(), String> {
    let status = procfs::process::Process::myself()
        .and_then(|p| p.status())
        .map_err(|e| format!("cannot read /proc/self/status to check who runs the jail: {e}"))?;
    // SECURITY: the project jail never runs as root or with capabilities: its command would be root on the
    // host's files.
    if status.ruid == 0 || status.euid == 0 || status.capeff != 0 {
        return Err(format!(
            "cordon jail --project runs the command as the user who starts it, and this is {} (uid {},              capabilities {:#x}): the command would be root over the host's files. Run it as the user who owns              the project, without sudo; or, as root, use the root jail from the project folder: cordon jail              --user NAME -- CMD",
            if status.euid == 0 || status.ruid == 0 {
                "root"
            } else {
                "a process with capabilities"
            },
            status.euid,
            status.capeff
        ));
    }
    Ok(())
}

async fn serve(
    config: Config,
    audit: Arc<dyn crate::audit::Sink>,
    (id, token): (&str, &str),
    view: View,
    (command, child_signals): (&[String], super::common::ChildSignals),
    git: Option<&super::git::GitGuard>,
    supervision: &super::limits::Supervision,
) -> Result<i32, String> {
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
    let addr = proxy.local_addr().map_err(|e| e.to_string())?;
    let no_proxy = config.control.no_proxy.clone();
    let state = ProxyState::new(config, audit.clone(), vec![addr]).await?;
    let base = std::env::var_os("XDG_RUNTIME_DIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let run_dir = tempfile::Builder::new()
        .prefix("cordon-jail-")
        .tempdir_in(&base)
        .map_err(|e| format!("cannot make a folder in {}: {e}", base.display()))?;
    let generation = state.current();
    let sandbox = generation
        .identities
        .named(id)
        .ok_or_else(|| format!("sandbox {id} vanished from the config"))?;
    let ca = state
        .ca(&generation, &sandbox)
        .map_err(|e| format!("the sandbox's CA: {e}"))?;
    let bundle = crate::sandbox_env::ca_bundle(ca.cert_pem(), &generation.config.upstream.extra_roots);
    std::fs::write(run_dir.path().join("ca.pem"), bundle).map_err(|e| format!("cannot write the CA bundle: {e}"))?;
    let allowed = generation
        .policy_for(&sandbox, Some(&state.control))
        .map(|p| p.credentials.clone())
        .unwrap_or_default();
    let placeholders = generation
        .credentials
        .placeholders_for(sandbox.incarnation(), &allowed)
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
    let aws = generation.credentials.aws_env(sandbox.incarnation(), &allowed);
    drop(generation);
    let proxy_url = format!("http://{id}:{token}@{INSIDE_PROXY}");
    let mut env =
        crate::sandbox_env::sandbox_env(&proxy_url, &no_proxy, &format!("{INSIDE}/ca.pem"), &placeholders, aws);
    for var in KEPT {
        if let Ok(v) = std::env::var(var) {
            env.insert(var.to_string(), v);
        }
    }
    env.insert(
        "PATH".into(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
    );
    let socket = run_dir.path().join("proxy.sock");
    let bridge =
        tokio::net::UnixListener::bind(&socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    let stop = tokio_util::sync::CancellationToken::new();
    let bridge_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = bridge_stop.cancelled() => return,
                accepted = bridge.accept() => {
                    let Ok((mut inside, _)) = accepted else { continue };
                    tokio::spawn(async move {
                        if let Ok(mut proxy) = tokio::net::TcpStream::connect(addr).await {
                            let _ = tokio::io::copy_bidirectional(&mut inside, &mut proxy).await;
                        }
                    });
                }
            }
        }
    });
    let server_stop = stop.clone();
    let server = tokio::spawn(server::serve(vec![(proxy, Entry::Explicit)], state, async move {
        server_stop.cancelled().await
    }));
    let exe = std::env::current_exe().map_err(|e| format!("cannot find cordon's own binary: {e}"))?;
    let project = view.writable.clone().unwrap_or_default();
    let mut limited = supervision.bounds.rlimits();
    limited.extend(command.iter().cloned());
    let recorder = match supervision.activity() {
        Some((sink, sandbox, user)) => Some(super::activity::Recorder::start(run_dir.path(), sink, sandbox, user)?),
        None => None,
    };
    let mut line = command_line(&exe, run_dir.path(), &view, &env, &limited, recorder.is_some());
    // SECURITY: the jail takes at most half of its user's inotify instances and watches on the host.
    let inotify = super::inotify::prefix();
    let said = match &inotify {
        Ok((b, _)) => format!(
            "at most {} instances and {} watches (half the user's on this host)",
            b.instances, b.watches
        ),
        Err(why) => format!("not bounded per jail ({why})"),
    };
    if inotify.is_ok() {
        line.splice(0..0, super::inotify::same_user());
    }
    eprintln!(
        "cordon jail: sandbox {id}, project {} writable, proxy {INSIDE_PROXY} inside; seccomp: {}; for the command: \
         {}; inotify: {said}",
        project.display(),
        super::seccomp::BASE,
        super::seccomp::COMMAND
    );
    let started = super::common::Started::new(run_dir.path())?;
    started.wrap(&mut line);
    let before = planted::snapshot(&project);
    let mut full = supervision.bounds.enter();
    if let Ok((_, prefix)) = inotify {
        full.extend(prefix);
    }
    full.push("bwrap".into());
    full.extend(line);
    let (program, args) = full.split_first().ok_or("an empty command line")?;
    let mut bwrap = tokio::process::Command::new(program);
    bwrap.args(args);
    supervision.started();
    let code = wait(
        &mut bwrap,
        Some(supervision),
        child_signals,
        &super::common::SignalReach::Descendants,
    )
    .await;
    if let Some(r) = recorder {
        r.finish();
    }
    let protected = git.map(super::git::GitGuard::protected).unwrap_or_default();
    planted::report(&project, &before, &audit, id, protected);
    stop.cancel();
    let _ = server.await;
    started.outcome(code?)
}

/// bubblewrap's arguments: the view, cordon's bridge, CA and relay (and, with `activity`, the activity log's
/// socket) in the private `/run`, then what the view hides.
fn command_line(
    exe: &Path,
    run_dir: &Path,
    view: &View,
    env: &std::collections::BTreeMap<String, String>,
    command: &[String],
    activity: bool,
) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut a: Vec<String> = [
        "--unshare-all",
        // The relay is the PID namespace's init: no bubblewrap reaper beside it outside every filter, and no
        // signal from inside ends it.
        "--as-pid-1",
        "--die-with-parent",
        "--new-session",
    ]
    .map(String::from)
    .to_vec();
    a.extend(view.mounts());
    let mut binds = vec![
        (run_dir.join("proxy.sock"), "proxy.sock"),
        (run_dir.join("ca.pem"), "ca.pem"),
        (exe.to_path_buf(), "cordon"),
    ];
    if activity {
        binds.push((run_dir.join("activity.sock"), "activity.sock"));
    }
    for (from, to) in binds {
        a.extend(["--ro-bind".into(), s(&from), format!("{INSIDE}/{to}")]);
    }
    a.extend(view.hides());
    let project = view.writable.as_deref().unwrap_or(Path::new("/"));
    a.extend(["--chdir".into(), s(project), "--clearenv".into()]);
    for (k, v) in env {
        a.extend(["--setenv".into(), k.clone(), v.clone()]);
    }
    a.extend(
        [
            "--",
            &format!("{INSIDE}/cordon"),
            "jail-relay",
            "--socket",
            &format!("{INSIDE}/proxy.sock"),
            "--listen",
            INSIDE_PROXY,
        ]
        .map(String::from),
    );
    if activity {
        a.extend(["--activity".into(), format!("{INSIDE}/activity.sock")]);
    }
    a.push("--".into());
    a.extend(command.iter().cloned());
    a
}
