use super::*;

#[test]
fn values_are_kept_once_newest_last_and_bump_the_version() {
    let book = Book::default();
    assert_eq!(book.version(), 0);
    book.record("t", &SecretString::from("v1"));
    book.record("t", &SecretString::from("v1"));
    assert_eq!(book.version(), 1);
    for i in 2..=10 {
        book.record("t", &SecretString::from(format!("v{i}")));
    }
    let kept: Vec<String> = book.of("t").iter().map(|v| v.expose_secret().to_string()).collect();
    assert_eq!(kept, ["v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"]);
    book.record("u", &SecretString::from("w"));
    let (version, all) = book.all();
    assert_eq!(version, book.version());
    assert_eq!(all.len(), 9);
    assert!(book.of("none").is_empty());
}
