//! AWS credentials on the request path. The sandbox holds placeholder keys: the access key id is its
//! placeholder of the credential (so the exfiltration scan knows it everywhere) and the secret access key a
//! second value derived the same way. SECURITY: a request to an AWS binding is signed upstream only if the
//! sandbox signed it with its own placeholder keys for that credential; the signature is checked by signing the
//! request as received with those keys, then removed, and the request is signed again with the real keys, which
//! never enter the sandbox. Unsigned requests, other keys, altered or stale signatures, SigV2, SigV4a and
//! chunk-signed payloads are refused.

use crate::names::Incarnation;
use std::time::{Duration, SystemTime};

use http::request::Parts;
use http::uri::PathAndQuery;
use http::{HeaderName, HeaderValue, Uri};

use crate::config::credentials::Inject;
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::inject::apply::{Credentials, unavailable};
use crate::inject::aws_minting;
use crate::names::CredentialName;
use crate::policy::Policy;
use crate::reason::Reason;
use crate::sigv4::AwsKeys;
use crate::sigv4::sign::{Canonical, Payload, canonical, same, sign, unsigned_query};
use crate::sigv4::signature::{Location, Signed, Unfit, read};

/// How far a signature's time may be from cordon's clock (what AWS allows).
const SKEW: Duration = Duration::from_secs(15 * 60);

/// A sandbox's signature, checked, to be replaced.
pub(super) struct AwsSigned {
    credential: CredentialName,
    signed: Signed,
    authority: String,
}

impl Credentials {
    /// Whether a request to which `usable` credentials apply must be read whole for AWS: one of them signs
    /// and the sandbox's signature does not give the payload's hash (`x-amz-content-sha256`).
    /// Also when the request is for a service with minting actions named in the body: it is read to find the
    /// action.
    pub(super) fn aws_needs_body(&self, usable: &[CredentialName], parts: &Parts) -> bool {
        let mut aws = self.aws_usable(usable).peekable();
        if aws.peek().is_none() {
            return false;
        }
        let host = authority(parts).unwrap_or_default();
        let scope = match read(parts) {
            Ok(Some(signed)) => signed.service,
            _ => String::new(),
        };
        !parts.headers.contains_key("x-amz-content-sha256")
            || aws.any(|name| aws_minting::reads_body(&aws_minting::services(&scope, self.pinned_service(name), &host)))
    }

    /// The service credential `name` is pinned to sign for, if it is.
    fn pinned_service(&self, name: &CredentialName) -> Option<&str> {
        match self.specs.get(name).map(|s| &s.inject) {
            Some(Inject::AwsSigV4 { service, .. }) => service.as_deref(),
            _ => None,
        }
    }

    fn aws_usable<'a>(&'a self, usable: &'a [CredentialName]) -> impl Iterator<Item = &'a CredentialName> {
        usable.iter().filter(|n| {
            self.specs
                .get(*n)
                .is_some_and(|s| matches!(s.inject, Inject::AwsSigV4 { .. }))
        })
    }

    /// Whether any of the credentials `applied` to a request signs with AWS keys (then what comes back has its
    /// key material masked, [`crate::leak::mask_aws_keys`]).
    pub(crate) fn signs_aws(&self, applied: &[CredentialName]) -> bool {
        self.aws_usable(applied).next().is_some()
    }

    /// The placeholder secret access key of the sandbox incarnation `incarnation` for `credential`.
    pub(crate) fn aws_placeholder_secret(&self, incarnation: &Incarnation, credential: &CredentialName) -> String {
        self.placeholders.aws_secret(incarnation, credential)
    }

    /// The AWS variables of the sandbox incarnation `incarnation` (`Sandbox::incarnation`), whose policy allows `allowed`: `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` of the first AWS credential (by name), and for each
    /// `CORDON_AWS_SECRET_ACCESS_KEY_<NAME>` beside its `CORDON_PLACEHOLDER_<NAME>` (the key id).
    pub(crate) fn aws_env(
        &self,
        incarnation: &Incarnation,
        allowed: &[CredentialName],
    ) -> std::collections::BTreeMap<String, String> {
        let mut env = std::collections::BTreeMap::new();
        let mut names: Vec<&CredentialName> = self.aws_usable(allowed).collect();
        names.sort();
        for (i, name) in names.into_iter().enumerate() {
            let (id, secret) = (
                self.placeholders.value(incarnation, name),
                self.aws_placeholder_secret(incarnation, name),
            );
            let var = crate::placeholder::env_var(name.as_str()).replacen(
                "CORDON_PLACEHOLDER_",
                "CORDON_AWS_SECRET_ACCESS_KEY_",
                1,
            );
            env.insert(var, secret.clone());
            if i == 0 {
                env.insert("AWS_ACCESS_KEY_ID".into(), id);
                env.insert("AWS_SECRET_ACCESS_KEY".into(), secret);
            }
        }
        env
    }

