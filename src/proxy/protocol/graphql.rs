//! Step 6's GraphQL part, for a request under a rule with a `graphql:` section (before approval and credentials):
//! the request read whole (`crate::graphql::request`), every operation of its documents judged
//! (`crate::graphql::judge`), and the verdict acted on: sent, held for a person, refused with a GraphQL error, or
//! refused 400 when cordon cannot read it as the server would.

use http::Request;
use http::header::{CONTENT_TYPE, UPGRADE};

use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::graphql::judge::{Refused, Verdict, judge};
use crate::proxy::checks::Permit;
use crate::proxy::exchange::Exchange;
use crate::proxy::notes::Note;
use crate::reason::Reason;
use crate::target::Target;

/// What the GraphQL step hands on.
#[derive(Default)]
pub(crate) struct GraphqlStep {
    /// The operations a person must allow first (`mutation AddComment: addComment`).
    pub(crate) ask: Option<Vec<String>>,
    /// How many requests a batch had: a person's refusal is answered to each.
    batch: Option<usize>,
}

impl GraphqlStep {
    /// A person's refusal of a GraphQL operation as the client understands it: a GraphQL error.
    pub(crate) fn answer(&self, e: ProxyError) -> ProxyError {
        match e {
            e @ (ProxyError::ApprovalDenied { .. } | ProxyError::ApprovalTimedOut(..)) if self.ask.is_some() => {
                ProxyError::Graphql(Refused {
                    reason: e.reason(),
                    message: e.to_string(),
                    batch: self.batch,
                })
            }
            e => e,
        }
    }
}

fn invalid(message: String) -> ProxyError {
    ProxyError::BadRequest {
        code: Reason::GraphqlInvalid,
        message,
    }
}

impl Exchange {
    /// Judge `req` by its rule's `graphql:` section, if it has one.
    pub(crate) async fn graphql(
        &mut self,
        target: &Target,
        decision: &Permit,
        req: &mut Request<ProxyBody>,
    ) -> Result<GraphqlStep, ProxyError> {
        let Some((index, rules)) = decision
            .rule
            .and_then(|i| Some((i, decision.policy.as_ref()?.rules.get(i)?.graphql.clone()?)))
        else {
            return Ok(GraphqlStep::default());
        };
        let Some(state) = self.state().cloned() else {
            // A dry run has no body: its note says what would be judged.
            self.note(Note::Graphql(index));
            return Ok(GraphqlStep::default());
        };
        // Read before anything is refused, so that the refusal is what the client reads.
        let data = crate::proxy::request::read_whole(req).await?;
        // SECURITY: a WebSocket's frames (graphql-ws) would pass unread.
        if req.headers().contains_key(UPGRADE) {
            return Err(invalid(
                "a GraphQL endpoint's rule judges GET and POST; subscriptions over a WebSocket cannot be judged \
                 (use server-sent events)"
                    .into(),
            ));
        }
        // SECURITY: a body cordon cannot read as the server will is not judged, and so not sent.
        if let Some(why) = crate::proxy::request::coded(req, "a GraphQL request") {
            return Err(invalid(why));
        }
        let content_type = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let (params, batch) =
            crate::graphql::request::read(req.method(), req.uri().query(), content_type, &data).map_err(invalid)?;
        let count = batch.then_some(params.len());
        let documents = state
            .graphql_documents
            .at(&target.host.to_string(), target.port, req.uri().path());
        let (seen, verdict) = judge(&rules, &documents, params, batch);
        self.audit.graphql(seen);
        match verdict {
            Verdict::Pass => Ok(GraphqlStep::default()),
            Verdict::Ask(operations) => Ok(GraphqlStep {
                ask: Some(operations),
                batch: count,
            }),
            Verdict::Invalid(why) => Err(invalid(why)),
            Verdict::Refused(refused) => Err(ProxyError::Graphql(refused)),
        }
    }
}
