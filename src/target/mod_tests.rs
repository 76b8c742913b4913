//! Unit tests for `target`: every accepting and rejecting rule.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::*;

fn name(n: &str) -> Host {
    Host::Name(n.to_owned())
}

fn target(host: Host, port: u16) -> Target {
    Target { host, port }
}

/// CONNECT authority-form, with the error reduced to its code.
fn connect(s: &str) -> Result<Target, &'static str> {
    Target::from_authority_form(s).map_err(|e| e.code())
}

/// Absolute-form; `uri_parse` means `http::Uri` itself refused the text.
fn absolute(s: &str) -> Result<Target, &'static str> {
    let uri: http::Uri = s.parse().map_err(|_| "uri_parse")?;
    Target::from_absolute_uri(&uri).map_err(|e| e.code())
}

/// Host header value with default port 443.
fn host_value(v: &[u8]) -> Result<Target, &'static str> {
    Target::from_host_value(v, 443).map_err(|e| e.code())
}

fn path(p: &str) -> Result<(), &'static str> {
    check_path(p).map_err(|e| e.code())
}

const DB8_1: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

// ---- host normalisation ----

#[test]
fn lowercases_and_strips_one_trailing_dot() {
    let want = Ok(target(name("example.com"), 443));
    assert_eq!(connect("example.com:443"), want);
    assert_eq!(connect("EXAMPLE.com.:443"), want);
    assert_eq!(connect("Example.COM:443"), want);
    assert_eq!(absolute("HTTP://Example.COM./x"), Ok(target(name("example.com"), 80)));
    assert_eq!(host_value(b"EXAMPLE.com."), want);
}

#[test]
fn rejects_empty_labels() {
    assert_eq!(connect("example.com..:443"), Err("empty_label"));
    assert_eq!(connect("a..b:443"), Err("empty_label"));
    assert_eq!(connect(".example.com:443"), Err("empty_label"));
    assert_eq!(host_value(b"example.com.."), Err("empty_label"));
}

#[test]
fn rejects_empty_host() {
    assert_eq!(connect(""), Err("empty_host"));
    assert_eq!(connect(":443"), Err("empty_host"));
    assert_eq!(connect(".:443"), Err("empty_host"));
    assert_eq!(host_value(b""), Err("empty_host"));
    assert_eq!(host_value(b"."), Err("empty_host"));
}

#[test]
fn label_length_limits() {
    let ok = "a".repeat(63);
    assert_eq!(
        connect(&format!("{ok}.com:443")),
        Ok(target(name(&format!("{ok}.com")), 443))
    );
    let long = "a".repeat(64);
    assert_eq!(connect(&format!("{long}.com:443")), Err("label_too_long"));
}

#[test]
fn name_length_limits() {
    // 63*3 + 61 + 3 dots = 253 characters.
    let max = format!("{0}.{0}.{0}.{1}", "a".repeat(63), "b".repeat(61));
    assert_eq!(max.len(), 253);
    assert_eq!(connect(&format!("{max}:443")), Ok(target(name(&max), 443)));
    // The trailing dot does not count towards the limit.
    assert_eq!(connect(&format!("{max}.:443")), Ok(target(name(&max), 443)));
    let over = format!("{max}b");
    assert_eq!(connect(&format!("{over}:443")), Err("host_too_long"));
}

#[test]
fn accepts_label_characters() {
    assert_eq!(
        connect("my_host-1.x-y.example:8443"),
        Ok(target(name("my_host-1.x-y.example"), 8443))
    );
    assert_eq!(connect("localhost:1"), Ok(target(name("localhost"), 1)));
}

#[test]
fn rejects_other_host_characters() {
    for bad in [
        "*.example.com:443",
        "exa%41mple.com:443",
        "exa%mple.com:443",
        "a b:443",
        "a\\b:443",
        "a[b]:443",
        "a/b:443",
        "a!b:443",
        "a$b:443",
        "a'b:443",
        "a,b:443",
        "a=b:443",
    ] {
        assert_eq!(connect(bad), Err("bad_host"), "{bad}");
    }
    assert_eq!(absolute("http://*.example.com/"), Err("bad_host"));
    assert_eq!(host_value(b"a b"), Err("bad_host"));
}

