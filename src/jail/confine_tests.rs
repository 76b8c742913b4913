#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn root_only_when_asked_whatever_sudo_says() {
    assert_eq!(
        who(None, Some("1000"), Some("1000"), false),
        Ok(Who::User {
            uid: 1000,
            gid: Some(1000)
        })
    );
    assert!(who(None, None, None, false).unwrap_err().contains("--allow-root"));
    assert!(
        who(None, Some("0"), Some("0"), false)
            .unwrap_err()
            .contains("--allow-root")
    );
    assert!(who(Some("0"), None, None, false).is_err());
    assert_eq!(who(None, None, None, true), Ok(Who::Root));
    assert_eq!(
        who(Some("65534:65534"), Some("0"), None, false),
        Ok(Who::User {
            uid: 65534,
            gid: Some(65534)
        })
    );
    assert!(
        who(Some("no-such-user-here"), None, None, false)
            .unwrap_err()
            .contains("neither a uid")
    );
}

#[test]
fn the_command_line_confines_and_drops_everything() {
    let env: BTreeMap<String, String> = [("HTTP_PROXY".to_string(), "http://10.0.0.1:1".to_string())].into();
    let line = command_line(
        &Who::User {
            uid: 1000,
            gid: Some(1000),
        },
        &View {
            tmpfs_size: None,
            writable: None,
            home: None,
            private_home: None,
            git: Vec::new(),
            hidden: vec![PathBuf::from("/etc/hostname"), PathBuf::from("/no/such/file")],
            empty: PathBuf::from("/run/cordon/jail/x/empty"),
        },
        &[(
            PathBuf::from("/run/cordon/jail/x/ca.pem"),
            PathBuf::from("/run/cordon/jail/x/ca.pem"),
        )],
        &env,
        Path::new("/var/lib/somewhere"),
        &["sh".to_string(), "-c".to_string(), "true".to_string()],
    );
    let text = line.join(" ");
    for wanted in [
        "--tmpfs /tmp",
        "--tmpfs /run",
        "--ro-bind /run/cordon/jail/x/empty /etc/hostname",
        "--ro-bind /run/cordon/jail/x/ca.pem /run/cordon/jail/x/ca.pem",
        "--chdir /",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
        "--cap-drop ALL",
        "--clearenv",
        "--setenv HTTP_PROXY http://10.0.0.1:1",
        "setpriv --reuid=1000 --regid=1000 --clear-groups --no-new-privs --bounding-set=-all",
        "-- sh -c true",
    ] {
        assert!(text.contains(wanted), "{wanted}: {text}");
    }
    assert!(!text.contains("/no/such/file"), "{text}");
    // The CA file is bound back after /run is made private.
    let run = line.iter().position(|a| a == "/run").unwrap();
    let ca = line.iter().position(|a| a == "/run/cordon/jail/x/ca.pem").unwrap();
    assert!(run < ca);
}

#[test]
fn the_working_folder_is_writable_unless_it_holds_the_host() {
    let home = Path::new("/home/dev");
    assert_eq!(
        working_folder(Path::new("/home/dev/src/app"), Some(home)),
        Some(PathBuf::from("/home/dev/src/app"))
    );
    for wide in ["/", "/home", "/home/dev", "/var", "/usr"] {
        assert_eq!(working_folder(Path::new(wide), Some(home)), None, "{wide}");
    }
}
