//! A CONNECT on the explicit proxy port: the pipeline decides, checks the destination and holds the
//! connection caps; the client hears 200 only then, and the tunnel runs on the upgraded connection.

use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::addr::ClientAddr;
use crate::audit::Kind;
use crate::body::ProxyBody;
use crate::error::{self, ProxyError};
use crate::identity;
use crate::proxy::tunnel::run as tunnel;
use crate::proxy::tunnel::scope::ConnScope;
use crate::proxy::{self, Claim, Input, Intent, Outcome};
use crate::state::ProxyState;
use crate::target::Target;

/// Handle one CONNECT request.
pub(crate) async fn connect(
    state: Arc<ProxyState>,
    scope: Arc<ConnScope>,
    client: ClientAddr,
    mut req: Request<Incoming>,
) -> Response<ProxyBody> {
    let input = Input {
        kind: Kind::Connect,
        client,
        original_dst: None,
        conn: Some(scope),
        claim: Claim::Credentials(identity::credentials(req.headers())),
        target: Target::from_connect_uri(req.uri()).map_err(ProxyError::from),
        intent: Intent::Tunnel,
    };
    match proxy::run(&state, input).await {
        Outcome::Open(opened) => {
            let on_upgrade = hyper::upgrade::on(&mut req);
            let io = async move { on_upgrade.await.map(TokioIo::new).map_err(|e| e.to_string()) };
            tunnel::launch(state, client, *opened, io);
            error::connect_established()
        }
        refused => refused.into_response(),
    }
}