#[test]
fn rejects_non_ascii_anywhere() {
    // SECURITY: homograph / IDNA mapping differences.
    assert_eq!(connect("exämple.com:443"), Err("non_ascii_host"));
    assert_eq!(connect("ｅxample.com:443"), Err("non_ascii_host"));
    assert_eq!(connect("example.com:４４３"), Err("non_ascii_host"));
    assert_eq!(host_value(b"\xffexample.com"), Err("non_ascii_host"));
    assert_eq!(host_value("bücher.example".as_bytes()), Err("non_ascii_host"));
}

#[test]
fn accepts_punycode() {
    assert_eq!(
        connect("XN--bcher-kva.example:443"),
        Ok(target(name("xn--bcher-kva.example"), 443))
    );
}

// ---- IPv4 ----

#[test]
fn parses_strict_ipv4() {
    assert_eq!(
        connect("1.2.3.4:443"),
        Ok(target(Host::V4(Ipv4Addr::new(1, 2, 3, 4)), 443))
    );
    // A trailing dot still names the same address.
    assert_eq!(
        connect("169.254.169.254.:80"),
        Ok(target(Host::V4(Ipv4Addr::new(169, 254, 169, 254)), 80))
    );
    assert_eq!(
        absolute("http://127.0.0.1:8080/"),
        Ok(target(Host::V4(Ipv4Addr::LOCALHOST), 8080))
    );
}

#[test]
fn odd_ipv4_forms_are_names() {
    // By design: these go to the system resolver and the address guard checks
    // whatever it returns, so they are names here, not errors.
    for odd in [
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "012.0.0.1",
        "1.2.3",
        "256.1.1.1",
    ] {
        assert_eq!(connect(&format!("{odd}:80")), Ok(target(name(odd), 80)), "{odd}");
    }
    assert_eq!(connect("0XA9FEA9FE:80"), Ok(target(name("0xa9fea9fe"), 80)));
}

// ---- IPv6 ----

#[test]
fn parses_bracketed_ipv6() {
    assert_eq!(connect("[::1]:443"), Ok(target(Host::V6(Ipv6Addr::LOCALHOST), 443)));
    assert_eq!(host_value(b"[2001:db8::1]"), Ok(target(Host::V6(DB8_1), 443)));
    assert_eq!(
        absolute("http://[2001:DB8:0:0::1]:8080/"),
        Ok(target(Host::V6(DB8_1), 8080))
    );
    assert_eq!(absolute("http://[::1]/"), Ok(target(Host::V6(Ipv6Addr::LOCALHOST), 80)));
}

#[test]
fn ipv6_output_is_canonical() {
    let t = connect("[2001:0DB8:0000::0001]:443");
    assert_eq!(t.map(|t| t.to_string()), Ok("[2001:db8::1]:443".to_owned()));
    let mapped = connect("[::FFFF:1.2.3.4]:443");
    assert_eq!(mapped.map(|t| t.to_string()), Ok("[::ffff:1.2.3.4]:443".to_owned()));
}

#[test]
fn rejects_zone_id() {
    // SECURITY: a zone id steers link-local traffic to an interface.
    assert_eq!(connect("[fe80::1%25eth0]:443"), Err("zone_id"));
    assert_eq!(connect("[fe80::1%eth0]:443"), Err("zone_id"));
    assert_eq!(absolute("http://[fe80::1%25eth0]:443/"), Err("zone_id"));
    assert_eq!(host_value(b"[fe80::1%25eth0]"), Err("zone_id"));
}

#[test]
fn rejects_unbracketed_ipv6() {
    // SECURITY: is 443 the port or the last group of the address?
    assert_eq!(connect("2001:db8::1:443"), Err("unbracketed_ipv6"));
    assert_eq!(connect("::1"), Err("unbracketed_ipv6"));
    assert_eq!(host_value(b"::1"), Err("unbracketed_ipv6"));
    assert_eq!(host_value(b"fe80::1%eth0"), Err("unbracketed_ipv6"));
}

#[test]
fn rejects_bad_ipv6_literals() {
    assert_eq!(connect("[1.2.3.4]:443"), Err("bad_ipv6"));
    assert_eq!(connect("[]:443"), Err("bad_ipv6"));
    assert_eq!(connect("[v1.x]:443"), Err("bad_ipv6"));
    assert_eq!(connect("[::g]:443"), Err("bad_ipv6"));
}

