#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;

use http_body_util::{BodyExt, StreamBody};
use secrecy::SecretString;

use super::*;

const PH: &str = "cordon-ph-0123456789abcdef0123456789abcdef";
const SECRET: &str = "sk-real-7c1f09aa34b2";

fn detector() -> Arc<Detector> {
    Arc::new(Detector::new(&[("openai".to_string(), SecretString::from(SECRET))]).unwrap())
}

fn body(chunks: Vec<Vec<u8>>) -> ProxyBody {
    let frames = chunks
        .into_iter()
        .map(|c| Ok::<_, BoxError>(Frame::data(Bytes::from(c))));
    StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync()
}

fn refuse_all() -> Refuses {
    Box::new(|_| true)
}

/// Poll the scanned body to its end: what reached the upstream, and whether it ended in an error.
async fn drain(mut b: ScanBody) -> (Vec<u8>, bool) {
    let mut sent = Vec::new();
    while let Some(frame) = b.frame().await {
        match frame {
            Ok(f) => sent.extend_from_slice(f.data_ref().unwrap()),
            Err(_) => return (sent, true),
        }
    }
    (sent, false)
}

fn big(with: &str, at: usize) -> Vec<u8> {
    let mut data = vec![b'x'; 3 << 20];
    data[at..at + with.len()].copy_from_slice(with.as_bytes());
    data
}

#[tokio::test]
async fn a_clean_body_of_any_size_passes_whole() {
    let data = vec![b'a'; 5 << 20];
    let chunks = data.chunks(16 * 1024).map(<[u8]>::to_vec).collect();
    let (sent, failed) = drain(ScanBody::new(
        body(chunks),
        detector(),
        None,
        refuse_all(),
        ScanVerdict::default(),
    ))
    .await;
    assert!(!failed);
    assert_eq!(sent.len(), data.len());
}

#[tokio::test]
async fn a_placeholder_past_the_first_mebibyte_split_over_chunks_never_leaves() {
    for piece in [1 << 14, 7, PH.len() / 2] {
        let data = big(PH, (2 << 20) + 3);
        let chunks = data.chunks(piece).map(<[u8]>::to_vec).collect();
        let verdict = ScanVerdict::default();
        let (sent, failed) = drain(ScanBody::new(
            body(chunks),
            detector(),
            None,
            refuse_all(),
            verdict.clone(),
        ))
        .await;
        assert!(failed, "pieces of {piece}");
        assert!(
            !sent.windows(10).any(|w| w == b"cordon-ph-"),
            "pieces of {piece}: part of it left"
        );
        assert!(verdict.take().unwrap().plain[0].starts_with("cordon-ph-"));
    }
}

#[tokio::test]
async fn a_secret_in_a_gzip_body_is_found_and_its_compressed_bytes_held() {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&big(SECRET, 1 << 20)).unwrap();
    let gz = e.finish().unwrap();
    let chunks = gz.chunks(512).map(<[u8]>::to_vec).collect();
    let verdict = ScanVerdict::default();
    let decoder = Decoder::for_coding("gzip").unwrap();
    let (sent, failed) = drain(ScanBody::new(
        body(chunks),
        detector(),
        decoder,
        refuse_all(),
        verdict.clone(),
    ))
    .await;
    assert!(failed);
    assert!(sent.len() < gz.len());
    assert_eq!(verdict.take().unwrap().secrets, [["openai"]]);
}

#[tokio::test]
async fn a_chunk_whose_end_begins_nothing_is_sent_at_once() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let frames = tokio_stream_of(rx);
    let mut scanned = ScanBody::new(frames, detector(), None, refuse_all(), ScanVerdict::default());
    tx.send(b"{\"message\": \"hello\"}\n".to_vec()).unwrap();
    let first = scanned.frame().await.unwrap().unwrap();
    assert_eq!(first.data_ref().unwrap().as_ref(), b"{\"message\": \"hello\"}\n");
    // A chunk ending in what could begin a placeholder waits for the next one.
    tx.send(b"next: cord".to_vec()).unwrap();
    tx.send(b"uroy\n".to_vec()).unwrap();
    drop(tx);
    let rest = scanned.collect().await.unwrap().to_bytes();
    assert_eq!(rest.as_ref(), b"next: corduroy\n");
}

fn tokio_stream_of(mut rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) -> ProxyBody {
    let stream = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|v| v.map(|v| Ok::<_, BoxError>(Frame::data(Bytes::from(v)))))
    });
    StreamBody::new(stream).boxed_unsync()
}

#[tokio::test]
async fn findings_the_judge_allows_pass() {
    let data = format!("token={SECRET}").into_bytes();
    let allow: Refuses = Box::new(|f: &Found| !f.plain.is_empty() || !f.disguised.is_empty());
    let (sent, failed) = drain(ScanBody::new(
        body(vec![data.clone()]),
        detector(),
        None,
        allow,
        ScanVerdict::default(),
    ))
    .await;
    assert!(!failed);
    assert_eq!(sent, data);
}
