//! One exchange in flight: the state and configuration it runs on, its audit record, and how a refusal ends it.

use std::sync::Arc;

use http::Response;

use super::dry::{DryRefusal, Note, Notes};
use super::input::{Input, Intent, Outcome};
use crate::addr::{ClientAddr, OriginalDst};
use crate::audit::{self, Kind};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::generation::Generation;
use crate::proxy::tunnel::scope::ConnScope;
use crate::state::ProxyState;

/// Live traffic, or a dry run.
pub(super) enum Env {
    /// Traffic: everything counts and happens.
    Live(Arc<ProxyState>),
    /// `cordon explain`: nothing is counted, held, attached or sent; what each step finds is noted.
    Dry(Notes),
}

/// A request, tunnel or query in flight, with its audit record.
pub(super) struct Exchange {
    pub(super) env: Env,
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

/// Where a dry run's records go: nowhere.
struct Discard;

impl audit::Sink for Discard {
    fn write(&self, _: &audit::Record) {}
}

impl Exchange {
    /// An exchange of live traffic.
    pub(super) fn live(state: Arc<ProxyState>, input: &Input) -> Exchange {
        let generation = state.current();
        let audit = audit::Pending::start(state.audit.clone(), input.client.0, input.kind);
        Exchange::new(Env::Live(state), generation, audit, input)
    }

    /// An exchange that only looks.
    pub(super) fn dry(generation: Arc<Generation>, input: &Input, notes: Notes) -> Exchange {
        let audit = audit::Pending::start(Arc::new(Discard), input.client.0, input.kind);
        Exchange::new(Env::Dry(notes), generation, audit, input)
    }

    fn new(env: Env, generation: Arc<Generation>, mut audit: audit::Pending, input: &Input) -> Exchange {
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
            env,
            generation,
            kind: input.kind,
            client: input.client,
            original_dst,
            conn: input.conn.clone(),
            audit,
        }
    }

    /// The live state, or `None` in a dry run.
    pub(super) fn state(&self) -> Option<&Arc<ProxyState>> {
        match &self.env {
            Env::Live(state) => Some(state),
            Env::Dry(_) => None,
        }
    }

    /// Whether a step of this dry run so far refuses the request (`false` live: a refusal has ended it).
    pub(super) fn dry_refused(&self) -> bool {
        matches!(&self.env, Env::Dry(notes) if notes.refused())
    }

    /// Note what a step found (dry runs only).
    pub(super) fn note(&self, note: Note) {
        if let Env::Dry(notes) = &self.env {
            notes.push(note);
        }
    }

    /// A check's verdict: live, a refusal ends the exchange; in a dry run it is noted and the run goes on,
    /// to show what the later checks say too.
    pub(super) fn enforce(&mut self, verdict: Result<(), ProxyError>) -> Result<(), ProxyError> {
        match (&self.env, verdict) {
            (Env::Dry(notes), Err(e)) => {
                notes.push(Note::Refused(DryRefusal::of(&e)));
                Ok(())
            }
            (_, verdict) => verdict,
        }
    }

    /// End the exchange with this refusal or failure: its audit record, and the response for the client.
    pub(super) fn refuse(self, err: ProxyError) -> Outcome {
        if let Env::Dry(notes) = &self.env {
            notes.push(Note::Refused(DryRefusal::of(&err)));
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