#[test]
fn rejects_garbage_around_brackets() {
    // SECURITY: `Authority` accepts `[::1]x` and ignores the trailing `x`.
    assert_eq!(connect("[::1]x"), Err("bad_host"));
    assert_eq!(connect("[::1]x:443"), Err("bad_host"));
    assert_eq!(connect("[::1:443"), Err("bad_host"));
    assert_eq!(connect("[[::1]]:443"), Err("bad_host"));
}

// ---- ports ----

#[test]
fn accepts_plain_ports() {
    assert_eq!(connect("h:1"), Ok(target(name("h"), 1)));
    assert_eq!(connect("h:443"), Ok(target(name("h"), 443)));
    assert_eq!(connect("h:65535"), Ok(target(name("h"), 65535)));
    assert_eq!(host_value(b"h:8443"), Ok(target(name("h"), 8443)));
}

#[test]
fn rejects_odd_ports() {
    // SECURITY: forms other parsers read as a different port.
    for bad in [
        "h:+443",
        "h:0443",
        "h:00",
        "h:0",
        "h:65536",
        "h:65616",
        "h:99999999999",
        "h:",
        "h:-1",
        "h:44a",
        "h:0x1bb",
        "[::1]:",
        "[::1]:0443",
    ] {
        assert_eq!(connect(bad), Err("bad_port"), "{bad}");
    }
    assert_eq!(host_value(b"h:"), Err("bad_port"));
    assert_eq!(host_value(b"h:+443"), Err("bad_port"));
}

#[test]
fn two_ports_is_bad_host() {
    // `Authority` refuses the text outright, so there is no port to judge.
    assert_eq!(connect("h:80:80"), Err("bad_host"));
}

#[test]
fn connect_requires_port() {
    assert_eq!(connect("example.com"), Err("missing_port"));
    assert_eq!(connect("[::1]"), Err("missing_port"));
    assert_eq!(connect("1.2.3.4"), Err("missing_port"));
}

#[test]
fn host_value_uses_default_port() {
    assert_eq!(host_value(b"example.com"), Ok(target(name("example.com"), 443)));
    assert_eq!(
        Target::from_host_value(b"example.com", 80),
        Ok(target(name("example.com"), 80))
    );
    assert_eq!(host_value(b"[::1]"), Ok(target(Host::V6(Ipv6Addr::LOCALHOST), 443)));
}

// ---- userinfo ----

#[test]
fn rejects_userinfo_everywhere() {
    // SECURITY: `allowed.com@evil.com` — which side is the host?
    for bad in [
        "user@host:443",
        "user:pw@host:443",
        "allowed.com@evil.com:443",
        "allowed.com:443@evil.com:443",
        "@host:443",
        "a@b@c:443",
    ] {
        assert_eq!(connect(bad), Err("userinfo"), "{bad}");
    }
    assert_eq!(absolute("http://user@host/"), Err("userinfo"));
    assert_eq!(absolute("http://user:pw@host:80/"), Err("userinfo"));
    assert_eq!(absolute("http://@host/"), Err("userinfo"));
    assert_eq!(host_value(b"user@host"), Err("userinfo"));
}

// ---- absolute-form ----

#[test]
fn absolute_form_accepts_http() {
    assert_eq!(absolute("http://example.com/x?y"), Ok(target(name("example.com"), 80)));
    assert_eq!(absolute("http://example.com"), Ok(target(name("example.com"), 80)));
    assert_eq!(
        absolute("hTTp://example.com:8080/"),
        Ok(target(name("example.com"), 8080))
    );
    assert_eq!(absolute("http://example.com:80/"), Ok(target(name("example.com"), 80)));
}

#[test]
fn absolute_form_revalidates_port() {
    // SECURITY: `port_u16()` says 443 for `0443` and `+443`, and *no port*
    // (so: 80) for `65536`; the raw authority text is what must be judged.
    let uri: http::Uri = "http://host:65536/".parse().unwrap_or_default();
    assert_eq!(uri.port_u16(), None);
    assert_eq!(absolute("http://host:65536/"), Err("bad_port"));
    assert_eq!(absolute("http://host:65616/"), Err("bad_port"));
    assert_eq!(absolute("http://host:0443/"), Err("bad_port"));
    assert_eq!(absolute("http://host:+443/"), Err("bad_port"));
    assert_eq!(absolute("http://host:0/"), Err("bad_port"));
    assert_eq!(absolute("http://host:/"), Err("bad_port"));
}

