//! The request's body read whole before it is judged (the protocol step) or shown to a person (approval), and
//! why one in a content coding cannot be judged.

use http::Request;

use crate::body::ProxyBody;
use crate::body::read::Read;
use crate::error::ProxyError;
use crate::reason::Reason;

/// Why a body in a content coding cannot be judged (`what`: "an MCP message", "a GraphQL request"), if it is in one:
/// cordon reads what it judges as the server will, so a coded body is refused, not passed unjudged.
pub(crate) fn coded(req: &Request<ProxyBody>, what: &str) -> Option<String> {
    let coding = req.headers().get(http::header::CONTENT_ENCODING)?;
    (!coding.as_bytes().eq_ignore_ascii_case(b"identity")).then(|| {
        format!(
            "{what} in a content coding ({}) cannot be judged; send it uncoded",
            String::from_utf8_lossy(coding.as_bytes())
        )
    })
}

/// The request's body, read whole (bounded, as a scanned body is) and put back as it was, trailers and all: for
/// the steps that must judge or show all of it before it is sent.
pub(crate) async fn read_whole(req: &mut Request<ProxyBody>) -> Result<bytes::Bytes, ProxyError> {
    let limit = crate::body::read::MAX_SCANNED_BODY;
    let body = std::mem::replace(req.body_mut(), crate::body::empty());
    match crate::body::read::read(body, limit).await {
        Ok(Read::Whole(data, trailers)) => {
            *req.body_mut() = crate::body::read::whole(data.clone(), trailers);
            Ok(data)
        }
        Ok(Read::TooLarge) => Err(ProxyError::PayloadTooLarge { limit }),
        Err(e) => Err(ProxyError::BadRequest {
            code: Reason::BodyUnreadable,
            message: format!("the request body could not be read: {e}"),
        }),
    }
}
