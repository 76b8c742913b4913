//! The console of this process: its sessions, its cookies' names, its identity provider, the change counter of
//! the sandboxes its pages watch; and who a request's session stands for.

use std::sync::Arc;

use http::HeaderMap;
use http::header::{HOST, ORIGIN};
use tokio::sync::{Semaphore, watch};

use super::pages::Viewer;
use super::sessions::{Names, Session, SignIns, cookie};
use crate::oidc::Provider;
use crate::principal::Principal;
use crate::state::ProxyState;

/// Event streams open at once (one per open page).
const MOST_STREAMS: usize = 256;

/// The console of this process.
pub(crate) struct Console {
    pub(super) sessions: SignIns,
    pub(super) names: Names,
    /// Whether it is served over TLS (the origin forms must come from is `https://`).
    tls: bool,
    pub(super) oidc: Option<Arc<Provider>>,
    /// Counts changes of the sandboxes made through the admin API, for the event streams.
    pub(super) sandboxes: watch::Sender<u64>,
    pub(super) streams: Arc<Semaphore>,
}

/// Who a request's session stands for.
pub(super) struct Me {
    pub(super) cookie: String,
    pub(super) session: Arc<Session>,
    pub(super) principal: Principal,
}

impl Me {
    pub(super) fn viewer(&self) -> Viewer<'_> {
        Viewer {
            principal: &self.principal,
            csrf: &self.session.csrf,
        }
    }
}

impl Console {
    /// The console the configuration of `state` asks for, if any; with OpenID Connect, the provider is asked for
    /// its discovery document in the background (and again until it answers).
    pub(crate) async fn open(state: &ProxyState) -> Result<Option<Arc<Console>>, String> {
        let generation = state.current();
        let config = &generation.config;
        let Some(console) = &config.console else {
            return Ok(None);
        };
        let tls = match config.listen.console {
            Some(_) => console.tls.is_some(),
            None => config.admin_tls.is_some(),
        };
        let oidc = match (&console.oidc, &console.url) {
            (Some(o), Some(url)) => {
                let secret = match &o.client_secret {
                    Some(r) => Some(
                        generation
                            .credentials
                            .secrets()
                            .stored(r)
                            .await
                            .map_err(|e| format!("console.oidc.client_secret: {e}"))?,
                    ),
                    None => None,
                };
                let http = crate::upstream::outbound::HttpClient::new(&config.upstream.extra_roots)?;
                let provider = Arc::new(Provider::new(
                    o.clone(),
                    secret,
                    format!("{url}/console/callback"),
                    http,
                ));
                let finding = provider.clone();
                tokio::spawn(async move { finding.discover().await });
                Some(provider)
            }
            _ => None,
        };
        Ok(Some(Arc::new(Console {
            sessions: SignIns::new(console.session_ttl),
            names: Names::new(tls),
            tls,
            oidc,
            sandboxes: watch::Sender::new(0),
            streams: Arc::new(Semaphore::new(MOST_STREAMS)),
        })))
    }

    /// Say that the sandboxes changed (an admin action succeeded).
    pub(crate) fn touched(&self) {
        self.sandboxes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The live session the request's cookie names, with its principal as of now (a token sign-in's token is
    /// looked up again: a reload that removed it ends the session).
    pub(super) fn me(&self, state: &ProxyState, headers: &HeaderMap) -> Option<Me> {
        let value = cookie(headers, self.names.session)?;
        let session = self.sessions.get(&value)?;
        let principal = match &session.token {
            Some(hash) => state.current().admin_principal_hashed(hash)?,
            None => session.principal.clone(),
        };
        Some(Me {
            cookie: value,
            session,
            principal,
        })
    }

    /// Whether a form comes from the console's own origin (`Sec-Fetch-Site`, `Origin`), as far as the browser says.
    pub(super) fn same_origin(&self, headers: &HeaderMap) -> bool {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if header("sec-fetch-site").is_some_and(|s| s != "same-origin") {
            return false;
        }
        match header(ORIGIN.as_str()) {
            None => true,
            Some(origin) => {
                let scheme = if self.tls { "https" } else { "http" };
                header(HOST.as_str()).is_some_and(|host| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")))
            }
        }
    }
}
