//! `console:` and `listen.console`: the approval inbox in the browser and how people sign in to it (tokens,
//! OpenID Connect), as written and validated.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::admin::AdminTls;
use super::credentials::{RawSecretRef, SecretRef, secret_ref};
use super::errors::Errors;
use super::fields::{duration, is_loopback};
use super::shapes;
use crate::principal::{Role, Roles};

/// A listener's certificate chain and key (`console.tls`, `previews.tls`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with cert and key")]
pub(super) struct RawCertKey {
    /// The certificate chain, PEM.
    pub(crate) cert: RawSecretRef,
    /// Its private key, PEM.
    pub(crate) key: RawSecretRef,
}

/// `console:`
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(super) struct RawConsole {
    /// Where people reach the console (`https://cordon.example.com:9443`): the base of the OIDC redirect.
    #[schemars(with = "Option<shapes::HttpUrl>")]
    pub(crate) url: Option<String>,
    /// The certificate and key of `listen.console`.
    pub(crate) tls: Option<RawCertKey>,
    /// How long a sign-in lasts (e.g. `8h`).
    #[schemars(with = "Option<shapes::Duration>")]
    pub(crate) session_ttl: Option<String>,
    /// Sign-in through an OpenID Connect provider.
    pub(crate) oidc: Option<RawOidc>,
}

/// `console.oidc:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping with issuer, client_id and the rest")]
pub(super) struct RawOidc {
    /// The provider's issuer URL, as its discovery document names it.
    #[schemars(with = "shapes::HttpUrl")]
    pub(crate) issuer: String,
    /// cordon's client id at the provider.
    #[schemars(with = "shapes::Text")]
    pub(crate) client_id: String,
    /// cordon's client secret (any secret source); none for a public client (PKCE alone).
    pub(crate) client_secret: Option<RawSecretRef>,
    /// The scopes asked for (default `openid email profile`, plus `groups` when the claim is `groups`).
    pub(crate) scopes: Option<Vec<String>>,
    /// The ID token claim holding the person's groups or roles (default `groups`).
    pub(crate) roles_claim: Option<String>,
    /// The claim's values and the roles each gives; without it, values that are role names are the roles.
    #[schemars(with = "Option<BTreeMap<String, Vec<shapes::Role>>>")]
    pub(crate) roles: Option<BTreeMap<String, Vec<String>>>,
}

/// `console:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct ConsoleConfig {
    /// Where people reach the console, without a trailing slash (`https://cordon.example.com:9443`); the OIDC
    /// redirect is this plus `/console/callback`. `None`: only token sign-in (no OIDC).
    pub(crate) url: Option<String>,
    /// The certificate and key of `listen.console`; `None`: plain HTTP, only on loopback (or the console is on
    /// the admin listener, which has its own TLS).
    pub(crate) tls: Option<(SecretRef, SecretRef)>,
    /// How long a sign-in lasts.
    pub(crate) session_ttl: Duration,
    /// Sign-in through OpenID Connect.
    pub(crate) oidc: Option<Oidc>,
}

/// `console.oidc:`, validated.
#[derive(Debug, Clone)]
pub(crate) struct Oidc {
    /// The issuer URL, without a trailing slash (`https://` or, on loopback, `http://`).
    pub(crate) issuer: String,
    /// cordon's client id.
    pub(crate) client_id: String,
    /// cordon's client secret; `None`: a public client (PKCE alone).
    pub(crate) client_secret: Option<SecretRef>,
    /// The scopes asked for; `openid` is always among them.
    pub(crate) scopes: Vec<String>,
    /// The claim holding the person's groups or roles.
    pub(crate) roles_claim: String,
    /// Where a person's roles come from.
    pub(crate) roles: RoleSource,
}

/// How the roles claim's values become roles.
#[derive(Debug, Clone)]
pub(crate) enum RoleSource {
    /// Values that are role names are the roles (`admin`, `platform`, `approver`, `viewer`); others are ignored.
    Named,
    /// Each value listed gives its roles; others give none.
    Mapped(BTreeMap<String, Roles>),
}

impl RoleSource {
    /// The roles the claim's `values` give.
    pub(crate) fn roles<'a>(&self, values: impl IntoIterator<Item = &'a str>) -> Roles {
        let mut roles = Roles::default();
        for v in values {
            let given = match self {
                RoleSource::Named => crate::principal::Role::parse(v)
                    .map(|r| Roles::of([r]))
                    .unwrap_or_default(),
                RoleSource::Mapped(map) => map.get(v).copied().unwrap_or_default(),
            };
            roles = roles.union(given);
        }
        roles
    }
}

