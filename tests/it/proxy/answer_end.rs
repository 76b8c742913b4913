//! An upstream answering over HTTP/2 with a Content-Length, its END_STREAM a moment after the last byte, as
//! nginx sends it. cordon's HTTP/1.1 side stops reading once the length is written; cordon reads the answer on
//! to its end rather than resetting the stream. (Each reset stream's late frames counted against h2's limit of
//! local resets per connection, which then ended the pooled connection and every request on it: 1 to 4% of
//! streamed answers were 502 under load.)

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::net::TcpListener;

use crate::rigs::proxy::{config, proxy};
use crate::rigs::tls::{TlsRig, serve_by_alpn, test_ca};
use crate::rigs::upstreams::Upstream;

/// "hello", then the end 200 ms later; counts answers that ended and those cut before their end.
struct LateEnd {
    sent: bool,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    done: bool,
    ended: Arc<AtomicUsize>,
    cut: Arc<AtomicUsize>,
}

impl Body for LateEnd {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.sent {
            self.sent = true;
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"hello")))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(200))));
        if wait.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.done = true;
        self.ended.fetch_add(1, Ordering::SeqCst);
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for LateEnd {
    fn drop(&mut self) {
        if !self.done {
            self.cut.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_whose_end_comes_late_is_read_to_its_end_not_reset() {
    let upstream_ca = test_ca("late end CA");
    let acceptor = tokio_rustls::TlsAcceptor::from(upstream_ca.server_config(&["allowed.test"]));
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (ended, cut, h2) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (e, c, h) = (ended.clone(), cut.clone(), h2.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, e, c, h) = (acceptor.clone(), e.clone(), c.clone(), h.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                    h.fetch_add(1, Ordering::SeqCst);
                }
                let svc = hyper::service::service_fn(move |_req| {
                    let body = LateEnd {
                        sent: false,
                        wait: None,
                        done: false,
                        ended: e.clone(),
                        cut: c.clone(),
                    };
                    async move {
                        Ok::<_, Infallible>(
                            hyper::Response::builder()
                                .header("content-length", "5")
                                .body(body)
                                .unwrap(),
                        )
                    }
                });
                serve_by_alpn(tls, svc).await;
            });
        }
    });
    let ca_dir = tempfile::tempdir().unwrap();
    let roots = ca_dir.path().join("upstream-ca.pem");
    std::fs::write(&roots, &upstream_ca.pem).unwrap();
    let top = format!(
        "ca: {{ dir: {} }}\nupstream: {{ extra_roots: [{}] }}\n",
        ca_dir.path().join("cas").display(),
        roots.display()
    );
    let yaml = config(addr.port(), 1, &top);
    let rig = TlsRig {
        proxy: proxy(&yaml).await,
        yaml,
        up: Upstream {
            addr,
            accepts: Arc::default(),
            seen: Arc::new(Mutex::new(Vec::new())),
        },
        ca_dir,
        upstream_ca,
    };
    let ca = rig.sandbox_ca_file("sb1");
    for _ in 0..10 {
        let out = rig
            .curl("sb1", "tok1", &ca)
            .args(["-sS", "--max-time", "10", "--http1.1"])
            .arg(rig.url("allowed.test", "/late"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hello", "{out:?}");
    }
    assert!(h2.load(Ordering::SeqCst) >= 1, "cordon spoke HTTP/2 to the upstream");
    crate::rigs::wait::until_async("every answer read to its end", Duration::from_secs(10), || {
        ended.load(Ordering::SeqCst) + cut.load(Ordering::SeqCst) == 10
    })
    .await;
    assert_eq!(
        (ended.load(Ordering::SeqCst), cut.load(Ordering::SeqCst)),
        (10, 0),
        "answers cordon reset before their end"
    );
}
