//! An MCP endpoint's answer on its way back (MCP's [`AnswerCheck`]): in no content coding cordon did not ask for; a
//! redirect only to where the same server's pins and an `mcp:` rule of the sandbox apply; its `Mcp-Session-Id`
//! bound to the sandbox; its body read with certainty and its tool lists filtered (`crate::mcp::answer`), or not
//! passed on.

use crate::names::Incarnation;
use std::sync::Arc;

use http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use http::response::Parts;
use http::{HeaderName, HeaderValue, Method, StatusCode, Uri};

use crate::body::ProxyBody;
use crate::error::{ProxyError, REASON_HEADER};
use crate::mcp::answer::{Lists, Unreadable};
use crate::mcp::sessions::Refusal;
use crate::policy::{Policy, Question};
use crate::proxy::protocol::contract::AnswerCheck;
use crate::reason::Reason;
use crate::target::{Target, check_path};

/// What an MCP endpoint's answer is checked with.
pub(crate) struct McpAnswer {
    /// The tool list filter.
    pub(crate) lists: Lists,
    /// The policy that allowed the request: a redirect's target must be allowed by it, under an `mcp:` rule.
    pub(crate) policy: Option<Arc<Policy>>,
    /// Where the request went: its target, absolute URL and method.
    pub(crate) target: Target,
    pub(crate) url: Uri,
    pub(crate) method: Method,
    /// The server's origin (`scheme://host:port`) and the sandbox incarnation, which session ids are bound to.
    pub(crate) origin: String,
    pub(crate) incarnation: Incarnation,
    /// The session id the request named, if any.
    pub(crate) session: Option<String>,
}

/// The header MCP's streamable HTTP names a session with.
pub(crate) const SESSION: HeaderName = HeaderName::from_static("mcp-session-id");

/// A message to an MCP endpoint that is not what MCP's transport sends.
pub(crate) fn invalid(message: String) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::McpInvalid,
        message,
    }
}

/// A session id the request may not use, as the error it is answered with.
pub(crate) fn session_refused(refusal: Refusal) -> ProxyError {
    match refusal {
        Refusal::Malformed(what) => invalid(format!("an MCP endpoint takes {what}")),
        Refusal::Foreign => ProxyError::McpSessionForeign,
        Refusal::TooMany => invalid(format!(
            "the sandbox has {} MCP sessions open with cordon already; end some (DELETE) first",
            crate::mcp::sessions::MOST_PER_SANDBOX
        )),
    }
}

fn refused(code: Reason, message: String) -> ProxyError {
    ProxyError::McpAnswer { code, message }
}

#[async_trait::async_trait]
impl AnswerCheck for McpAnswer {
    async fn answered(self: Box<Self>, parts: &mut Parts, body: ProxyBody) -> Result<ProxyBody, ProxyError> {
        (*self).check(parts, body).await
    }
}

impl McpAnswer {
    /// The body the sandbox gets for the answer `parts`: checked, filtered, or refused. An answer that is not a
    /// success and cannot be read is not refused (its status and headers, `WWW-Authenticate` or `Location`, are
    /// what a client acts on): its body is replaced with cordon's word on why.
    async fn check(self, parts: &mut Parts, body: ProxyBody) -> Result<ProxyBody, ProxyError> {
        // SECURITY: an MCP answer cordon cannot read cannot be filtered: refused, not passed on.
        if parts
            .headers
            .get(CONTENT_ENCODING)
            .is_some_and(|c| !c.as_bytes().eq_ignore_ascii_case(b"identity"))
        {
            return Err(ProxyError::UpstreamEncoding(
                "an MCP answer in a content coding cordon did not ask for".into(),
            ));
        }
        self.redirect(parts)?;
        self.session(parts)?;
        parts.headers.remove(CONTENT_LENGTH);
        match crate::mcp::answer::answer(&parts.headers, body, self.lists).await {
            Ok(body) => Ok(body),
            // A 202 carries no message in MCP (clients read none from it), but the older HTTP+SSE transport's
            // servers (both official SDKs) answer each POST with a 202 saying "Accepted": its body is dropped.
            Err(Unreadable(_)) if parts.status == StatusCode::ACCEPTED => {
                parts.headers.remove(CONTENT_TYPE);
                Ok(crate::body::empty())
            }
            Err(Unreadable(why)) if parts.status.is_success() => Err(refused(Reason::McpAnswerUnreadable, why)),
            Err(Unreadable(why)) => {
                tracing::warn!(origin = %self.origin, status = parts.status.as_u16(), "the body of an MCP answer was withheld (mcp_answer_unreadable): {why}");
                parts
                    .headers
                    .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
                parts.headers.insert(
                    REASON_HEADER,
                    HeaderValue::from_static(Reason::McpAnswerUnreadable.code()),
                );
                Ok(crate::body::full(format!(
                    "cordon: the body of this answer was withheld: {why}\n"
                )))
            }
        }
    }

