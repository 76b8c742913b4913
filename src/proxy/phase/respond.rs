//! Respond: the upstream's answer on its way back. Hop-by-hop headers stripped, every secret of a masked
//! destination masked (reason phrase, header names and values, 101 heads, body as it streams with every coding
//! it went through undone first, trailers; hyper never hands on another 1xx), AWS keys and minted tokens
//! masked, the protocol's check of its answer (MCP's tool lists filtered). A 101 inside an interception becomes
//! a WebSocket's guard. Takes `ctx.answer`; writes `ctx.ending`.

use http::header::{CONNECTION, CONTENT_ENCODING, CONTENT_LENGTH, SEC_WEBSOCKET_EXTENSIONS, UPGRADE};
use http::{HeaderValue, Response, StatusCode};
use http_body_util::BodyExt;

use crate::body::codings::Codings;
use crate::error::ProxyError;
use crate::leak::mask::body::MaskedBody;
use crate::leak::mask::envelope::mask_head;
use crate::proxy::ctx::{Ctx, Ended, slot};
use crate::proxy::effects::Effects;
use crate::proxy::headers;
use crate::proxy::input::WebSocketGuard;
use crate::upstream::pool::DialledAddr;

/// The upstream's answer as the client gets it.
pub(crate) async fn run(ctx: &mut Ctx, _fx: &impl Effects) -> Result<(), ProxyError> {
    // Send either got an answer or failed; only a dry run, which sends nothing, has none.
    let Some(answer) = ctx.answer.take() else {
        ctx.ending = Some(Ended::Dry);
        return Ok(());
    };
    let reply = ctx.reply.take().unwrap_or_default();
    let (mut parts, body) = answer.into_parts();
    if let Some(DialledAddr(addr)) = parts.extensions.get::<DialledAddr>() {
        ctx.audit.dialled(addr.to_string());
    }
    if ctx.websocket && parts.status == StatusCode::SWITCHING_PROTOCOLS {
        headers::strip_response(&mut parts.headers);
        if let Some(masker) = &reply.masker {
            mask_head(masker, &mut parts);
        }
        if parts.headers.contains_key(SEC_WEBSOCKET_EXTENSIONS) {
            // SECURITY: compressed frames cannot be scanned or masked; cordon never offered an extension.
            return Err(ProxyError::UpstreamEncoding(
                "the upstream switched to a WebSocket extension cordon did not offer".into(),
            ));
        }
        parts.headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
        // The upstream's upgraded stream stays where hyper keeps it (`hyper::upgrade::on`); the entry relays the
        // frames with the guard.
        let guard = WebSocketGuard {
            masker: reply.masker,
            detector: ctx.generation.credentials.detector(),
            allowed: slot(&ctx.permit)?.credentials.clone(),
            max: (
                ctx.generation.config.limits.websocket_message,
                ctx.generation.config.limits.websocket_frame,
            ),
            record: None,
        };
        ctx.ending = Some(Ended::Upgrade(
            Response::from_parts(parts, crate::body::empty()),
            Box::new(guard),
        ));
        return Ok(());
    }
    // The answer is read on to its end even where the client stops first (upstream/answer.rs).
    let mut body = crate::body::boxed(crate::upstream::answer::AnswerBody::new(body));
    if let Some(masker) = reply.masker.clone() {
        // Every coding the body went through, read before the hop-by-hop `Transfer-Encoding` is stripped: hyper
        // undoes only `chunked`, and a `gzip, chunked` body arrives gzipped.
        // SECURITY: a body cordon cannot read cannot be masked: refused, not passed on.
        let masked = Codings::of(&parts.headers)
            .and_then(|codings| MaskedBody::decoded(body, masker.clone(), &codings))
            .map_err(|e| ProxyError::UpstreamEncoding(e.to_string()))?;
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
        body = crate::leak::mask_aws_keys(&mut parts.headers, body).map_err(ProxyError::UpstreamEncoding)?;
    }
    if reply.tokens {
        // SECURITY: a minting call let through hands the sandbox no token (leak/mask/key_mask.rs).
        body = crate::leak::mask_tokens(&mut parts.headers, body).map_err(ProxyError::UpstreamEncoding)?;
    }
    if let Some(check) = ctx.judged.answer.take() {
        // SECURITY: an MCP answer cordon cannot read cannot be filtered: refused, not passed on.
        body = check.answered(&mut parts, body).await?;
    }
    ctx.ending = Some(Ended::Respond(Response::from_parts(parts, body), reply.meter));
    Ok(())
}