#[test]
fn absolute_form_rejects_other_schemes() {
    for bad in [
        "https://example.com/",
        "HTTPS://example.com/",
        "ftp://example.com/",
        "file://example.com/etc/passwd",
        "gopher://example.com/",
        "ws://example.com/",
        "wss://example.com/",
    ] {
        assert_eq!(absolute(bad), Err("bad_scheme"), "{bad}");
    }
}

#[test]
fn absolute_form_needs_scheme() {
    assert_eq!(absolute("/x"), Err("not_absolute"));
    assert_eq!(absolute("*"), Err("not_absolute"));
    assert_eq!(absolute("example.com:80"), Err("not_absolute"));
}

#[test]
fn uri_with_scheme_always_has_authority() {
    // Why `missing_authority` cannot be reached through `http::Uri`: it
    // refuses to build a URI with a scheme but no authority.
    let built = http::Uri::builder().scheme("http").path_and_query("/x").build();
    assert!(built.is_err());
    assert_eq!(TargetError::MissingAuthority.code(), "missing_authority");
}

// ---- CONNECT via http::Uri ----

#[test]
fn connect_uri_must_be_authority_form() {
    let ok: http::Uri = "Example.com:443".parse().unwrap_or_default();
    assert_eq!(Target::from_connect_uri(&ok), Ok(target(name("example.com"), 443)));
    for bad in ["http://example.com:443/", "/x", "*"] {
        let uri: http::Uri = bad.parse().unwrap_or_default();
        assert_eq!(
            Target::from_connect_uri(&uri).map_err(|e| e.code()),
            Err("not_authority_form"),
            "{bad}"
        );
    }
    let no_port: http::Uri = "example.com".parse().unwrap_or_default();
    assert_eq!(
        Target::from_connect_uri(&no_port).map_err(|e| e.code()),
        Err("missing_port")
    );
}

// ---- output ----

#[test]
fn authority_omits_default_port() {
    let t = target(name("example.com"), 80);
    assert_eq!(t.authority(80), "example.com");
    assert_eq!(t.authority(443), "example.com:80");
    let t = target(name("example.com"), 8080);
    assert_eq!(t.authority(80), "example.com:8080");
    let v4 = target(Host::V4(Ipv4Addr::new(10, 0, 0, 1)), 443);
    assert_eq!(v4.authority(443), "10.0.0.1");
    assert_eq!(v4.authority(80), "10.0.0.1:443");
    let v6 = target(Host::V6(Ipv6Addr::LOCALHOST), 443);
    assert_eq!(v6.authority(443), "[::1]");
    assert_eq!(v6.authority(80), "[::1]:443");
}

#[test]
fn display_always_has_port() {
    assert_eq!(target(name("a.example"), 80).to_string(), "a.example:80");
    assert_eq!(
        target(Host::V4(Ipv4Addr::new(1, 2, 3, 4)), 443).to_string(),
        "1.2.3.4:443"
    );
    assert_eq!(target(Host::V6(DB8_1), 443).to_string(), "[2001:db8::1]:443");
    assert_eq!(Host::V6(DB8_1).to_string(), "[2001:db8::1]");
    assert_eq!(name("a.example").to_string(), "a.example");
}

#[test]
fn output_round_trips() {
    for s in ["example.com:443", "1.2.3.4:80", "[2001:db8::1]:8443"] {
        let t = Target::from_authority_form(s);
        assert_eq!(t.as_ref().map(ToString::to_string), Ok(s.to_owned()));
        let again = t.and_then(|t| Target::from_host_value(t.authority(1).as_bytes(), 1));
        assert_eq!(again.map(|t| t.to_string()), Ok(s.to_owned()));
    }
}

