//! `cordon run`: bind the listeners, assemble the state, serve the proxy and the admin API, reload on
//! SIGHUP or a change of the file, drain on SIGINT/SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::{Config, Listener};
use crate::logging::Stderr;
use crate::proxy::server;
use crate::reload::Reloader;
use crate::state::ProxyState;
use crate::{admin, logging};

/// Run until a shutdown signal, then drain; `on_idle` runs on a worker about to park, at most once a second per
/// worker ([`when_due`]). `out` writes what stops the start, in the operational log's format.
pub(crate) fn run(config: Config, path: Option<PathBuf>, on_idle: fn(), out: Stderr) -> ExitCode {
    // Declared before the audit writer, so it is dropped after it: the writer's last lines reach the spool first.
    let mut exporter = None;
    let audit = match logging::init(&config.audit, &config.audit_chain, out.format()) {
        Ok(audit) => audit,
        Err(e) => {
            out.error(&e);
            return ExitCode::FAILURE;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_park(move || when_due(on_idle))
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out.error(&format!("cannot start the runtime: {e}"));
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(serve(config, &audit, path, &mut exporter, out))
}

/// How often at most a worker that parks calls the idle hook.
const IDLE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

std::thread_local! {
    static LAST_IDLE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// Call `hook` if this worker has not called it in the last [`IDLE_EVERY`]. A worker parks whenever it runs
/// out of work, so under load this is one clock read per park, and an idle worker hands back memory within a
/// second of going idle (a burst of large WebSocket messages, say, which the allocator would otherwise keep
/// until the thread allocates again).
fn when_due(hook: fn()) {
    let now = std::time::Instant::now();
    let due = LAST_IDLE.with(|last| {
        let due = last.get().is_none_or(|at| now.duration_since(at) >= IDLE_EVERY);
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        hook();
    }
}

/// The secret files cordon makes with a random value on first start (every `file:` admin token,
/// `control.signing_key`, `audit.signing_key`), made before any port opens: whoever waits for cordon's port (a
/// script, the book's walkthrough, a readiness probe) then finds the token it signs in with and the key
/// `cordon audit public-key` reads, not a file still to come. Making one again later finds it there.
fn make_first_start_files(config: &Config) -> Result<(), String> {
    for t in &config.control.admin_tokens {
        crate::generation::generate_if_file(&t.token).map_err(|e| format!("{}: {e}", t.at))?;
    }
    if let Some(r) = &config.control.signing_key {
        crate::generation::generate_if_file(r).map_err(|e| format!("control.signing_key: {e}"))?;
    }
    if let Some(r) = &config.audit_chain.signing_key {
        crate::generation::generate_if_file(r).map_err(|e| format!("audit.signing_key: {e}"))?;
    }
    Ok(())
}

/// The key of the audit checkpoints from `audit.signing_key` (a `file:` one is created with a random secret on
/// first start); `None` without one (checkpoints stay unsigned).
async fn audit_signer(
    key: Option<&crate::config::credentials::SecretRef>,
    secrets: &crate::secrets::Secrets,
) -> Result<Option<crate::audit::chain::CheckpointSigner>, String> {
    use secrecy::ExposeSecret;
    let Some(r) = key else { return Ok(None) };
    if let crate::config::credentials::SecretRef::File(path) = r
        && crate::secret_file::ensure_secret_file(path)?
    {
        tracing::info!("created {} with a new random secret (0600)", path.display());
    }
    let secret = secrets.stored(r).await.map_err(|e| format!("audit.signing_key: {e}"))?;
    let signer = crate::audit::chain::CheckpointSigner::from_secret(secret.expose_secret())?;
    tracing::info!(public_key = %signer.public_hex(), "audit checkpoints are signed");
    Ok(Some(signer))
}

/// Ask each credential source that needs the network for its value once, in the background
/// ([`crate::secrets::probe`]): a failure is a WARN naming the credential and the error, and start goes on.
fn probe_at_start(state: &Arc<ProxyState>, path: Option<&std::path::Path>) {
    let generation = state.current();
    let again = match path {
        Some(p) => format!("cordon check --probe --config {}", p.display()),
        None => "cordon check --probe".to_string(),
    };
    tokio::spawn(async move {
        let probed = crate::secrets::probe::probe_all(generation.credentials.secrets(), &generation.config).await;
        for p in probed {
            match p.result {
                Ok(()) => tracing::info!(credential = %p.name, "credential {} ({}) can be supplied", p.name, p.reaches),
                Err(e) => tracing::warn!(
                    credential = %p.name,
                    "credential {} cannot be supplied now ({}): {e}; requests that use it fail until it can \
                     (`{again}` asks again)",
                    p.name,
                    p.reaches
                ),
            }
        }
    });
}

/// A TCP listener on `addr` (the setting `what`); when it cannot be opened, the error is written.
async fn bind(addr: std::net::SocketAddr, what: &str, out: Stderr) -> Result<tokio::net::TcpListener, ExitCode> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        out.error(&format!("cannot listen on {addr} ({what}): {e}"));
        ExitCode::FAILURE
    })
}

async fn serve(
    config: Config,
    audit_out: &logging::Audit,
    path: Option<PathBuf>,
    exporter: &mut Option<crate::otlp::Exporter>,
    out: Stderr,
) -> ExitCode {
    let audit = audit_out.sink.clone();
    let audit_key = config.audit_chain.signing_key.clone();
    let otlp = config.audit_chain.otlp.clone();
    if let Err(e) = make_first_start_files(&config) {
        out.error(&e);
        return ExitCode::FAILURE;
    }
    let addr = config.listen.proxy;
    let listener = match bind(addr, "listen.proxy", out).await {
        Ok(l) => l,
        Err(code) => return code,
    };
    let bound = listener.local_addr().unwrap_or(addr);
    let admin_listener = match config.listen.admin {
        Some(a) => match bind(a, "listen.admin", out).await {
            Ok(l) => Some(l),
            Err(code) => return code,
        },
        None => None,
    };
    let admin_bound = admin_listener.as_ref().and_then(|l| l.local_addr().ok());
    let transparent = match config.listen.transparent {
        Some(a) => match crate::proxy::entry::transparent::origdst::bind(a, config.listen.transparent_tproxy) {
            Ok(l) => Some(l),
            Err(e) => {
                out.error(&format!("cannot listen on {a} (listen.transparent): {e}"));
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let transparent_bound = transparent.as_ref().and_then(|l| l.local_addr().ok());
    let preview = match config.listen.preview {
        Some(a) => match bind(a, "listen.preview", out).await {
            Ok(l) => Some(l),
            Err(code) => return code,
        },
        None => None,
    };
    let preview_bound = preview.as_ref().and_then(|l| l.local_addr().ok());
    let console_listener = match config.listen.console {
        Some(a) => match bind(a, "listen.console", out).await {
            Ok(l) => Some(l),
            Err(code) => return code,
        },
        None => None,
    };
    let console_bound = console_listener.as_ref().and_then(|l| l.local_addr().ok());
    let dns = match config.listen.dns {
        Some(a) => match crate::proxy::entry::dns::bind(a).await {
            Ok(sockets) => Some(sockets),
            Err(e) => {
                out.error(&format!("cannot listen on {a} (listen.dns, UDP and TCP): {e}"));
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let dns_bound = dns.as_ref().and_then(|(udp, _)| udp.local_addr().ok());
    // SECURITY: every listener cordon opens is its own address, which no rule can send a sandbox to. The list
    // is the configuration's (`Listen::listeners`, which `cordon explain` reads too), with the ports opened.
    let own = config.listen.own(|l| match l {
        Listener::Proxy => Some(bound),
        Listener::Admin => admin_bound,
        Listener::Transparent => transparent_bound,
        Listener::Dns => dns_bound,
        Listener::Preview => preview_bound,
        Listener::Console => console_bound,
    });
    let text = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok());
    let watch = config.control.watch;
    let summary = format!(
        "{}; {} sandboxes, {} policies",
        config.source,
        config.sandboxes.len(),
        config.policies.len()
    );
    let state = match ProxyState::new(config, audit, own).await {
        Ok(s) => s,
        Err(e) => {
            out.error(&e);
            return ExitCode::FAILURE;
        }
    };
    audit_out.reopen_on_sigusr1();
    match audit_signer(audit_key.as_ref(), state.current().credentials.secrets()).await {
        Ok(Some(signer)) => audit_out.sign_checkpoints(signer),
        Ok(None) => {}
        Err(e) => {
            out.error(&e);
            return ExitCode::FAILURE;
        }
    }
    if let (Some(otlp), Some(spool)) = (&otlp, &audit_out.spool) {
        let generation = state.current();
        match crate::otlp::start(
            otlp,
            spool.clone(),
            generation.credentials.secrets(),
            state.metrics.clone(),
        )
        .await
        {
            Ok(x) => *exporter = Some(x),
            Err(e) => {
                out.error(&e);
                return ExitCode::FAILURE;
            }
        }
    }
    tracing::info!("cordon {} listening on {bound} ({summary})", env!("CARGO_PKG_VERSION"));
    crate::reload::warn_reporting(&crate::policy::newly_reporting(&state.current().config.policies, None));
    state.current().config.warn_jail_only();
    probe_at_start(&state, path.as_deref());
    let reloader = Arc::new(Reloader::new(path, text.as_deref()));
    reloader.clone().spawn_watchers(&state, watch);
    let stop_admin = tokio_util::sync::CancellationToken::new();
    if let Err(e) = serve_admin(&state, reloader, (admin_listener, console_listener), &stop_admin).await {
        out.error(&e);
        return ExitCode::FAILURE;
    }
    if let Some((udp, tcp)) = dns {
        let addr = udp.local_addr().map(|a| a.to_string()).unwrap_or_default();
        tracing::info!("DNS responder on {addr} (UDP and TCP; answers only names the sandbox's policy allows)");
        let (st, stop) = (state.clone(), stop_admin.clone());
        tokio::spawn(async move {
            if let Err(e) = crate::proxy::entry::dns::serve(udp, tcp, st, async move { stop.cancelled().await }).await {
                tracing::error!("DNS responder stopped: {e}");
            }
        });
    }
    let mut listeners = vec![(listener, server::Entry::Explicit)];
    if let (Some(l), Some(a)) = (transparent, transparent_bound) {
        tracing::info!("transparent listener on {a} (sandboxes known by source address)");
        listeners.push((l, server::Entry::Transparent));
    }
    if let (Some(l), Some(a)) = (preview, preview_bound) {
        tracing::info!("preview listener on {a} (preview URLs into sandboxes, opened with signed links)");
        listeners.push((l, server::Entry::Preview));
    }
    crate::systemd::ready(&format!("listening on {bound} ({summary})"));
    let shutdown = async {
        server::shutdown_signal().await;
        crate::systemd::stopping();
    };
    server::serve(listeners, state, shutdown).await;
    stop_admin.cancel();
    ExitCode::SUCCESS
}

/// Start the admin side: the admin API on `listen.admin` and the console on `listen.console` (or under
/// `/console/` on the admin listener), each with its TLS when configured.
async fn serve_admin(
    state: &Arc<ProxyState>,
    reloader: Arc<Reloader>,
    (admin_listener, console_listener): (Option<tokio::net::TcpListener>, Option<tokio::net::TcpListener>),
    stop: &tokio_util::sync::CancellationToken,
) -> Result<(), String> {
    let side = admin::Admin::open(state.clone(), reloader).await?;
    let listeners = [
        (admin_listener, side.admin_surface()),
        (console_listener, admin::Surface::Console),
    ];
    for (listener, surface) in listeners {
        let Some(l) = listener else { continue };
        let tls = admin::acceptor(&side, surface).await?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let at = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        match surface {
            admin::Surface::Admin { api: true, console, .. } => tracing::info!(
                "admin API on {scheme}://{at} (sandboxes, reload, /metrics, /healthz, /readyz{})",
                if console { ", the console under /console/" } else { "" }
            ),
            admin::Surface::Admin { api: false, .. } => tracing::warn!(
                "admin listener on {scheme}://{at} serves /healthz, /readyz and /metrics only: it is off loopback \
                 without admin.tls, so /v1 (and the console) answer 403 admin_needs_tls"
            ),
            admin::Surface::Console => tracing::info!("console on {scheme}://{at}/console/ (the approval inbox)"),
        }
        let stop = stop.clone();
        tokio::spawn(admin::serve_listener(l, tls, surface, side.clone(), async move {
            stop.cancelled().await
        }));
    }
    if state.current().config.listen.admin.is_none() {
        tracing::info!("admin API off (listen.admin is not set)");
    }
    Ok(())
}