impl ConsoleConfig {
    /// What of it takes a restart to change, for comparing: everything but `oidc.roles`, which a reload applies
    /// to open sessions (a person's roles are found again from their roles claim at each request).
    pub(crate) fn restart_only(&self) -> String {
        let mut fixed = self.clone();
        if let Some(o) = &mut fixed.oidc {
            o.roles = RoleSource::Mapped(BTreeMap::new());
        }
        format!("{fixed:?}")
    }

    /// The secrets it reads, with where each is written.
    pub(crate) fn refs(&self) -> Vec<(&'static str, &SecretRef)> {
        let mut out = Vec::new();
        if let Some((cert, key)) = &self.tls {
            out.extend([("console.tls.cert", cert), ("console.tls.key", key)]);
        }
        if let Some(s) = self.oidc.as_ref().and_then(|o| o.client_secret.as_ref()) {
            out.push(("console.oidc.client_secret", s));
        }
        out
    }
}

/// The longest a sign-in may last.
const MOST_SESSION: Duration = Duration::from_secs(7 * 24 * 3600);

/// `console:` served on `listen.console` (`own`) or else on `listen.admin` (`admin`, with `admin_tls`).
pub(super) fn console(
    errs: &mut Errors,
    raw: Option<RawConsole>,
    own: Option<SocketAddr>,
    admin: Option<SocketAddr>,
) -> Option<ConsoleConfig> {
    let raw = match (raw, own, admin) {
        (None, None, _) => return None,
        (None, Some(_), _) => {
            errs.at(
                "listen.console",
                "is set but `console` is not; write at least `console: {}` (token sign-in) or `console: { url: ..., oidc: ... }`",
            );
            return None;
        }
        (Some(_), None, None) => {
            errs.at(
                "console",
                "is set but neither listen.console nor listen.admin is: the console is served on listen.console, \
                 or under /console/ on the admin listener",
            );
            return None;
        }
        (Some(raw), _, _) => raw,
    };
    let before = errs.list.len();
    let tls = raw.tls.and_then(|t| {
        let cert = secret_ref(errs, "console.tls.cert", t.cert);
        let key = secret_ref(errs, "console.tls.key", t.key);
        Some((cert?, key?))
    });
    match own {
        None if tls.is_some() => errs.at(
            "console.tls",
            "is set but listen.console is not: on the admin listener the console is served with admin.tls",
        ),
        // SECURITY: a sign-in cookie and the decisions it allows never cross a network in plain text.
        Some(addr) if tls.is_none() && !addr.ip().is_loopback() => errs.at(
            "console.tls",
            format!(
                "is missing and listen.console ({addr}) is not a loopback address: people sign in to the console, \
                 so it is served over HTTPS (plain HTTP only on loopback)"
            ),
        ),
        _ => {}
    }
    let url = raw.url.and_then(|u| base_url(errs, "console.url", &u));
    let session_ttl = duration(
        errs,
        "console.session_ttl",
        raw.session_ttl,
        Duration::from_secs(8 * 3600),
    );
    if session_ttl > MOST_SESSION {
        errs.at(
            "console.session_ttl",
            format!("must be at most {}", humantime::format_duration(MOST_SESSION)),
        );
    }
    let oidc = raw.oidc.and_then(|o| oidc(errs, o));
    if oidc.is_some() && url.is_none() {
        errs.at(
            "console.url",
            "is required with console.oidc: it is where the provider sends people back (URL/console/callback), \
             e.g. https://cordon.example.com:9443",
        );
    }
    (errs.list.len() == before).then_some(ConsoleConfig {
        url,
        tls,
        session_ttl,
        oidc,
    })
}

