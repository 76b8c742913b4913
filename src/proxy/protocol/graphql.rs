//! GraphQL as a [`Protocol`], for a request under a rule with a `graphql:` section: the request read whole
//! (`crate::graphql::request`), every operation of its documents judged (`crate::graphql::judge`), refused with a
//! GraphQL error, or 400 when cordon cannot read it as the server would. Its answers pass as they come.

use bytes::Bytes;
use http::Request;
use http::header::{CONTENT_TYPE, UPGRADE};

use crate::approval::HeldRequest;
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::graphql::judge::judge;
use crate::policy::Rule;
use crate::policy::protocol::{Asked, ProtocolRecord, Refused};
use crate::proxy::protocol::contract::{Context, Judged, Protocol};
use crate::proxy::protocol::read::coded;
use crate::reason::Reason;

/// GraphQL over HTTP.
pub(super) struct Graphql;

/// Its section of the audit record.
const NAME: &str = "graphql";

fn invalid(message: String) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::GraphqlInvalid,
        message,
    }
}

#[async_trait::async_trait]
impl Protocol for Graphql {
    fn name(&self) -> &'static str {
        NAME
    }

    fn explain(&self) -> &'static str {
        "reads the GraphQL request of a GET or POST: every operation of its document is allowed, asked or refused \
         by the fields it selects at its root (the worst decides), and a persisted query by the document cordon saw \
         with its hash"
    }

    fn governs(&self, rule: &Rule) -> bool {
        rule.graphql.is_some()
    }

    fn invalid(&self) -> Reason {
        Reason::GraphqlInvalid
    }

    async fn judge(&self, cx: &Context<'_>, req: &mut Request<ProxyBody>) -> Result<Judged, ProxyError> {
        // A dry run has no body: the phase's note says what would be judged. (The body was read before anything
        // is refused, so that the refusal is what the client reads.)
        let (Some(rules), Some(data)) = (cx.rule.graphql.clone(), cx.body.clone()) else {
            return Ok(Judged::nothing());
        };
        // SECURITY: a WebSocket's frames (graphql-ws) would pass unread.
        if req.headers().contains_key(UPGRADE) {
            return Err(invalid(
                "a GraphQL endpoint's rule judges GET and POST; subscriptions over a WebSocket cannot be judged \
                 (use server-sent events)"
                    .into(),
            ));
        }
        // SECURITY: a body cordon cannot read as the server will is not judged, and so not sent.
        if let Some(why) = coded(req, "a GraphQL request") {
            return Err(invalid(why));
        }
        let content_type = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let (params, batch) =
            crate::graphql::request::read(req.method(), req.uri().query(), content_type, &data).map_err(invalid)?;
        let documents = cx
            .memory
            .graphql_documents
            .at(&cx.target.host.to_string(), cx.target.port, req.uri().path());
        let (seen, judgement) = judge(&rules, &documents, params, batch);
        Ok(Judged {
            record: Some(ProtocolRecord::new(NAME, &seen)),
            judgement,
            answer: None,
        })
    }

    fn refuse(&self, asked: &Asked, reason: Reason, message: String) -> Refused {
        crate::graphql::judge::refused(reason, message, asked.batch)
    }

    fn show(&self, asked: &Asked, _: &Bytes, held: &mut HeldRequest) {
        held.operations = Some(asked.what.clone());
    }
}