    /// Check the sandbox's signature of a request to which AWS credentials among `usable` apply, before
    /// anything of it changes; `body` is the body read whole, when it was.
    pub(super) fn aws_check(
        &self,
        sandbox: &Sandbox,
        usable: &[CredentialName],
        parts: &Parts,
        body: Option<&[u8]>,
    ) -> Result<Option<AwsSigned>, ProxyError> {
        if self.aws_usable(usable).next().is_none() {
            return Ok(None);
        }
        let aws: Vec<&CredentialName> = self.aws_usable(usable).collect();
        let signed = match read(parts) {
            Ok(Some(signed)) => signed,
            Ok(None) => return Err(refused(Reason::AwsUnsigned, "an AWS destination takes only requests signed with this sandbox's AWS keys (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from `cordon sandbox env`)".into())),
            Err(Unfit::Unsupported(why)) => {
                return Err(ProxyError::BadRequest {
                    code: Reason::AwsSignatureUnsupported,
                    message: why,
                });
            }
            Err(Unfit::Malformed(why)) => {
                return Err(ProxyError::BadRequest {
                    code: Reason::AwsSignatureMalformed,
                    message: why,
                });
            }
        };
        sessionless(parts)?;
        let incarnation = sandbox.incarnation();
        let Some(credential) = aws
            .into_iter()
            .find(|c| self.placeholders.value(incarnation, c) == signed.key_id)
        else {
            return Err(refused(
                Reason::AwsSignatureKey,
                "the request is not signed with this sandbox's AWS access key for this destination".into(),
            ));
        };
        if let Some(Inject::AwsSigV4 { region, service }) = self.specs.get(credential).map(|s| &s.inject) {
            for (what, pinned, asked) in [
                ("region", region, &signed.region),
                ("service", service, &signed.service),
            ] {
                if let Some(pinned) = pinned
                    && pinned != asked
                {
                    return Err(refused(
                        Reason::AwsSignatureScope,
                        format!("signed for {what} {asked}; credential {credential} signs only for {pinned}"),
                    ));
                }
            }
        }
        let authority = authority(parts)?;
        // Before the signature is judged: a minting call is refused as that, however it is signed.
        self.aws_minting(credential, &signed, parts, &authority, body)?;
        fresh(&signed)?;
        let request = canonical(parts, &signed, &authority).map_err(|e| malformed(&e))?;
        let keys = AwsKeys {
            id: signed.key_id.clone(),
            secret: self.aws_placeholder_secret(sandbox.incarnation(), credential).into(),
            token: None,
        };
        let payload = payload(&signed, body)?;
        let made = sign(
            &request,
            &keys,
            (&signed.region, &signed.service),
            signed.time,
            signed.location,
            &payload,
        )
        .map_err(|e| malformed(&e))?;
        if !same(&made.signature, &signed.signature) {
            return Err(refused(
                Reason::AwsSignatureMismatch,
                "the AWS signature does not match the request: it was altered, or signed with other keys".into(),
            ));
        }
        Ok(Some(AwsSigned {
            credential: credential.clone(),
            signed,
            authority,
        }))
    }