/// With `admin.tls.client_ca`, an admin token needs a client certificate in the console as on `/v1`; a console on
/// `listen.console` (which asks for none) takes no token sign-in then, so it needs `console.oidc` or nobody
/// could sign in.
pub(super) fn certs_and_sign_in(
    errs: &mut Errors,
    admin_tls: Option<&AdminTls>,
    console: Option<&ConsoleConfig>,
    own: Option<SocketAddr>,
) {
    if let (Some(_), Some(c), Some(addr)) = (admin_tls.and_then(|t| t.client_ca.as_ref()), console, own)
        && c.oidc.is_none()
    {
        errs.at(
            "console.oidc",
            format!(
                "is missing, and with admin.tls.client_ca an admin token needs a client certificate, which \
                 listen.console ({addr}) does not ask for: nobody could sign in. Set console.oidc (people sign in \
                 with the identity provider), or serve the console on the admin listener (remove listen.console)"
            ),
        );
    }
}

/// An `https://` URL (or `http://` on loopback) with no query or fragment, without its trailing slash.
fn base_url(errs: &mut Errors, at: &str, text: &str) -> Option<String> {
    let parsed = match url::Url::parse(text) {
        Ok(u) => u,
        Err(e) => {
            errs.at(at, format!("{text:?} is not a URL: {e}"));
            return None;
        }
    };
    let host = parsed.host_str().unwrap_or_default();
    let ok = match parsed.scheme() {
        "https" => true,
        "http" => is_loopback(host),
        _ => false,
    };
    if !ok || host.is_empty() {
        errs.at(
            at,
            format!("{text:?} must be an https:// URL (http:// only on a loopback address)"),
        );
        return None;
    }
    if parsed.query().is_some() || parsed.fragment().is_some() || !parsed.username().is_empty() {
        errs.at(
            at,
            format!("{text:?} may not carry a query, a fragment or user information"),
        );
        return None;
    }
    Some(parsed.as_str().trim_end_matches('/').to_owned())
}

/// `console.oidc:`: the issuer, the client, the scopes (`openid` among them) and where roles come from.
fn oidc(errs: &mut Errors, raw: RawOidc) -> Option<Oidc> {
    let before = errs.list.len();
    let issuer = base_url(errs, "console.oidc.issuer", &raw.issuer);
    if raw.client_id.trim().is_empty() {
        errs.at(
            "console.oidc.client_id",
            "is empty; write the client id the provider gave cordon",
        );
    }
    let client_secret = raw
        .client_secret
        .and_then(|r| secret_ref(errs, "console.oidc.client_secret", r));
    let roles_claim = raw.roles_claim.unwrap_or_else(|| "groups".to_owned());
    if roles_claim.trim().is_empty() {
        errs.at(
            "console.oidc.roles_claim",
            "is empty; name the ID token claim with the groups, e.g. groups",
        );
    }
    let scopes = match raw.scopes {
        Some(list) => {
            for (i, s) in list.iter().enumerate() {
                if s.is_empty()
                    || s.chars()
                        .any(|c| c.is_whitespace() || c.is_control() || c == '"' || c == '\\')
                {
                    errs.at(format!("console.oidc.scopes[{i}]"), format!("{s:?} is not a scope"));
                }
            }
            if !list.iter().any(|s| s == "openid") {
                errs.at(
                    "console.oidc.scopes",
                    "must include openid (the sign-in needs an ID token)",
                );
            }
            list
        }
        None => {
            let mut list: Vec<String> = ["openid", "email", "profile"].map(String::from).to_vec();
            if roles_claim == "groups" {
                list.push("groups".into());
            }
            list
        }
    };
    let roles = match raw.roles {
        None => RoleSource::Named,
        Some(map) => RoleSource::Mapped(role_map(errs, map)),
    };
    (errs.list.len() == before).then(|| Oidc {
        issuer: issuer.unwrap_or_default(),
        client_id: raw.client_id,
        client_secret,
        scopes,
        roles_claim,
        roles,
    })
}

/// `console.oidc.roles`: each claim value's roles, all of them known, none empty.
fn role_map(errs: &mut Errors, raw: BTreeMap<String, Vec<String>>) -> BTreeMap<String, Roles> {
    let mut out = BTreeMap::new();
    for (value, names) in raw {
        let at = format!("console.oidc.roles.{value}");
        if names.is_empty() {
            errs.at(&at, "is empty; give at least one of admin, platform, approver, viewer");
        }
        let mut roles = Roles::default();
        for (i, name) in names.iter().enumerate() {
            match Role::parse(name) {
                Ok(r) => roles = roles.union(Roles::of([r])),
                Err(why) => errs.at(format!("{at}[{i}]"), why),
            }
        }
        out.insert(value, roles);
    }
    out
}
