#[test]
fn replace_every_occurrence() {
    assert_eq!(
        super::replace(b"a-XY-b-XY", b"XY", b"secret"),
        b"a-secret-b-secret".to_vec()
    );
    assert_eq!(super::replace(b"none", b"XY", b"s"), b"none".to_vec());
    assert_eq!(super::replace(b"abc", b"", b"s"), b"abc".to_vec());
}
