use super::*;

#[test]
fn a_preview_name_gives_its_port_and_sandbox() {
    let d = "preview.example.com";
    assert_eq!(
        parse("3000-agent-1.preview.example.com", d),
        Some((3000, "agent-1".into()))
    );
    assert_eq!(
        parse("3000-agent-1.preview.example.com:8443", d),
        Some((3000, "agent-1".into()))
    );
    assert_eq!(parse("8888-SB1.Preview.Example.Com.", d), Some((8888, "sb1".into())));
}

#[test]
fn other_names_are_not_previews() {
    let d = "preview.example.com";
    for host in [
        "preview.example.com",
        "3000.preview.example.com",
        "3000-.preview.example.com",
        "x-sb1.preview.example.com",
        "03000-sb1.preview.example.com",
        "70000-sb1.preview.example.com",
        "0-sb1.preview.example.com",
        "3000-sb1.other.example.com",
        "3000-sb1.evilpreview.example.com",
        "a.3000-sb1.preview.example.com",
        "3000-sb_1.preview.example.com",
        "3000-sb1-.preview.example.com",
        "[::1]:3000",
    ] {
        assert_eq!(parse(host, d), None, "{host}");
    }
}
