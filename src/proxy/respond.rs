//! The upstream's answer on its way back: hop-by-hop headers stripped, every secret of a masked destination
//! masked (reason phrase, header names and values, 101 heads, body as it streams with every coding it went
//! through undone first, trailers; hyper never hands on another 1xx), and
//! the audit record carried to the end of the body, or of the WebSocket.

use http::header::{CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::exchange::Exchange;
use super::input::{Outcome, TunnelRecord, WebSocketGuard};
use crate::body::codings::Codings;
use crate::body::{Counted, ProxyBody};
use crate::error::ProxyError;
use crate::identity::Sandbox;
use crate::inject::outgoing::refusal;
use crate::leak::mask::body::MaskedBody;
use crate::leak::mask::envelope::mask_head;
use crate::leak::scan::body::ScanVerdict;
use crate::names::CredentialName;
use crate::proxy::handover::Reply;
use crate::proxy::headers;
use crate::upstream::pool::Dialled;

impl Exchange {
    /// The upstream's response as the client gets it, carrying the audit record in its body (emitted when
    /// the body ends).
    pub(super) async fn respond(mut self, resp: Response<ProxyBody>, reply: Reply) -> Outcome {
        let (mut parts, mut body) = resp.into_parts();
        if let Some(Dialled(addr)) = parts.extensions.get::<Dialled>() {
            self.audit.dialled(addr.to_string());
        }
        if let Some(masker) = reply.masker.clone() {
            // Every coding the body went through, read before the hop-by-hop `Transfer-Encoding` is stripped:
            // hyper undoes only `chunked`, and a `gzip, chunked` body arrives gzipped.
            // SECURITY: a body cordon cannot read cannot be masked: refused, not passed on.
            let masked =
                Codings::of(&parts.headers).and_then(|codings| MaskedBody::decoded(body, masker.clone(), &codings));
            let masked = match masked {
                Ok(masked) => masked,
                Err(e) => return self.refuse(ProxyError::UpstreamEncoding(e.to_string())),
            };
            headers::strip_response(&mut parts.headers);
            mask_head(&masker, &mut parts);
            // The body the sandbox gets is decoded and masked: its coding and length are no longer the upstream's.
            parts.headers.remove(CONTENT_ENCODING);
            parts.headers.remove(CONTENT_LENGTH);
            body = masked.boxed_unsync();
        } else {
            headers::strip_response(&mut parts.headers);
        }
        if reply.aws_keys {
            // SECURITY: no AWS key material reaches the sandbox (leak/mask/key_mask.rs).
            body = match crate::leak::mask_aws_keys(&mut parts.headers, body) {
                Ok(body) => body,
                Err(e) => return self.refuse(ProxyError::UpstreamEncoding(e)),
            };
        }
        if reply.tokens {
            // SECURITY: a minting call let through hands the sandbox no token (leak/mask/key_mask.rs).
            body = match crate::leak::mask_tokens(&mut parts.headers, body) {
                Ok(body) => body,
                Err(e) => return self.refuse(ProxyError::UpstreamEncoding(e)),
            };
        }
        if let Some(protocol) = reply.protocol {
            // SECURITY: an MCP answer cordon cannot read cannot be filtered: refused, not passed on.
            body = match protocol.answered(&mut parts, body, self.state().map(|s| &**s)).await {
                Ok(body) => body,
                Err(e) => return self.refuse(e),
            };
        }
        self.audit.status(parts.status.as_u16());
        let audit = self.audit;
        let down = audit.down_counter();
        Outcome::Respond(Response::from_parts(
            parts,
            Counted::new(body, down, Some(audit))
                .metered(reply.meter, false)
                .boxed_unsync(),
        ))
    }

    /// A WebSocket handshake's response. After a 101 the client is told it switched, its headers masked, and
    /// the WebSocket's audit record, masker and scanner go to the entry beside the response
    /// ([`Outcome::Upgrade`]; the upstream's upgraded stream stays where hyper keeps it, `hyper::upgrade::on`)
    /// for it to relay the frames with; `allowed` are the credentials whose secrets may be sent on it.
    pub(super) async fn respond_upgrade(
        mut self,
        resp: Response<Incoming>,
        allowed: Vec<CredentialName>,
        reply: Reply,
    ) -> Outcome {
        if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
            return self.respond(resp.map(crate::body::boxed), reply).await;
        }
        let (mut parts, _) = resp.into_parts();
        if let Some(Dialled(addr)) = parts.extensions.get::<Dialled>() {
            self.audit.dialled(addr.to_string());
        }
        headers::strip_response(&mut parts.headers);
        if let Some(masker) = &reply.masker {
            mask_head(masker, &mut parts);
        }
        if parts.headers.contains_key(SEC_WEBSOCKET_EXTENSIONS) {
            // SECURITY: compressed frames cannot be scanned or masked; cordon never offered an extension.
            return self.refuse(ProxyError::UpstreamEncoding(
                "the upstream switched to a WebSocket extension cordon did not offer".into(),
            ));
        }
        parts.headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        self.audit.status(parts.status.as_u16());
        let detector = self.generation.credentials.detector();
        let max = (
            self.generation.config.limits.websocket_message,
            self.generation.config.limits.websocket_frame,
        );
        let guard = WebSocketGuard {
            masker: reply.masker.clone(),
            detector,
            allowed,
            max,
            record: Some(TunnelRecord(self.audit)),
        };
        Outcome::Upgrade(Response::from_parts(parts, crate::body::empty()), Box::new(guard))
    }

    /// The refusal a request body scan ended the upload with, if it did.
    pub(super) fn scan_refusal(&self, sandbox: &Sandbox, scan: &mut Option<ScanVerdict>) -> Option<ProxyError> {
        let found = scan.take()?.take()?;
        Some(refusal(&found, sandbox, &self.generation.credentials))
    }
}
