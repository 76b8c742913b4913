//! A credential's `source:`: a stored secret, OAuth2 client-credentials tokens, a subscription sign-in held by
//! cordon (`oauth2_refresh`: a rotating refresh token kept in the store), a GitHub App's installation tokens, or
//! AWS keys (`aws.rs`). As written and validated.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::aws::{AwsSpec, RawAws};
use super::secret::{RawSecretRef, SecretRef, secret_ref};
use crate::config::errors::Errors;
use crate::config::fields::{url, whole};
use crate::config::scalars::Whole;
use crate::config::shapes;

/// `source:` of a credential: exactly one of its keys.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub(crate) struct RawSource {
    /// A name in the file vault.
    pub(crate) vault: Option<String>,
    /// An environment variable of cordon's process.
    pub(crate) env: Option<String>,
    /// A `path#key` in the OpenBao KV v2 mount.
    pub(crate) openbao: Option<String>,
    /// A file holding the secret.
    pub(crate) file: Option<String>,
    /// OAuth2 client-credentials tokens.
    pub(crate) oauth2: Option<RawOAuth2>,
    /// Access tokens from a rotating OAuth2 refresh token that cordon keeps in its store (a subscription sign-in).
    pub(crate) oauth2_refresh: Option<RawOAuth2Refresh>,
    /// GitHub App installation tokens.
    pub(crate) github_app: Option<RawGitHubApp>,
    /// AWS keys, optionally assuming a role.
    pub(crate) aws: Option<RawAws>,
}

/// `source.oauth2:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawOAuth2 {
    /// The token endpoint.
    #[schemars(with = "shapes::HttpUrl")]
    pub(crate) token_url: String,
    /// The client id.
    #[schemars(with = "shapes::Text")]
    pub(crate) client_id: String,
    /// Where the client secret is.
    pub(crate) client_secret: RawSecretRef,
    /// Requested scope.
    pub(crate) scope: Option<String>,
    /// Requested audience.
    pub(crate) audience: Option<String>,
    /// Requested resource (RFC 8707).
    pub(crate) resource: Option<String>,
    /// `basic` (default) or `post`.
    #[schemars(with = "Option<shapes::OAuth2Auth>")]
    pub(crate) auth: Option<String>,
}

/// `source.oauth2_refresh:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawOAuth2Refresh {
    /// The token endpoint.
    #[schemars(with = "shapes::HttpUrl")]
    pub(crate) token_url: String,
    /// The client id.
    #[schemars(with = "shapes::Text")]
    pub(crate) client_id: String,
    /// Where the client secret is (a public client has none).
    pub(crate) client_secret: Option<RawSecretRef>,
    /// Requested scope (sent with each refresh; a provider may narrow, never widen, the grant's).
    pub(crate) scope: Option<String>,
}

/// `source.github_app:`
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, expecting = "a mapping of keys and values")]
pub(crate) struct RawGitHubApp {
    /// API base (default https://api.github.com; an Enterprise or test URL otherwise).
    #[schemars(with = "Option<shapes::HttpUrl>")]
    pub(crate) api_base: Option<String>,
    /// The App id.
    #[schemars(with = "shapes::Text")]
    pub(crate) app_id: String,
    /// The installation id.
    pub(crate) installation_id: Whole,
    /// Where the App's private key (PEM) is.
    pub(crate) private_key: RawSecretRef,
    /// Repositories the token may touch.
    #[serde(default)]
    pub(crate) repositories: Vec<String>,
    /// Permissions, e.g. `{contents: read}`.
    #[serde(default)]
    pub(crate) permissions: BTreeMap<String, String>,
}

/// Where a credential's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SecretSource {
    /// A stored secret, used as it is.
    Static(SecretRef),
    /// OAuth2 client-credentials tokens (RFC 6749 §4.4).
    OAuth2(Box<OAuth2Spec>),
    /// Access tokens refreshed from a rotating refresh token kept (sealed) in the store (RFC 6749 §6).
    OAuth2Refresh(Box<OAuth2RefreshSpec>),
    /// GitHub App installation tokens, narrowed.
    GitHubApp(Box<GitHubAppSpec>),
    /// AWS keys (stored, or short-lived from STS AssumeRole) that cordon signs requests with (SigV4).
    Aws(Box<AwsSpec>),
}

/// OAuth2 client credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuth2Spec {
    /// Token endpoint.
    pub(crate) token_url: http::Uri,
    /// Client id.
    pub(crate) client_id: String,
    /// Client secret.
    pub(crate) client_secret: SecretRef,
    /// Scope.
    pub(crate) scope: Option<String>,
    /// Audience.
    pub(crate) audience: Option<String>,
    /// Resource.
    pub(crate) resource: Option<String>,
    /// `client_secret_post` instead of Basic.
    pub(crate) post: bool,
}

/// A refresh token's client: where it is refreshed and as whom (the token itself is in the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OAuth2RefreshSpec {
    /// Token endpoint (`https://`, or `http://` to a loopback address).
    pub(crate) token_url: http::Uri,
    /// Client id.
    pub(crate) client_id: String,
    /// Client secret (sent with HTTP Basic); `None` for a public client (the id goes in the form).
    pub(crate) client_secret: Option<SecretRef>,
    /// Scope.
    pub(crate) scope: Option<String>,
}

