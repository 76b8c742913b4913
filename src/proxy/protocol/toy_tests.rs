//! A third protocol, a toy, through the same step the real ones take (docs/src/development.md, "Adding a
//! protocol"): judged, refused in its own words, asked about, and recorded in its own section of the audit
//! record. Its messages are lines `VERB word`: `say` passes, `ask` waits for a person, `shout` is refused, and
//! anything else is not the toy protocol.

#![expect(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::BodyExt;

use super::contract::{Context, Judged, Protocol};
use crate::addr::ClientAddr;
use crate::approval::HeldRequest;
use crate::audit::{Kind, Record, Sink};
use crate::body::ProxyBody;
use crate::error::ProxyError;
use crate::policy::Rule;
use crate::policy::protocol::{Asked, Judgement, ProtocolRecord, Refused};
use crate::proxy::ctx::Ctx;
use crate::proxy::input::{Claim, Input, Intent, Outcome};
use crate::proxy::live::Live;
use crate::proxy::phase;
use crate::reason::Reason;
use crate::state::ProxyState;
use crate::target::Target;

/// The toy protocol: it governs the rules whose paths are under `/toy/`.
struct Toy;

/// What the toy's section of the audit record says: the verb that decided.
#[derive(serde::Serialize)]
struct ToyRecord {
    verb: String,
}

/// The toy's own words for a refusal: one line, `TOY-NO reason: message`.
fn toy_words(reason: Reason, message: String) -> Refused {
    Refused {
        body: format!("TOY-NO {}: {message}\n", reason.code()).into_bytes(),
        reason,
        message,
        content_type: "text/x-toy",
    }
}

#[async_trait::async_trait]
impl Protocol for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }

    fn explain(&self) -> &'static str {
        "reads each line of a toy request"
    }

    fn governs(&self, rule: &Rule) -> bool {
        rule.path_texts.iter().any(|p| p.starts_with("/toy/"))
    }

    fn invalid(&self) -> Reason {
        Reason::GraphqlInvalid
    }

    async fn judge(&self, cx: &Context<'_>, req: &mut Request<ProxyBody>) -> Result<Judged, ProxyError> {
        let _ = req;
        let Some(body) = cx.body.clone() else {
            panic!("live: the toy is given the body")
        };
        let text = String::from_utf8_lossy(&body);
        let (verb, word) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
        let judgement = match verb {
            "say" => Judgement::Pass,
            "ask" => Judgement::Ask(Asked {
                what: vec![word.to_owned()],
                ids: Vec::new(),
                batch: None,
            }),
            "shout" => Judgement::Refused(toy_words(
                Reason::GraphqlOperationDenied,
                format!("the toy rule does not let {word:?} be shouted"),
            )),
            other => Judgement::Invalid(format!("{other:?} is not a toy verb")),
        };
        Ok(Judged {
            record: Some(ProtocolRecord::new(self.name(), &ToyRecord { verb: verb.into() })),
            judgement,
            answer: None,
        })
    }

    fn refuse(&self, _: &Asked, reason: Reason, message: String) -> Refused {
        toy_words(reason, message)
    }

    fn show(&self, asked: &Asked, _: &Bytes, held: &mut HeldRequest) {
        held.operations = Some(asked.what.clone());
    }
}

/// The audit records written, as JSON.
#[derive(Default)]
struct Kept(Mutex<Vec<serde_json::Value>>);

impl Sink for Kept {
    fn write(&self, record: &Record) {
        self.0.lock().unwrap().push(serde_json::to_value(record).unwrap());
    }
}

/// A live state whose sandbox `sb1` (token `tok1`) may reach `toy.test` under `/toy/**` and `/plain/**`.
async fn state(dir: &std::path::Path, kept: Arc<Kept>) -> Arc<ProxyState> {
    let yaml = format!(
        "ca: {{ dir: {}/cas }}\n\
         sandboxes: [{{ id: sb1, user: alice, token_sha256: {}, policy: p }}]\n\
         policies: {{ p: {{ allow: [{{ host: toy.test, ports: [80], paths: [\"/toy/**\"] }}, \
         {{ host: toy.test, ports: [80], paths: [\"/plain/**\"] }}] }} }}\n",
        dir.display(),
        crate::identity::hash_token("tok1"),
    );
    let config = crate::config::Config::parse("toy.yaml", &yaml).expect("config");
    ProxyState::new(config, kept, Vec::new()).await.expect("state")
}

