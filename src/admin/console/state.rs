//! The console of this process: its sessions, its cookies' names, its identity provider, the change counter of
//! the sandboxes its pages watch; and who a request's session stands for.

use std::sync::Arc;

use http::HeaderMap;
use http::header::{HOST, ORIGIN};
use tokio::sync::watch;

use super::pages::Viewer;
use super::sessions::{CookieNames, Proof, Session, SignIns, cookie, same};
use crate::oidc::Provider;
use crate::principal::Principal;
use crate::state::ProxyState;

/// What the connection a console request came on proves for the admin tokens' principals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Certs {
    /// Whether an admin token needs a verified client certificate besides (`admin.tls.client_ca`).
    pub(crate) needed: bool,
    /// Whether this connection presented one.
    pub(crate) presented: bool,
}

impl Certs {
    /// Whether a token principal may act over this connection.
    pub(super) fn lacking(self) -> bool {
        self.needed && !self.presented
    }
}

/// The console of this process.
pub(crate) struct Console {
    pub(super) sessions: SignIns,
    pub(super) names: CookieNames,
    /// Whether it is served over TLS (the origin forms must come from is `https://`).
    tls: bool,
    pub(super) oidc: Option<Arc<Provider>>,
    /// Counts changes of the sandboxes made through the admin API, for the event streams.
    pub(super) sandboxes: watch::Sender<u64>,
    /// The event streams open.
    pub(super) streams: super::events::Streams,
}

/// Who a request's session stands for.
pub(super) struct Me {
    pub(super) cookie: String,
    pub(super) session: Arc<Session>,
    pub(super) principal: Principal,
    /// Where the session's pages are: `/console/s/{place}/`.
    pub(super) base: String,
}

impl Me {
    pub(super) fn viewer(&self) -> Viewer<'_> {
        Viewer {
            principal: &self.principal,
            csrf: &self.session.csrf,
            base: &self.base,
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
            names: CookieNames::new(tls),
            tls,
            oidc,
            sandboxes: watch::Sender::new(0),
            streams: super::events::Streams::new(),
        })))
    }

    /// Say that the sandboxes changed (an admin action succeeded).
    pub(crate) fn touched(&self) {
        self.sandboxes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The live session the request's cookie names at the session's own place `place`, with its principal as of
    /// now.
    pub(super) fn me(&self, state: &ProxyState, headers: &HeaderMap, place: &str) -> Option<Me> {
        let value = cookie(headers, self.names.session)?;
        let session = self.sessions.get(&value)?;
        // The browser sends the cookie only under its place; a cookie shown at another place is not the browser's.
        if !same(place, &session.place) {
            return None;
        }
        let principal = self.principal_of(state, &value)?;
        let base = format!("{}/", super::sessions::path_of(&session.place));
        Some(Me {
            cookie: value,
            session,
            principal,
            base,
        })
    }

    /// The principal of the live session whose cookie is `value`, with the roles in force now: a token is looked
    /// up again (a reload that removed it ends the session, one that changed its roles applies), and a person's
    /// roles claim is read through the `console.oidc.roles` in force (no role left ends the session).
    pub(super) fn principal_of(&self, state: &ProxyState, value: &str) -> Option<Principal> {
        let session = self.sessions.get(value)?;
        match &session.proof {
            Proof::Token(hash) => state.current().admin_principal_hashed(hash),
            Proof::Person(claimed) => {
                let generation = state.current();
                let oidc = generation.config.console.as_ref()?.oidc.as_ref()?;
                let roles = oidc.roles.roles(claimed.iter().map(String::as_str));
                (!roles.is_empty()).then(|| Principal {
                    roles,
                    ..session.principal.clone()
                })
            }
        }
    }

    /// Whether a request that changes something comes from the console's own origin, as the browser says: it must
    /// say (a browser sends `Origin` with every POST, and `Sec-Fetch-Site`), and what it says must be this origin
    /// exactly (scheme, host and port as the request's `Host` names them). `Origin: null`, another port, another
    /// spelling of this host (`localhost` for `127.0.0.1`), `same-site` or `cross-site` are refused.
    pub(super) fn same_origin(&self, headers: &HeaderMap) -> bool {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let fetch_site = header("sec-fetch-site");
        if fetch_site.is_some_and(|s| s != "same-origin") {
            return false;
        }
        match header(ORIGIN.as_str()) {
            // SECURITY: a state change must prove where it comes from; no header at all is not a browser's form.
            None => fetch_site.is_some(),
            Some(origin) => {
                let scheme = if self.tls { "https" } else { "http" };
                header(HOST.as_str()).is_some_and(|host| origin.eq_ignore_ascii_case(&format!("{scheme}://{host}")))
            }
        }
    }
}
