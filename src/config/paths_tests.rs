#![expect(clippy::unwrap_used, reason = "tests")]

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Base, state_dir_from};

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name: &str| map.get(name).cloned()
}

#[test]
fn the_state_folder_follows_the_documented_order() {
    let all = [
        ("CORDON_STATE_DIR", "/srv/cordon"),
        ("STATE_DIRECTORY", "/var/lib/cordon-unit:/var/lib/other"),
        ("XDG_STATE_HOME", "/home/a/.state"),
        ("HOME", "/home/a"),
    ];
    let at = |skip: usize, root: bool| state_dir_from(&env(&all[skip..]), root).unwrap();
    assert_eq!(at(0, false), PathBuf::from("/srv/cordon"));
    assert_eq!(at(0, true), PathBuf::from("/srv/cordon"));
    assert_eq!(at(1, false), PathBuf::from("/var/lib/cordon-unit"));
    assert_eq!(at(2, true), PathBuf::from("/var/lib/cordon"));
    assert_eq!(at(2, false), PathBuf::from("/home/a/.state/cordon"));
    assert_eq!(at(3, false), PathBuf::from("/home/a/.local/state/cordon"));
}

#[test]
fn a_relative_variable_never_names_the_state_folder() {
    // A relative value would again mean "wherever cordon was started".
    let got = state_dir_from(
        &env(&[
            ("CORDON_STATE_DIR", "state"),
            ("XDG_STATE_HOME", "rel"),
            ("HOME", "/home/b"),
        ]),
        false,
    )
    .unwrap();
    assert_eq!(got, PathBuf::from("/home/b/.local/state/cordon"));
    let err = state_dir_from(&env(&[("HOME", "")]), false).unwrap_err();
    assert!(err.contains("CORDON_STATE_DIR"), "{err}");
}

#[test]
fn relative_paths_are_read_against_the_files_folder() {
    // A folder that does not exist is made absolute as written.
    let base = Base::of_file(Path::new("/nonexistent/cordon/cordon.yaml"));
    assert_eq!(
        base.resolve("state/cordon.db"),
        PathBuf::from("/nonexistent/cordon/state/cordon.db")
    );
    assert_eq!(base.resolve("../x"), PathBuf::from("/nonexistent/cordon/../x"));
    assert_eq!(base.resolve("/var/lib/cordon/db"), PathBuf::from("/var/lib/cordon/db"));
    // A bare file name is in the working folder, made absolute.
    let here = std::fs::canonicalize(".").unwrap();
    assert_eq!(Base::of_file(Path::new("c.yaml")).resolve("certs"), here.join("certs"));
    assert_eq!(Base::AsWritten.resolve("certs"), PathBuf::from("certs"));
}
