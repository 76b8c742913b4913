//! What an entry hands the pipeline, and what it gets back.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};

use http::{Request, Response};

use crate::addr::{ClientAddr, OriginalDst};
use crate::audit;
use crate::audit::Kind;
use crate::body::ProxyBody;
use crate::dns::DnsAnswer;
use crate::error::ProxyError;
use crate::error::TunnelEnd;
use crate::generation::Generation;
use crate::identity::{AuthFailure, Sandbox};
use crate::leak::mask::masker::Masker;
use crate::leak::scan::detect::Detector;
use crate::limits::OpenGuard;
use crate::locks::Unpoisoned;
use crate::names::CredentialName;
use crate::names::SandboxId;
use crate::proxy::tunnel::scope::ConnScope;
use crate::target::{Spellings, Target};
use crate::upstream::pool::SandboxClients;
use tokio::net::TcpStream;

/// What an entry read, translated: who, where, what.
pub(crate) struct Input {
    /// The kind of traffic, as the audit record names it.
    pub(crate) kind: Kind,
    /// The client's address.
    pub(crate) client: ClientAddr,
    /// For a connection the kernel redirected to the transparent listener: where it was going.
    pub(crate) original_dst: Option<OriginalDst>,
    /// The client connection, tied to the sandboxes it serves (closed when one loses access).
    pub(crate) conn: Option<Arc<ConnScope>>,
    /// Who the client says it is.
    pub(crate) claim: Claim,
    /// Where it wants to go, as the one target parser read it.
    pub(crate) target: Result<Target, ProxyError>,
    /// What it asks for.
    pub(crate) intent: Intent,
}

/// Who the client says it is.
pub(crate) enum Claim {
    /// What its `Proxy-Authorization` said (`identity::credentials`): an id and a token or signed credential,
    /// nothing (then the source address decides), or a malformed header.
    Credentials(Result<Option<(String, String)>, AuthFailure>),
    /// Nothing: it is known by its source address alone (transparent traffic, DNS).
    Source,
    /// The identity its tunnel was opened with, checked again for each request (revoked, expired, removed).
    Established(Arc<Sandbox>),
    /// The sandbox an operator names for a dry run.
    Named(String),
    /// A person on the preview listener: the link or session cookie in the request says who, and which preview.
    Visitor,
}

/// What the client asks for.
pub(crate) enum Intent {
    /// A tunnel to the target: a CONNECT, or a transparent TLS connection.
    Tunnel,
    /// One HTTP request: plain (`inside` is `None`), or inside an interception.
    Request {
        /// The request as read (its body streams on).
        req: Request<ProxyBody>,
        /// What the interception it arrived on shares, if any.
        inside: Option<Arc<Inside>>,
    },
    /// A person's request on the preview listener, to a sandbox's dev server (the other way: inbound).
    Visit {
        /// The request as read (its body streams on; an upgrade is relayed when the dev server agrees).
        req: Request<ProxyBody>,
    },
    /// The target's host as a DNS name, for the responder.
    Name {
        /// The name as asked (recorded even when it is not a host name).
        name: String,
        /// The record type asked for, for the audit record.
        qtype: String,
        /// Whether to resolve it (A and AAAA); other types are only judged.
        resolve: bool,
    },
}

/// What the entry does next.
pub(crate) enum Outcome {
    /// Give the client this response: the upstream's, or a refusal's.
    Respond(Response<ProxyBody>),
    /// Give the client this 101 (inside an interception) and relay the WebSocket with what the guard holds: its
    /// masking, its scanner, the credentials allowed on it and its audit record.
    Upgrade(Response<ProxyBody>, Box<WebSocketGuard>),
    /// Open this tunnel (after answering 200 to a CONNECT).
    Open(Box<Opened>),
    /// Answer the DNS query so.
    Answer(DnsAnswer),
    /// A dry run ended; what it found is in its notes.
    Dry,
}

