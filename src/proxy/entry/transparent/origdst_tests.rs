#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

#[tokio::test]
async fn without_a_redirect_the_destination_is_the_listener() {
    let listener = bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let addr = listener.local_addr().unwrap();
    let client = TcpStream::connect(addr).await.unwrap();
    let (server, _) = listener.accept().await.unwrap();
    assert_eq!(original_dst(&server).unwrap(), addr);
    drop(client);
}

#[test]
fn mapped_addresses_are_written_as_ipv4() {
    let mapped: SocketAddr = "[::ffff:10.1.2.3]:443".parse().unwrap();
    assert_eq!(unmap(mapped), "10.1.2.3:443".parse::<SocketAddr>().unwrap());
    let v6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
    assert_eq!(unmap(v6), v6);
}
