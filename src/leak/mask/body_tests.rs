#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::Write;

use http::HeaderMap;
use http_body_util::{BodyExt, StreamBody};
use secrecy::SecretString;

use super::*;

const SECRET: &str = "sk-live-4f9a1c7e2b8d6a03";
const PH: &str = "cordon-ph-00112233445566778899aabbccddeeff";

fn masker() -> Arc<Masker> {
    Arc::new(Masker::new(&[(SecretString::from(SECRET), PH.to_string())]).unwrap())
}

fn body(frames: Vec<Frame<Bytes>>) -> ProxyBody {
    let stream = futures_util::stream::iter(frames.into_iter().map(Ok::<_, BoxError>));
    StreamBody::new(stream).boxed_unsync()
}

async fn collect(b: MaskedBody) -> (Vec<u8>, Option<HeaderMap>) {
    let collected = b.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (collected.to_bytes().to_vec(), trailers)
}

#[tokio::test]
async fn data_split_across_frames_and_trailers_are_masked() {
    let half = SECRET.len() / 2;
    let mut trailers = HeaderMap::new();
    trailers.insert("x-echo", SECRET.parse().unwrap());
    let frames = vec![
        Frame::data(Bytes::from(format!("a{}", &SECRET[..half]))),
        Frame::data(Bytes::from(format!("{}b", &SECRET[half..]))),
        Frame::trailers(trailers),
    ];
    let (data, trailers) = collect(MaskedBody::decoded(body(frames), masker(), &Codings::default()).unwrap()).await;
    assert_eq!(data, format!("a{PH}b").as_bytes());
    assert_eq!(trailers.unwrap()["x-echo"], PH);
}

#[tokio::test]
async fn a_compressed_body_is_decompressed_then_masked() {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(format!("{{\"echo\": \"{SECRET}\"}}").repeat(1000).as_bytes())
        .unwrap();
    let gz = e.finish().unwrap();
    let frames = gz.chunks(100).map(|c| Frame::data(Bytes::copy_from_slice(c))).collect();
    let codings = Codings {
        applied: vec!["gzip"],
        media: None,
    };
    let (data, _) = collect(MaskedBody::decoded(body(frames), masker(), &codings).unwrap()).await;
    let text = String::from_utf8(data).unwrap();
    assert!(!text.contains(SECRET));
    assert_eq!(text.matches(PH).count(), 1000);
}

#[tokio::test]
async fn a_media_type_compressed_body_comes_back_compressed_and_an_empty_one_empty() {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(format!("tar of {SECRET} end").as_bytes()).unwrap();
    let gz = e.finish().unwrap();
    let codings = Codings {
        applied: vec!["gzip"],
        media: Some("gzip"),
    };
    let frames = vec![Frame::data(Bytes::from(gz))];
    let (data, _) = collect(MaskedBody::decoded(body(frames), masker(), &codings).unwrap()).await;
    let mut inside = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&data[..]), &mut inside).unwrap();
    assert_eq!(inside, format!("tar of {PH} end"));
    let (data, _) = collect(MaskedBody::decoded(body(vec![]), masker(), &codings).unwrap()).await;
    assert!(data.is_empty(), "an empty body stays empty");
}

#[test]
fn a_bomb_is_queued_a_bounded_piece_at_a_time() {
    let zeros = vec![0u8; 32 << 20];
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&zeros).unwrap();
    let gz = e.finish().unwrap();
    let codings = Codings {
        applied: vec!["gzip"],
        media: None,
    };
    let decoding = Decoding::new(codings.decoders().unwrap());
    let mut mask = Mask::with(masker(), Some(decoding), None);
    let queued =
        |out: &mut VecDeque<Frame<Bytes>>| -> usize { out.drain(..).map(|f| f.into_data().unwrap().len()).sum() };
    let mut out = VecDeque::new();
    // The whole 32 MiB arrives in one frame of a few KiB: what one step queues stays about the budget.
    mask.data(Bytes::from(gz), &mut out).unwrap();
    let mut total = queued(&mut out);
    let mut largest = total;
    mask.end(&mut out).unwrap();
    while mask.held() || !out.is_empty() {
        let n = queued(&mut out);
        total += n;
        largest = largest.max(n);
        mask.resume(&mut out).unwrap();
    }
    assert_eq!(total, zeros.len());
    assert!(
        largest <= DECODED_PER_STEP + (4200 << 10),
        "one step queued {largest} bytes"
    );
}