/// A GitHub App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitHubAppSpec {
    /// API base.
    pub(crate) api_base: http::Uri,
    /// App id.
    pub(crate) app_id: String,
    /// Installation id.
    pub(crate) installation_id: u64,
    /// The App's private key.
    pub(crate) private_key: SecretRef,
    /// Repositories the token may touch.
    pub(crate) repositories: Vec<String>,
    /// Permissions.
    pub(crate) permissions: std::collections::BTreeMap<String, String>,
}

/// `source:` at `base`: exactly one of its keys.
pub(super) fn source(errs: &mut Errors, base: &str, s: RawSource) -> Option<SecretSource> {
    let count = [
        s.vault.is_some(),
        s.env.is_some(),
        s.openbao.is_some(),
        s.file.is_some(),
        s.oauth2.is_some(),
        s.oauth2_refresh.is_some(),
        s.github_app.is_some(),
        s.aws.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if count != 1 {
        errs.at(
            base,
            "needs exactly one of `vault: NAME`, `env: VARIABLE`, `openbao: PATH#KEY`, `file: PATH`, `oauth2: {...}`, \
             `oauth2_refresh: {...}`, `github_app: {...}` or `aws: {...}`",
        );
        return None;
    }
    if let Some(o) = s.oauth2 {
        let token_url = url(errs, &format!("{base}.oauth2.token_url"), &o.token_url);
        let secret = secret_ref(errs, &format!("{base}.oauth2.client_secret"), o.client_secret);
        let post = match o.auth.as_deref() {
            None | Some("basic") => false,
            Some("post") => true,
            Some(other) => {
                errs.at(
                    format!("{base}.oauth2.auth"),
                    format!("{other:?} is not `basic` or `post`"),
                );
                false
            }
        };
        return Some(SecretSource::OAuth2(Box::new(OAuth2Spec {
            token_url: token_url?,
            client_id: o.client_id,
            client_secret: secret?,
            scope: o.scope,
            audience: o.audience,
            resource: o.resource,
            post,
        })));
    }
    if let Some(o) = s.oauth2_refresh {
        return oauth2_refresh(errs, &format!("{base}.oauth2_refresh"), o)
            .map(|o| SecretSource::OAuth2Refresh(Box::new(o)));
    }
    if let Some(a) = s.aws {
        return super::aws::source(errs, &format!("{base}.aws"), a).map(|a| SecretSource::Aws(Box::new(a)));
    }
    if let Some(g) = s.github_app {
        let api_base = url(
            errs,
            &format!("{base}.github_app.api_base"),
            g.api_base.as_deref().unwrap_or("https://api.github.com"),
        );
        let key = secret_ref(errs, &format!("{base}.github_app.private_key"), g.private_key);
        let at = format!("{base}.github_app.installation_id");
        let installation = whole(errs, &at, Some(g.installation_id), "the installation's number");
        let installation = match installation.map(u64::try_from) {
            Some(Ok(n)) if n > 0 => Some(n),
            Some(_) => {
                errs.at(&at, "must be the installation's number (a positive whole number)");
                None
            }
            None => None,
        };
        return Some(SecretSource::GitHubApp(Box::new(GitHubAppSpec {
            api_base: api_base?,
            app_id: g.app_id,
            installation_id: installation?,
            private_key: key?,
            repositories: g.repositories,
            permissions: g.permissions,
        })));
    }
    secret_ref(
        errs,
        base,
        RawSecretRef {
            vault: s.vault,
            env: s.env,
            openbao: s.openbao,
            file: s.file,
        },
    )
    .map(SecretSource::Static)
}

/// `source.oauth2_refresh:` at `base`: the token endpoint must keep the refresh token off cleartext networks.
fn oauth2_refresh(errs: &mut Errors, base: &str, o: RawOAuth2Refresh) -> Option<OAuth2RefreshSpec> {
    let at = format!("{base}.token_url");
    let token_url = url(errs, &at, &o.token_url).and_then(|u| {
        let host = u.host().unwrap_or("");
        // SECURITY: a refresh token (and client secret) sent over cleartext to a non-loopback host can be sniffed.
        if u.scheme_str() == Some("https") || crate::config::fields::is_loopback(host) {
            Some(u)
        } else {
            errs.at(
                &at,
                format!("{:?} must be https:// (http:// only to a loopback address): the refresh token would cross the network in the clear", o.token_url),
            );
            None
        }
    });
    if o.client_id.trim().is_empty() {
        errs.at(
            format!("{base}.client_id"),
            "is empty; write the OAuth2 client id the refresh token was issued to",
        );
    }
    let secret = o
        .client_secret
        .map(|r| secret_ref(errs, &format!("{base}.client_secret"), r));
    if o.scope.as_deref().is_some_and(|s| s.trim().is_empty()) {
        errs.at(format!("{base}.scope"), "is empty; remove it to keep the grant's scope");
    }
    Some(OAuth2RefreshSpec {
        token_url: token_url?,
        client_id: o.client_id,
        client_secret: match secret {
            Some(r) => Some(r?),
            None => None,
        },
        scope: o.scope,
    })
}
