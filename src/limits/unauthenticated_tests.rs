use super::*;

#[test]
fn an_address_holds_at_most_its_cap_and_leaving_frees_a_place() {
    let u = Arc::new(Unauthenticated::default());
    let (a, b): (IpAddr, IpAddr) = ([192, 0, 2, 1].into(), [192, 0, 2, 2].into());
    let first = u.enter(a, 2);
    let second = u.enter(a, 2);
    assert!(first.is_some() && second.is_some());
    assert!(u.enter(a, 2).is_none(), "a third from the same address");
    assert!(u.enter(b, 2).is_some(), "another address is not held back");
    drop(first);
    assert_eq!(u.of(a), 1);
    assert!(u.enter(a, 2).is_some());
    drop(second);
    assert_eq!(u.lock().len(), 0, "addresses with nothing waiting are forgotten");
}
