#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_name_reads_compares_and_serializes_as_its_text() {
    let id = SandboxId::from("sb-1");
    assert_eq!(id, "sb-1");
    assert_eq!(id.as_str(), "sb-1");
    assert_eq!(id.to_string(), "sb-1");
    assert_eq!(format!("{id:?}"), "\"sb-1\"");
    assert_eq!(serde_json::to_string(&id).unwrap_or_default(), "\"sb-1\"");
    let name: CredentialName = serde_json::from_str("\"slack\"").unwrap_or_else(|_| "x".into());
    assert_eq!(name, String::from("slack"));
    let map: std::collections::BTreeMap<CredentialName, u8> = [(name.clone(), 1)].into();
    assert_eq!(map.get("slack"), Some(&1));
}

#[test]
fn only_text_that_keeps_the_rule_becomes_a_sandbox_id() {
    let long = "x".repeat(65);
    // SECURITY test: ids name CA folders, travel in Basic credentials (up to ':') and key incarnations
    // (`id#nonce`, `id@user`): none of these may become one, whichever way the text arrives.
    for bad in [
        "",
        ".",
        "..",
        "../x",
        ".lock",
        ".a",
        "a/b",
        "/tmp/x",
        "a:b",
        "a#b",
        "a@b",
        "a b",
        "a\\b",
        "caf\u{e9}",
        "a\0b",
        long.as_str(),
    ] {
        assert!(SandboxId::parse(bad).is_err(), "{bad:?}");
        assert!(bad.parse::<SandboxId>().is_err(), "{bad:?}");
        let json = serde_json::to_string(bad).unwrap();
        assert!(serde_json::from_str::<SandboxId>(&json).is_err(), "{bad:?}");
        let e = SandboxId::parse(bad).unwrap_err().to_string();
        assert!(e.contains("is not a sandbox id; use 1-64 letters"), "{e}");
    }
    for good in ["a", "A-z_0.9", "a..b", "sb-1", &"y".repeat(64)] {
        assert_eq!(SandboxId::parse(good).unwrap().as_str(), good);
        let json = serde_json::to_string(good).unwrap();
        assert_eq!(serde_json::from_str::<SandboxId>(&json).unwrap(), good);
    }
}
