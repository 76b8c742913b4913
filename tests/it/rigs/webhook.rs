//! An approval webhook receiver: every POST whose signature verifies with the test's secret is handed over
//! as (event, JSON).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tokio::sync::mpsc;

pub(crate) const SECRET: &str = "webhook-secret-for-the-test";

/// A webhook receiver: every POST whose signature verifies is handed over as (event, JSON).
pub(crate) async fn receiver() -> (u16, mpsc::UnboundedReceiver<(String, Value)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let h = |n: &str| {
                            req.headers()
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .to_string()
                        };
                        let (event, ts, sig) = (h("x-cordon-event"), h("x-cordon-timestamp"), h("x-cordon-signature"));
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let status = if cordon::webhook::verify(SECRET.as_bytes(), &ts, &body, &sig) {
                            let _ = tx.send((event, serde_json::from_slice(&body).unwrap()));
                            200
                        } else {
                            401
                        };
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::new()))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (port, rx)
}