impl Outcome {
    /// The response for an entry that can only give one: a tunnel or a DNS answer where a response was
    /// expected means the entry asked for something else than it handles.
    pub(crate) fn into_response(self) -> Response<ProxyBody> {
        match self {
            Outcome::Respond(resp) => resp,
            // An entry that relays no WebSocket gives the 101 alone (its record is written as it is dropped).
            Outcome::Upgrade(resp, _) => resp,
            Outcome::Open(_) | Outcome::Answer(_) | Outcome::Dry => ProxyError::Internal.response(),
        }
    }
}

/// What every request inside one interception shares.
pub(crate) struct Inside {
    /// How clients usually spell the tunnel's target, recognised without parsing.
    pub(super) spellings: Spellings,
    /// The sandbox's upstream clients, looked up once per configuration generation instead of per request.
    pools: Mutex<Option<(Weak<Generation>, Arc<SandboxClients>)>>,
}

impl Inside {
    /// For an interception of a tunnel to `target`.
    pub(crate) fn new(target: &Target) -> Inside {
        Inside {
            spellings: Spellings::of(target, 443),
            pools: Mutex::new(None),
        }
    }

    pub(super) fn pools(&self, generation: &Arc<Generation>, sandbox: &SandboxId) -> Arc<SandboxClients> {
        let mut cached = self.pools.lock().unpoisoned();
        if let Some((seen, pools)) = cached.as_ref()
            && std::ptr::eq(seen.as_ptr(), Arc::as_ptr(generation))
        {
            return pools.clone();
        }
        let pools = generation.upstreams.for_sandbox(sandbox);
        // A Weak keeps the old generation's allocation (not the generation) alive, so its address is never
        // reused while it is compared against.
        *cached = Some((Arc::downgrade(generation), pools.clone()));
        pools
    }
}

/// A tunnel the pipeline allowed, for its entry to run.
pub(crate) struct Opened {
    /// Whose tunnel.
    pub(crate) sandbox: Arc<Sandbox>,
    /// To where.
    pub(crate) target: Target,
    /// The dialled upstream for a `tls: tunnel` rule (bytes pass through); `None` to intercept.
    pub(crate) upstream: Option<TcpStream>,
    /// The tunnel's slot under the sandbox's and user's open caps, held while it is open.
    pub(crate) open: OpenGuard,
    /// The configuration it was allowed under (its timeouts bound it).
    pub(crate) generation: Arc<Generation>,
    /// Its audit record, written when it ends.
    pub(crate) record: TunnelRecord,
}

/// A tunnel's audit record: its bytes are counted into it while it is open, and it is written once, when
/// the tunnel ends (or is dropped).
pub(crate) struct TunnelRecord(pub(super) audit::Pending);

impl TunnelRecord {
    /// The counters of bytes from and to the client.
    pub(crate) fn counters(&self) -> (Arc<AtomicU64>, Arc<AtomicU64>) {
        (self.0.up_counter(), self.0.down_counter())
    }

    /// The tunnel ended: cleanly (`None`), or so.
    pub(crate) fn end(mut self, how: Option<&TunnelEnd>) {
        if let Some(how) = how {
            self.0.ended(how);
        }
        self.0.finish();
    }
}

/// What a WebSocket relay needs, handed to the entry with the 101 ([`Outcome::Upgrade`]): the secrets to mask in
/// frames from the upstream, the scanner for frames from the sandbox, the credentials whose secrets may go out
/// on it, and its audit record (written when the WebSocket closes).
pub(crate) struct WebSocketGuard {
    /// Masks what the upstream sends, if its destination's secrets are masked.
    pub(crate) masker: Option<Arc<Masker>>,
    /// Scans what the sandbox sends.
    pub(crate) detector: Arc<Detector>,
    /// Credentials whose secrets may be sent on this WebSocket.
    pub(crate) allowed: Vec<CredentialName>,
    /// The largest message and frame relayed either way (`limits.websocket_message`, `websocket_frame`).
    pub(crate) max: (usize, usize),
    pub(super) record: Option<TunnelRecord>,
}

impl WebSocketGuard {
    /// The WebSocket's audit record (once).
    pub(crate) fn take_record(&mut self) -> Option<TunnelRecord> {
        self.record.take()
    }
}