#[test]
fn host_accessors() {
    assert_eq!(name("a.example").as_name(), Some("a.example"));
    assert_eq!(name("a.example").ip(), None);
    let v4 = Host::V4(Ipv4Addr::LOCALHOST);
    assert_eq!(v4.as_name(), None);
    assert_eq!(v4.ip(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    let v6 = Host::V6(Ipv6Addr::LOCALHOST);
    assert_eq!(v6.as_name(), None);
    assert_eq!(v6.ip(), Some(IpAddr::V6(Ipv6Addr::LOCALHOST)));
}

// ---- paths ----

#[test]
fn accepts_ordinary_paths() {
    for ok in [
        "/",
        "/a/b",
        "/a/b/",
        "/a//b",
        "/api/v4/projects/group%2Fproject",
        "/api/v4/projects/group%2fproject/repository",
        "/a/...",
        "/a/.b",
        "/a/..b",
        "/a/b.",
        "/a/b..c",
        "/.well-known/x",
        "/%41%62",
        "/a;b=c/d",
        "/a%3Fb",
        "/a%23b",
    ] {
        assert_eq!(path(ok), Ok(()), "{ok}");
    }
}

#[test]
fn rejects_relative_paths() {
    for bad in ["", "*", "a/b", "./a", "%2Fa"] {
        assert_eq!(path(bad), Err("relative_path"), "{bad}");
    }
}

#[test]
fn rejects_dot_segments() {
    // SECURITY: `/public/**` must not reach `/admin`.
    for bad in [
        "/.",
        "/..",
        "/./a",
        "/a/./b",
        "/a/.",
        "/public/../admin",
        "/public/..",
        "/public/%2e%2e/admin",
        "/public/%2E%2E/admin",
        "/public/%2e%2E/admin",
        "/public/.%2e/admin",
        "/public/%2e./admin",
        "/public/%2e/admin",
        "/public/%2E/admin",
    ] {
        assert_eq!(path(bad), Err("dot_segment"), "{bad}");
    }
}

#[test]
fn rejects_dot_segments_behind_params_and_encoded_slash() {
    // SECURITY: Tomcat-style `;params` and upstreams that decode `%2F`
    // before normalising.
    for bad in [
        "/public/..;/admin",
        "/public/..;x=y/admin",
        "/public/%2e%2e;/admin",
        "/public/..%3b/admin",
        "/public/..%2fadmin",
        "/public/%2e%2e%2Fadmin",
        "/public/x%2F..%2Fadmin",
        "/public/x%2F.",
    ] {
        assert_eq!(path(bad), Err("dot_segment"), "{bad}");
    }
}

#[test]
fn rejects_backslash_and_nul() {
    // SECURITY: `\` read as `/` by some servers; NUL truncation.
    for bad in [
        "/a\\b",
        "/public/..\\admin",
        "/a%5cb",
        "/a%5Cb",
        "/public/%2e%2e%5cadmin",
        "/a\0b",
        "/a%00",
        "/a%00b",
    ] {
        assert_eq!(path(bad), Err("bad_path"), "{bad}");
    }
}

#[test]
fn rejects_query_and_fragment_in_path() {
    assert_eq!(path("/a?b"), Err("bad_path"));
    assert_eq!(path("/a#b"), Err("bad_path"));
}

#[test]
fn rejects_malformed_escapes() {
    // SECURITY: upstreams disagree on undecodable escapes.
    for bad in ["/a%", "/a%2", "/a%zz", "/a%%2e2e", "/a%+f", "/%2g", "/a%-1"] {
        assert_eq!(path(bad), Err("bad_escape"), "{bad}");
    }
}

#[test]
fn backslash_survives_uri_parsing_but_not_check_path() {
    // `http::Uri` keeps a raw backslash in the path, so the check is needed.
    let uri: http::Uri = "http://h/public/..\\admin".parse().unwrap_or_default();
    assert_eq!(uri.path(), "/public/..\\admin");
    assert_eq!(path(uri.path()), Err("bad_path"));
}

// ---- errors ----

#[test]
fn every_error_has_a_distinct_code_and_message() {
    let all = [
        TargetError::EmptyHost,
        TargetError::NonAsciiHost,
        TargetError::BadHost,
        TargetError::EmptyLabel,
        TargetError::LabelTooLong,
        TargetError::HostTooLong,
        TargetError::BadIpv6,
        TargetError::ZoneId,
        TargetError::UnbracketedIpv6,
        TargetError::Userinfo,
        TargetError::BadPort,
        TargetError::MissingPort,
        TargetError::NotAuthorityForm,
        TargetError::NotAbsolute,
        TargetError::BadScheme,
        TargetError::MissingAuthority,
        TargetError::RelativePath,
        TargetError::DotSegment,
        TargetError::BadPath,
        TargetError::BadEscape,
    ];
    let mut codes: Vec<&str> = all.iter().map(TargetError::code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    for e in all {
        assert!(!e.to_string().is_empty());
        assert!(
            e.code()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        );
    }
}