    /// SECURITY: a request that would mint credentials (new keys, temporary keys, passwords, tokens) is refused
    /// unless `credential`'s `allow_minting` names its action; a body this needs and cordon has not read (too
    /// large, compressed) is refused rather than guessed at.
    fn aws_minting(
        &self,
        credential: &CredentialName,
        signed: &Signed,
        parts: &Parts,
        authority: &str,
        body: Option<&[u8]>,
    ) -> Result<(), ProxyError> {
        let services = aws_minting::services(&signed.service, self.pinned_service(credential), authority);
        if !aws_minting::mints(&services) {
            return Ok(());
        }
        if body.is_none() && aws_minting::reads_body(&services) {
            return Err(ProxyError::BadRequest {
                code: Reason::AwsBodyUnreadable,
                message: format!(
                    "cordon reads the body of a request to {} to see which action it calls: send it \
                     uncompressed and under {} bytes",
                    signed.service,
                    crate::body::read::MAX_SCANNED_BODY
                ),
            });
        }
        let allowed = self
            .specs
            .get(credential)
            .map(|s| s.allow_minting.as_slice())
            .unwrap_or_default();
        match aws_minting::refused(parts, body, &services, allowed) {
            Some(call) => Err(ProxyError::Minting {
                credential: credential.to_string().into(),
                call: call.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Remove the sandbox's signature and sign the request as it now is with the real keys; the
    /// credential's name.
    pub(super) async fn aws_sign(
        &self,
        policy: &Policy,
        checked: AwsSigned,
        parts: &mut Parts,
        body: Option<&[u8]>,
    ) -> Result<CredentialName, ProxyError> {
        let AwsSigned {
            credential,
            signed,
            authority,
        } = checked;
        let spec = self.specs.get(credential.as_str()).ok_or(ProxyError::Internal)?;
        let narrowed = policy
            .credential_scope
            .get(credential.as_str())
            .map(|o| (policy.name.as_str(), o));
        let keys = self.secrets.aws_keys(spec, narrowed).await.map_err(|detail| {
            tracing::warn!(credential = %credential, "credential unavailable: {detail}");
            unavailable(credential.as_str(), detail)
        })?;
        let request: Canonical = canonical(parts, &signed, &authority).map_err(|e| malformed(&e))?;
        let made = sign(
            &request,
            &keys,
            (&signed.region, &signed.service),
            signed.time,
            signed.location,
            &payload(&signed, body)?,
        )
        .map_err(|e| unavailable(credential.as_str(), e))?;
        for name in [
            "authorization",
            "x-amz-date",
            "x-amz-security-token",
            "x-amz-content-sha256",
        ] {
            parts.headers.remove(name);
        }
        for (name, value, sensitive) in made.headers {
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| unavailable(credential.as_str(), "not a header value".into()))?;
            value.set_sensitive(sensitive || name == "authorization" || name == "x-amz-security-token");
            parts.headers.insert(HeaderName::from_static(name), value);
        }
        if let Location::Query { .. } = signed.location {
            let mut query = unsigned_query(parts.uri.query().unwrap_or_default());
            for (name, value) in made.params {
                let value: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
                if !query.is_empty() {
                    query.push('&');
                }
                query.push_str(&format!("{name}={value}"));
            }
            let mut uri = parts.uri.clone().into_parts();
            uri.path_and_query = Some(
                PathAndQuery::try_from(format!("{}?{query}", parts.uri.path()))
                    .map_err(|_| unavailable(credential.as_str(), "not valid in a URI".into()))?,
            );
            parts.uri =
                Uri::from_parts(uri).map_err(|_| unavailable(credential.as_str(), "not valid in a URI".into()))?;
        }
        // The sandbox's key id (its placeholder) was only ever allowed where the signature names it.
        let key_id = signed.key_id.as_str();
        let left = parts.headers.values().any(|v| contains(v.as_bytes(), key_id))
            || parts.uri.query().is_some_and(|q| q.contains(key_id));
        if left {
            return Err(ProxyError::Exfiltration {
                credential,
                why: "the AWS access key id sent outside its signature".into(),
            });
        }
        Ok(credential)
    }
}

/// SECURITY: a session token the sandbox sent (`X-Amz-Security-Token`, as a header, signed or not, or a query
/// parameter, in any case) is refused: the sandbox's keys have none, and the only token that goes upstream is
/// the one of cordon's own keys, so temporary keys minted elsewhere cannot ride on cordon's signature.
fn sessionless(parts: &Parts) -> Result<(), ProxyError> {
    let in_query = parts.uri.query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k.trim().eq_ignore_ascii_case("x-amz-security-token"))
    });
    if parts.headers.contains_key("x-amz-security-token") || in_query {
        return Err(refused(
            Reason::AwsSessionToken,
            "the request carries its own AWS session token; the sandbox's AWS keys have none: unset \
             AWS_SESSION_TOKEN (cordon adds its own keys' token)"
                .into(),
        ));
    }
    Ok(())
}

/// The signature's time is near enough to now: AWS's 15 minutes for a header, the URL's life for a query.
fn fresh(signed: &Signed) -> Result<(), ProxyError> {
    let now = SystemTime::now();
    let (earliest, latest) = match signed.location {
        Location::Header => (signed.time.checked_sub(SKEW), signed.time.checked_add(SKEW)),
        Location::Query { expires } => (
            signed.time.checked_sub(SKEW),
            signed.time.checked_add(Duration::from_secs(expires)),
        ),
    };
    if earliest.is_some_and(|t| now < t) || latest.is_some_and(|t| now > t) {
        return Err(refused(
            Reason::AwsSignatureExpired,
            "the AWS signature's time is too far from now (or the presigned URL has expired)".into(),
        ));
    }
    Ok(())
}

/// The payload hash the sandbox signed: given in `x-amz-content-sha256`, else the body's.
fn payload<'a>(signed: &Signed, body: Option<&'a [u8]>) -> Result<Payload<'a>, ProxyError> {
    Ok(match (&signed.payload, signed.location) {
        (Some(given), _) => Payload::Given(given.clone()),
        (None, Location::Query { .. }) if signed.service == "s3" => Payload::Unsigned,
        (None, _) => Payload::Bytes(body.ok_or(ProxyError::PayloadTooLarge {
            limit: crate::body::read::MAX_SCANNED_BODY,
        })?),
    })
}

/// The host the sandbox signed: its `Host` header, or the HTTP/2 `:authority`.
fn authority(parts: &Parts) -> Result<String, ProxyError> {
    match parts.headers.get(http::header::HOST) {
        Some(h) => h
            .to_str()
            .map(str::to_string)
            .map_err(|_| malformed("the Host header is not text")),
        None => parts
            .uri
            .authority()
            .map(|a| a.as_str().to_string())
            .ok_or_else(|| malformed("the request names no host")),
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn refused(code: Reason, message: String) -> ProxyError {
    ProxyError::Signature { code, message }
}

fn malformed(why: &str) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::AwsSignatureMalformed,
        message: why.to_string(),
    }
}