    /// A redirect goes only to the same origin (whose pins the answer there is compared with), to a path an
    /// `mcp:` rule of the same policy allows for the method the client will use; userinfo and a second
    /// `Location` are refused.
    fn redirect(&self, parts: &Parts) -> Result<(), ProxyError> {
        let methods: Vec<Method> = match parts.status {
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT => vec![self.method.clone()],
            // Clients send a POST again as a GET after these (some keep the POST after a 301 or 302).
            StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => vec![self.method.clone(), Method::GET],
            StatusCode::SEE_OTHER => vec![Method::GET],
            _ => return Ok(()),
        };
        let refuse = |why: String| refused(Reason::McpRedirect, why);
        let mut locations = parts.headers.get_all(LOCATION).iter();
        let location = match (locations.next(), locations.next()) {
            (None, _) => return Ok(()),
            (Some(_), Some(_)) => return Err(refuse("an MCP redirect with two Locations".into())),
            (Some(l), None) => l
                .to_str()
                .map_err(|_| refuse("an MCP redirect whose Location is not ASCII".into()))?,
        };
        let base = url::Url::parse(&self.url.to_string())
            .map_err(|e| refuse(format!("the request's URL does not parse: {e}")))?;
        let to = base
            .join(location)
            .map_err(|e| refuse(format!("an MCP redirect to {location:?}, which is not a URL: {e}")))?;
        if !to.username().is_empty() || to.password().is_some() {
            return Err(refuse("an MCP redirect to a URL with userinfo".into()));
        }
        // SECURITY: a tool list answered at another origin would be compared with that origin's pins, and the
        // next call made here: a redirect leaves the server only through cordon's refusal.
        let same = match (to.host_str(), to.port_or_known_default()) {
            (Some(host), Some(port)) => Target::from_authority_form(&format!("{host}:{port}"))
                .is_ok_and(|t| t == self.target && to.scheme() == base.scheme()),
            _ => false,
        };
        if !same {
            return Err(refuse(format!(
                "an MCP endpoint redirected to {}, another origin than {}: its tool lists would not meet this \
                 server's pins",
                to.origin().ascii_serialization(),
                self.origin
            )));
        }
        // SECURITY: a path no `mcp:` rule covers would answer a tool list unfiltered (or a call unjudged).
        let path = to.path();
        let under_mcp = |method: &Method| {
            let Some(policy) = &self.policy else { return false };
            check_path(path).is_ok() && {
                let decided = policy.decide(Question {
                    target: &self.target,
                    request: Some((method, path)),
                    intercepted: base.scheme() == "https",
                });
                decided.allowed
                    && decided
                        .rule
                        .and_then(|i| policy.rules.get(i))
                        .is_some_and(|r| r.mcp.is_some())
            }
        };
        if let Some(method) = methods.iter().find(|m| !under_mcp(m)) {
            return Err(refuse(format!(
                "an MCP endpoint redirected a {} to {path:?}, which no `mcp:` rule of the sandbox's policy allows \
                 for {method}",
                self.method
            )));
        }
        Ok(())
    }

    /// The session id the server gave is bound to the sandbox (or refused, if another's); a session its DELETE
    /// ended is unbound.
    fn session(&self, parts: &Parts) -> Result<(), ProxyError> {
        let Some((sessions, _)) = &self.lists.sessions else {
            return Ok(());
        };
        if self.method == Method::DELETE
            && parts.status.is_success()
            && let Some(id) = &self.session
        {
            sessions.end(&self.origin, id, &self.incarnation);
        }
        for id in parts.headers.get_all(SESSION) {
            let id = id.to_str().map_err(|_| {
                refused(
                    Reason::McpAnswerUnreadable,
                    "an Mcp-Session-Id that is not visible ASCII".into(),
                )
            })?;
            sessions
                .bind(&self.origin, id, &self.incarnation)
                .map_err(|r| match session_refused(r) {
                    ProxyError::BadRequest { message, .. } => refused(Reason::McpAnswerUnreadable, message),
                    other => other,
                })?;
        }
        Ok(())
    }
}
