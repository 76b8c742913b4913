use super::closest;

fn names(list: &[&str]) -> impl Iterator<Item = String> {
    list.iter().map(|s| s.to_string()).collect::<Vec<_>>().into_iter()
}

#[test]
fn the_closest_name_is_a_typo_away_and_only_then() {
    assert_eq!(
        closest("api-kye", names(&["api-key", "db-password"])).as_deref(),
        Some("api-key")
    );
    assert_eq!(
        closest("API_KYE", names(&["PATH", "API_KEY"])).as_deref(),
        Some("API_KEY")
    );
    assert_eq!(closest("github", names(&["GITHUB"])).as_deref(), Some("GITHUB"));
    // Far from every name: no guess rather than a wrong one.
    assert_eq!(closest("stripe", names(&["api-key", "db-password"])), None);
    // The name itself is not its own suggestion.
    assert_eq!(closest("api-key", names(&["api-key"])), None);
}
