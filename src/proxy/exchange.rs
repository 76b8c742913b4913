//! One exchange in flight, the context every phase reads and writes: the effects it runs with (live or dry), the
//! configuration it runs on, its audit record, and how a refusal ends it.

use std::sync::Arc;

use http::Response;

use super::effects::Effects;
use super::input::{Input, Intent, Outcome};
use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::proxy::tunnel::scope::ConnScope;

/// A request, tunnel or query in flight, with its audit record.
pub(super) struct Exchange {
    /// What the phases do to the world: act (live traffic) or note what they would do (`cordon explain`).
    pub(super) fx: Arc<dyn Effects>,
    /// The configuration this exchange started under, and finishes on.
    pub(super) generation: Arc<Generation>,
    pub(super) kind: Kind,
    pub(super) client: ClientAddr,
    /// For a redirected connection: where it was going.
    pub(super) original_dst: Option<OriginalDst>,
    /// The client connection, tied to the sandboxes identified on it.
    pub(super) conn: Option<Arc<ConnScope>>,
    pub(super) audit: audit::Pending,
}

impl Exchange {
    /// An exchange on `generation` with effects `fx`.
    pub(super) fn start(fx: Arc<dyn Effects>, generation: Arc<Generation>, input: &Input) -> Exchange {
        let audit = audit::Pending::start(fx.audit_sink(), input.client.0, input.kind);
        Exchange::new(fx, generation, audit, input)
    }

    fn new(fx: Arc<dyn Effects>, generation: Arc<Generation>, mut audit: audit::Pending, input: &Input) -> Exchange {
        // What is known before anyone is identified goes in the record at once, so even a 407 says where to.
        match &input.intent {
            Intent::Request { req, .. } => audit.method(Some(req.method().as_str())),
            Intent::Tunnel if input.kind == Kind::Connect => audit.method(Some("CONNECT")),
            Intent::Tunnel => audit.method(None),
            Intent::Name { name, qtype, .. } => {
                audit.host(name);
                audit.qtype(qtype);
            }
        }
        let original_dst = input.original_dst.or(input.conn.as_ref().and_then(|c| c.original_dst));
        if let Some(original) = original_dst {
            audit.original_dst(original.0);
        }
        if let Ok(target) = &input.target {
            if !matches!(input.intent, Intent::Name { .. }) {
                audit.target(target);
            }
            if let Intent::Request { req, .. } = &input.intent {
                audit.path(req.uri().path());
            }
        }
        Exchange {
            fx,
            generation,
            kind: input.kind,
            client: input.client,
            original_dst,
            conn: input.conn.clone(),
            audit,
        }
    }

    /// The live state, for the protocol step's pins and sessions (MCP), not yet effects of their own; `None` in
    /// a dry run.
    pub(super) fn state(&self) -> Option<&Arc<crate::state::ProxyState>> {
        self.fx.live()
    }

    /// Note what a phase found (kept by a dry run).
    pub(super) fn note(&self, note: super::notes::Note) {
        self.fx.note(note);
    }

    /// A check's verdict: live, a refusal ends the exchange; in a dry run it is noted and the run goes on,
    /// to show what the later checks say too.
    pub(super) fn enforce(&mut self, verdict: Result<(), ProxyError>) -> Result<(), ProxyError> {
        self.fx.enforce(verdict)
    }

    /// End the exchange with this refusal or failure: its audit record, and the response for the client.
    pub(super) fn refuse(self, err: ProxyError) -> Outcome {
        if !self.fx.ends(&err) {
            return Outcome::Dry;
        }
        let kind = self.kind;
        let resp = self.record_refusal(&err);
        match kind {
            Kind::Dns => Outcome::Answer(crate::dns::Answer::Refused),
            _ => Outcome::Respond(resp),
        }
    }

    /// Fill the record for `err`, emit it (unless counted in an aggregate), and give the response.
    pub(super) fn record_refusal(mut self, err: &ProxyError) -> Response<ProxyBody> {
        let resp = err.response();
        // A DNS query has no HTTP answer to record; the detail says what went wrong instead.
        let (status, detail) = match self.kind {
            Kind::Dns => (None, Some(err.to_string())),
            _ => (Some(resp.status().as_u16()), err.audit_detail()),
        };
        self.audit
            .refused(err.is_refusal(), status, err.reason(), err.side(), detail);
        self.audit.finish();
        resp
    }
}