/// What one request to `path` saying `said` comes to when the step runs the toy: the response of its
/// refusal (if refused) and what the step handed on (if not).
async fn through_step(
    state: &Arc<ProxyState>,
    path: &str,
    said: &'static str,
) -> Result<crate::proxy::handover::Judgements, Response<ProxyBody>> {
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("http://toy.test{path}"))
        .body(crate::body::full(said))
        .unwrap();
    let target = Target::from_authority_form("toy.test:80").unwrap();
    let input = Input {
        kind: Kind::Http,
        client: ClientAddr(SocketAddr::from(([127, 0, 0, 1], 40000))),
        original_dst: None,
        conn: None,
        claim: Claim::Credentials(Ok(Some(("sb1".into(), "tok1".into())))),
        target: Ok(target.clone()),
        intent: Intent::Request { req, inside: None },
    };
    let fx = Live(state.clone());
    let mut ctx = Ctx::start(&fx, state.current(), input);
    phase::identify::run(&mut ctx, &fx).await.expect("identified");
    phase::target::run(&mut ctx, &fx).await.expect("a target");
    phase::decide::run(&mut ctx, &fx).await.expect("allowed");
    match phase::protocol::judge(&mut ctx, &fx, &[&Toy]).await {
        Ok(()) => Ok(std::mem::take(&mut ctx.judged)),
        Err(e) => match phase::record::run(ctx, &fx, Err(e)) {
            Outcome::Respond(resp) => Err(resp),
            _ => panic!("a refusal is answered"),
        },
    }
}

async fn text(resp: Response<ProxyBody>) -> String {
    String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

#[tokio::test]
async fn a_toy_protocol_is_judged_refused_in_its_own_words_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let kept = Arc::new(Kept::default());
    let state = state(dir.path(), kept.clone()).await;

    // Refused by its rule: answered 200 in the toy's words, and the record carries its section.
    let resp = through_step(&state, "/toy/x", "shout hello")
        .await
        .err()
        .expect("refused");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/x-toy");
    assert_eq!(resp.headers()["x-cordon-reason"], "graphql_operation_denied");
    assert_eq!(
        text(resp).await,
        "TOY-NO graphql_operation_denied: the toy rule does not let \"hello\" be shouted\n"
    );
    let record = kept.0.lock().unwrap().pop().expect("a record");
    assert_eq!(record["toy"], serde_json::json!({ "verb": "shout" }), "{record}");
    assert_eq!(
        (&record["decision"], &record["reason"]),
        (&"deny".into(), &"graphql_operation_denied".into())
    );

    // Not the toy protocol: 400 with the protocol's reason.
    let resp = through_step(&state, "/toy/x", "sing hello")
        .await
        .err()
        .expect("refused");
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.headers()["x-cordon-reason"], "graphql_invalid");

    // Passed: nothing asked, nothing refused.
    let judged = through_step(&state, "/toy/x", "say hello")
        .await
        .unwrap_or_else(|_| panic!("passed"));
    assert!(judged.asking.is_none() && judged.answer.is_none());

    // Asked: a person is shown what, and their refusal is answered in the toy's words too.
    let judged = through_step(&state, "/toy/x", "ask deploy")
        .await
        .unwrap_or_else(|_| panic!("asked"));
    let asking = judged.asking.as_ref().expect("asking");
    assert_eq!(asking.asked.what, vec!["deploy".to_owned()]);
    let e = judged.refusal(ProxyError::ApprovalDenied {
        id: "a1".into(),
        by: "bob".into(),
    });
    let ProxyError::Protocol(refused) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        String::from_utf8_lossy(&refused.body),
        "TOY-NO protocol_approval_denied: denied by bob (approval a1)\n"
    );

    // A rule without the toy's paths is not the toy's: nothing judged, so even a shout passes the step.
    let judged = through_step(&state, "/plain/x", "shout hello")
        .await
        .unwrap_or_else(|_| panic!("not judged"));
    assert!(judged.asking.is_none());
}
