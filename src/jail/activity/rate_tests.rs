use super::*;

#[test]
fn a_flood_in_one_folder_is_summarised_and_others_still_recorded() {
    let mut t = Tally::default();
    let shown = (0..1000).filter(|_| t.admit("/p/build", "create")).count();
    assert_eq!(shown, 16);
    assert!(
        t.admit("/p/src", "write"),
        "another folder is still recorded one by one"
    );
    let summary = t.close();
    assert_eq!(summary.len(), 1);
    assert_eq!(summary[0].0, "/p/build");
    assert_eq!(summary[0].1.count, 984);
    assert_eq!(summary[0].1.by.get("create"), Some(&984));
    assert!(t.admit("/p/build", "create"), "a new window records again");
}

#[test]
fn at_most_so_many_are_recorded_one_by_one_in_all() {
    let mut t = Tally::default();
    let shown = (0..2000).filter(|i| t.admit(&format!("/d{i}"), "write")).count();
    assert_eq!(shown, 512);
    let summary = t.close();
    assert_eq!(summary.iter().map(|(_, c)| c.count).sum::<u64>(), 1488);
}
