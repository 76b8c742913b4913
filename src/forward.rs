//! Plain HTTP: an absolute-form request forwarded to an `http://` upstream.

use std::net::SocketAddr;
use std::sync::Arc;

use http::header::HOST;
use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, Uri, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::audit::Kind;
use crate::body::{Counted, ProxyBody};
use crate::error::ProxyError;
use crate::exchange::Exchange;
use crate::headers;
use crate::state::ProxyState;
use crate::target::{Target, check_path};

/// Serve one absolute-form request.
pub async fn forward(state: Arc<ProxyState>, client: SocketAddr, req: Request<Incoming>) -> Response<ProxyBody> {
    let mut ex = Exchange::new(state, client, Kind::Http, req.method());
    match exchange(&mut ex, req).await {
        Ok(upstream) => {
            let (mut parts, body) = upstream.into_parts();
            headers::strip_response(&mut parts.headers);
            ex.record().status = Some(parts.status.as_u16());
            let audit = ex.into_audit();
            let down = audit.down_counter();
            // The record is emitted when the body ends (or the client goes away), with the byte counts.
            Response::from_parts(parts, Counted::new(body, down, Some(audit)).boxed_unsync())
        }
        Err(e) => ex.fail(e),
    }
}

async fn exchange(ex: &mut Exchange, req: Request<Incoming>) -> Result<Response<Incoming>, ProxyError> {
    if req.uri().scheme().is_none() {
        return Err(ProxyError::NotProxyRequest);
    }
    // Parsed before identification so that even a 407 is audited with its destination; its errors are
    // reported after identification, so an unauthenticated client learns nothing from them.
    let target = Target::from_absolute_uri(req.uri());
    if let Ok(t) = &target {
        ex.set_target(t);
        ex.record().path = Some(req.uri().path().to_string());
    }
    let sandbox = ex.identify(req.headers())?;
    let target = target?;
    let path = req.uri().path().to_string();
    check_path(&path)?;
    headers::check_request(req.headers())?;
    ex.decide(&sandbox, &target, Some((req.method(), &path)))?;
    let stream = ex.dial(&target).await?;

    let (mut parts, body) = req.into_parts();
    headers::strip_request(&mut parts.headers);
    // RFC 9112 §3.2.2: the absolute-form authority wins over whatever Host said.
    let authority = HeaderValue::from_str(&target.authority(80)).map_err(|_| ProxyError::BadRequest {
        code: "bad_host",
        message: "the host cannot be written as a header".into(),
    })?;
    parts.headers.insert(HOST, authority);
    parts.uri = Uri::from(
        parts
            .uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/")),
    );
    parts.version = Version::HTTP_11;
    let body = Counted::new(body, ex.up_counter(), None::<()>).boxed_unsync();
    let outgoing = Request::from_parts(parts, body);

    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake::<_, ProxyBody>(TokioIo::new(stream))
        .await
        .map_err(|e| ProxyError::Upstream(e.to_string()))?;
    ex.state.tasks.spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("upstream connection ended: {e}");
        }
    });
    let timeout = ex.state.config.timeouts.upstream_headers;
    match tokio::time::timeout(timeout, sender.send_request(outgoing)).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(e)) => Err(ProxyError::Upstream(e.to_string())),
        Err(_) => Err(ProxyError::UpstreamTimeout),
    }
}
