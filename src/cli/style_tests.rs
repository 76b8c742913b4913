use super::*;

#[test]
fn painted_only_when_on_and_only_the_heading_of_a_table() {
    let table = "ID  USER\nsb-1  alice\n";
    assert_eq!(Paint { on: false }.table(table), table);
    assert_eq!(Paint { on: false }.bad("DENY"), "DENY");
    let on = Paint { on: true };
    assert_eq!(on.table(table), "\u{1b}[1mID  USER\u{1b}[0m\nsb-1  alice\n");
    assert_eq!(on.good("ALLOW"), "\u{1b}[1m\u{1b}[32mALLOW\u{1b}[0m");
    assert_eq!(on.bad("DENY"), "\u{1b}[1m\u{1b}[31mDENY\u{1b}[0m");
    assert_eq!(on.doubt("?"), "\u{1b}[1m\u{1b}[33m?\u{1b}[0m");
    // A table without a line break (nothing but a heading would have one) is left as it is.
    assert_eq!(on.table("ID"), "ID");
}
