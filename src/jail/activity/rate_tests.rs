#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn a_flood_in_one_folder_is_summarised_and_others_still_recorded() {
    let mut t = Tally::default();
    let shown = (0..1000).filter(|_| t.admit("file", "/p/build", "create")).count();
    assert_eq!(shown, 16);
    assert!(
        t.admit("file", "/p/src", "write"),
        "another folder is still recorded one by one"
    );
    let summary = t.close();
    assert_eq!(summary.len(), 1);
    assert_eq!((summary[0].0, summary[0].1.as_str()), ("file", "/p/build"));
    assert_eq!(summary[0].2.count, 984);
    assert_eq!(summary[0].2.by.get("create"), Some(&984));
    assert!(t.admit("file", "/p/build", "create"), "a new window records again");
}

#[test]
fn at_most_so_many_are_recorded_one_by_one_in_all() {
    let mut t = Tally::default();
    let shown = (0..2000)
        .filter(|i| t.admit("file", &format!("/d{i}"), "write"))
        .count();
    assert_eq!(shown, 512);
    let summary = t.close();
    assert_eq!(summary.iter().map(|(_, _, c)| c.count).sum::<u64>(), 1488);
}

#[test]
fn distinct_keys_past_the_bound_are_counted_in_one_overflow_and_none_is_lost() {
    let mut t = Tally::default();
    let n = 30_000;
    let shown = (0..n)
        .filter(|i| t.admit("file", &format!("/p/d{i}"), "create"))
        .count() as u64;
    assert!(t.keys.len() <= MOST_KEYS);
    let summary = t.close();
    let overflow = summary.iter().find(|(_, k, _)| k == OVERFLOW).unwrap();
    assert_eq!(overflow.2.count, n - MOST_KEYS as u64);
    assert_eq!(overflow.2.by.get("create"), Some(&(n - MOST_KEYS as u64)));
    assert_eq!(
        shown + summary.iter().map(|(_, _, c)| c.count).sum::<u64>(),
        n,
        "every event is recorded or counted"
    );
    assert!(summary.len() <= MOST_KEYS + 1);
}

#[test]
fn long_names_are_bounded_in_bytes_and_kinds_per_key() {
    let mut t = Tally::default();
    let long = "x".repeat(4000);
    for i in 0..100 {
        t.admit("exec", "/bin/sh", &format!("/folder{i}"));
    }
    for i in 0..3000 {
        t.admit("exec", &format!("/{long}/{i}"), &format!("/{long}/cwd{i}"));
    }
    assert!(t.bytes <= MOST_BYTES, "{}", t.bytes);
    let summary = t.close();
    let sh = summary.iter().find(|(_, k, _)| k == "/bin/sh").unwrap();
    assert!(sh.2.by.len() <= MOST_BY + 1);
    assert_eq!(sh.2.count, 100 - 16);
    assert!(sh.2.by.contains_key("other"));
}
