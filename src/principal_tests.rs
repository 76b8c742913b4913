use super::*;

#[test]
fn roles_parse_and_refuse_unknown_names() {
    for r in Role::ALL {
        assert_eq!(Role::parse(r.as_str()), Ok(r));
    }
    let e = Role::parse("aprover").err().unwrap_or_default();
    assert!(e.contains("\"aprover\" is not a role"), "{e}");
    assert!(e.contains("admin, platform, approver, viewer"), "{e}");
    assert!(Role::parse("Admin").is_err(), "role names are exact");
}

#[test]
fn needs_are_met_by_their_roles_and_admin_meets_all() {
    let only = |r: Role| Roles::of([r]);
    for needs in [Needs::Read, Needs::Sandboxes, Needs::Decide, Needs::Admin] {
        assert!(needs.met_by(only(Role::Admin)), "{needs:?}");
        assert!(!needs.met_by(Roles::default()), "{needs:?}");
    }
    assert!(Needs::Read.met_by(only(Role::Viewer)));
    assert!(!Needs::Sandboxes.met_by(only(Role::Viewer)));
    assert!(!Needs::Decide.met_by(only(Role::Viewer)));
    assert!(Needs::Sandboxes.met_by(only(Role::Platform)));
    assert!(!Needs::Decide.met_by(only(Role::Platform)));
    assert!(Needs::Decide.met_by(only(Role::Approver)));
    assert!(!Needs::Sandboxes.met_by(only(Role::Approver)));
    assert!(!Needs::Admin.met_by(Roles::of([Role::Platform, Role::Approver, Role::Viewer])));
}

#[test]
fn role_sets_list_and_serialise_in_order() {
    let set = Roles::of([Role::Viewer, Role::Approver]);
    assert_eq!(set.names(), "approver, viewer");
    assert_eq!(
        serde_json::to_string(&set).unwrap_or_default(),
        r#"["approver","viewer"]"#
    );
    assert_eq!(Roles::default().names(), "none");
    assert_eq!(set.union(Roles::of([Role::Admin])).names(), "admin, approver, viewer");
}

#[test]
fn principal_names_are_plain() {
    for ok in ["ci", "ops.anna", "anna@example.com", "a+b-c_d"] {
        assert!(valid_name(ok), "{ok}");
    }
    for bad in ["", "has space", "new\nline", "é", &"x".repeat(65)] {
        assert!(!valid_name(bad), "{bad:?}");
    }
}
