//! Preview URLs into sandboxes: a person opens `<port>-<sandbox>.<domain>` on the preview listener and
//! reaches a dev server inside the sandbox, but only with a short-lived link made through the admin API. This
//! module holds what the link and the session are: claims signed with HS256 (`jsonwebtoken`), one audience for
//! links and another for sessions so neither passes for the other, the names previews live at, and the
//! previews revoked. The request flow is `proxy::preview`; the listener `entry::preview`.

pub(crate) mod cookies;
pub(crate) mod host;
pub(crate) mod origin;
pub(crate) mod tls;
pub(crate) mod tokens;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::previews::PreviewsConfig as Config;
use crate::names::SandboxId;

pub(crate) use tokens::{Claims, LinkSigner};

/// The path a link opens (the session's cookie is set there, then the browser is sent to `/`).
pub(crate) const OPEN_PATH: &str = "/.cordon/preview";

/// The previews of this process: how to sign and check, and what was revoked.
pub(crate) struct Previews {
    /// The configuration, as it was at start (previews take a restart to change).
    pub(crate) config: Config,
    /// Signs and checks links and sessions.
    pub(crate) signer: LinkSigner,
    /// Where links point: `https` or `http`, and the listener's port if it is not the scheme's default.
    pub(crate) scheme: &'static str,
    /// The port links name, if not the scheme's default.
    pub(crate) port: Option<u16>,
    /// The listener's TLS, if it speaks TLS.
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
    /// Previews made, by id: their sandbox, and when their last session would expire.
    issued: Mutex<HashMap<String, (SandboxId, SystemTime)>>,
    /// Revoked previews, until their last session would have expired anyway.
    revoked: Mutex<HashMap<String, SystemTime>>,
}

impl Previews {
    /// Previews signed with `key`, reached at `listen_port` over `tls` or plain HTTP.
    pub(crate) fn new(
        config: Config,
        key: &[u8],
        tls: Option<tokio_rustls::TlsAcceptor>,
        listen_port: u16,
    ) -> Previews {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let default = if tls.is_some() { 443 } else { 80 };
        Previews {
            config,
            signer: LinkSigner::new(key),
            scheme,
            port: (listen_port != default).then_some(listen_port),
            tls,
            issued: Mutex::new(HashMap::new()),
            revoked: Mutex::new(HashMap::new()),
        }
    }

    /// The host of the preview of `port` of `sandbox`.
    pub(crate) fn host(&self, port: u16, sandbox: &SandboxId) -> String {
        let host = format!("{port}-{sandbox}.{}", self.config.domain);
        match self.port {
            Some(p) => format!("{host}:{p}"),
            None => host,
        }
    }

    /// A link opening `claims`' preview (which is remembered, so that it can be revoked).
    pub(crate) fn link(&self, claims: &Claims) -> Result<String, String> {
        let token = self.signer.link(claims)?;
        let last = UNIX_EPOCH + Duration::from_secs(claims.exp) + self.config.session_ttl;
        let mut issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
        let now = SystemTime::now();
        issued.retain(|_, (_, until)| *until > now);
        issued.insert(claims.pid.clone(), (claims.sbx.clone(), last));
        Ok(format!(
            "{}://{}{OPEN_PATH}?t={token}",
            self.scheme,
            self.host(claims.port, &claims.sbx)
        ))
    }

    /// End preview `id` of `sandbox` at once (its links and sessions are refused from now on); whether there
    /// was such a preview still able to open.
    pub(crate) fn revoke(&self, sandbox: &SandboxId, id: &str) -> bool {
        let now = SystemTime::now();
        let until = {
            let issued = self.issued.lock().unwrap_or_else(|e| e.into_inner());
            match issued.get(id) {
                Some((s, until)) if s == sandbox && *until > now => *until,
                _ => return false,
            }
        };
        let mut revoked = self.revoked.lock().unwrap_or_else(|e| e.into_inner());
        revoked.retain(|_, t| *t > now);
        revoked.insert(id.to_string(), until);
        true
    }

    /// Whether preview `id` was revoked.
    pub(crate) fn is_revoked(&self, id: &str) -> bool {
        let revoked = self.revoked.lock().unwrap_or_else(|e| e.into_inner());
        revoked.get(id).is_some_and(|t| *t > SystemTime::now())
    }

    /// How long a session may last.
    pub(crate) fn session_ttl(&self) -> Duration {
        self.config.session_ttl
    }

    /// A new preview id: `pv-` and 16 random hex digits.
    pub(crate) fn new_id() -> Result<String, String> {
        Ok(format!("pv-{}", crate::secret_file::random_hex(8)?))
    }
}
