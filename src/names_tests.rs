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
