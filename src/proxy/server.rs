//! The listener loops: accept, cap open connections (of all listeners together), and drain on shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::addr::ClientAddr;
use crate::error;
use crate::proxy::entry::{http, preview, transparent};
use crate::state::ProxyState;

/// Which path a listener's connections take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The explicit proxy: absolute-form requests and CONNECT.
    Explicit,
    /// The transparent listener: connections redirected by the kernel.
    Transparent,
    /// The preview listener: people opening preview URLs into sandboxes.
    Preview,
}

/// Serve the explicit proxy on an already bound listener until `shutdown` completes (see `serve`).
pub async fn run(listener: TcpListener, state: Arc<ProxyState>, shutdown: impl Future<Output = ()>) {
    serve(vec![(listener, Entry::Explicit)], state, shutdown).await;
}

/// Serve these listeners until `shutdown` completes, then stop accepting, let in-flight requests and
/// tunnels finish within `timeouts.drain`, and cut the rest. `limits.max_connections` counts the
/// connections of all of them together.
pub(crate) async fn serve(
    listeners: Vec<(TcpListener, Entry)>,
    state: Arc<ProxyState>,
    shutdown: impl Future<Output = ()>,
) {
    // Sized once: `limits.max_connections` takes a restart to change.
    let max_connections = state.current().config.limits.max_connections;
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = CancellationToken::new();
    let accepting = CancellationToken::new();
    let mut loops = tokio::task::JoinSet::new();
    for (listener, entry) in listeners {
        let (state, slots, graceful, accepting) = (state.clone(), slots.clone(), graceful.clone(), accepting.clone());
        loops.spawn(async move {
            tokio::select! {
                () = accepting.cancelled() => {}
                () = accept_loop(&listener, entry, &state, &slots, &graceful, max_connections) => {}
            }
        });
    }
    shutdown.await;
    state.draining.cancel();
    accepting.cancel();
    while loops.join_next().await.is_some() {}
    drain(&state, &graceful).await;
}

async fn accept_loop(
    listener: &TcpListener,
    entry: Entry,
    state: &Arc<ProxyState>,
    slots: &Arc<Semaphore>,
    graceful: &CancellationToken,
    max_connections: usize,
) {
    loop {
        match listener.accept().await {
            Ok((stream, client)) => {
                let _ = stream.set_nodelay(true);
                // SECURITY: one address cannot hold every slot with connections that never authenticate. (A
                // transparent connection is known by its address at once, and counted by its sandbox's caps.)
                let waiting = match entry {
                    Entry::Explicit => {
                        let cap = state.current().config.limits.unauthenticated_per_source;
                        match state.unauthenticated.enter(client.ip(), cap) {
                            Some(waiting) => Some(waiting),
                            None => {
                                tracing::debug!(%client, cap, "connection refused: limits.per_source.unauthenticated");
                                refuse(state, stream, error::render_unauthenticated_limit());
                                continue;
                            }
                        }
                    }
                    Entry::Transparent | Entry::Preview => None,
                };
                match slots.clone().try_acquire_owned() {
                    Ok(slot) => {
                        let (state, graceful) = (state.clone(), graceful.clone());
                        state.clone().tasks.spawn(async move {
                            match entry {
                                Entry::Explicit => {
                                    http::serve(state, stream, ClientAddr(client), graceful, waiting).await;
                                }
                                Entry::Transparent => {
                                    transparent::serve(state, stream, ClientAddr(client), graceful).await
                                }
                                Entry::Preview => preview::serve(state, stream, ClientAddr(client), graceful).await,
                            }
                            drop(slot);
                        });
                    }
                    Err(_) => {
                        tracing::warn!(%client, "connection refused: {} connections are open (limits.max_connections)", max_connections);
                        if entry == Entry::Explicit {
                            refuse(state, stream, error::render_overloaded());
                        }
                    }
                }
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Answer a connection that is not taken with `answer`, and close it.
fn refuse(state: &ProxyState, mut stream: tokio::net::TcpStream, answer: Vec<u8>) {
    state.tasks.spawn(async move {
        let _ = stream.write_all(&answer).await;
        let _ = stream.shutdown().await;
    });
}

async fn drain(state: &ProxyState, graceful: &CancellationToken) {
    let deadline = state.current().config.timeouts.drain;
    tracing::info!("shutting down: draining in-flight requests and tunnels for up to {deadline:?}");
    graceful.cancel();
    state.tasks.close();
    if tokio::time::timeout(deadline, state.tasks.wait()).await.is_err() {
        tracing::warn!(
            "drain deadline passed with {} tasks open; cutting them",
            state.tasks.len()
        );
        state.hard_stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), state.tasks.wait()).await;
    }
    if let Some(shared) = state.shared() {
        // The others' shares of the limits grow at once instead of after the heartbeat times out.
        let _ = tokio::time::timeout(Duration::from_secs(2), shared.registry.leave()).await;
    }
    tracing::info!("stopped");
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM ({e}); only SIGINT stops cordon");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
