#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[test]
fn first_bytes_tell_tls_http_and_the_rest() {
    assert_eq!(classify(&[0x16, 0x03, 0x01]), Some(Sniffed::Tls));
    assert_eq!(classify(b"GET / HTTP/1.1"), Some(Sniffed::Http));
    assert_eq!(classify(b"M-SEARCH * HTTP/1.1"), Some(Sniffed::Http));
    assert_eq!(classify(b"GE"), None);
    assert_eq!(classify(b""), None);
    assert!(matches!(classify(b"SSH-2.0-OpenSSH"), Some(Sniffed::Other(_))));
    assert!(matches!(classify(b"get / HTTP/1.1"), Some(Sniffed::Other(_))));
    assert!(matches!(classify(b" GET"), Some(Sniffed::Other(_))));
    assert!(matches!(classify(&[b'A'; 30]), Some(Sniffed::Other(_))));
}

#[tokio::test]
async fn sniffing_waits_for_a_split_request_line_and_gives_up_on_silence() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut client = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    client.write_all(b"PO").await.unwrap();
    let sniffing = tokio::spawn(async move { sniff(&server, Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(30)).await;
    client.write_all(b"ST / HTTP/1.1\r\n").await.unwrap();
    assert_eq!(sniffing.await.unwrap(), Sniffed::Http);

    let _silent = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    assert!(matches!(
        sniff(&server, Duration::from_millis(50)).await,
        Sniffed::Other(_)
    ));
}
