#![expect(clippy::unwrap_used, reason = "tests")]
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

#[tokio::test]
async fn head_comes_first_then_the_stream_and_writes_pass() {
    let (a, mut b) = tokio::io::duplex(64);
    let mut r = Replay::new(b"hello ".to_vec(), a);
    b.write_all(b"world").await.unwrap();
    let mut small = [0u8; 4];
    r.read_exact(&mut small).await.unwrap();
    assert_eq!(&small, b"hell");
    let mut rest = [0u8; 7];
    r.read_exact(&mut rest).await.unwrap();
    assert_eq!(&rest, b"o world");
    r.write_all(b"back").await.unwrap();
    let mut got = [0u8; 4];
    b.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"back");
}
