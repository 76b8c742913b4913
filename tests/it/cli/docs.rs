//! `cordon completions SHELL` and `cordon man`: scripts the shells read and pages man renders, covering every
//! command (hidden ones aside).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::rigs::process::cordon;
use crate::rigs::wait::TimedChild;

/// The commands `cordon --help` lists.
fn commands() -> Vec<String> {
    let (code, out, err) = cordon(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let listed = out.split("Commands:").nth(1).unwrap().split("Options:").next().unwrap();
    let names: Vec<String> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 10, "{names:?}");
    names
}

#[test]
fn completion_scripts_parse_and_name_every_command() {
    let (code, bash, err) = cordon(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let mut check = Command::new("bash").arg("-n").stdin(Stdio::piped()).spawn().unwrap();
    check.stdin.take().unwrap().write_all(bash.as_bytes()).unwrap();
    assert!(check.timed_wait().unwrap().success(), "bash -n refused the script");
    for name in commands() {
        assert!(
            bash.contains(&format!("cordon__subcmd__{}", name.replace('-', "__"))),
            "bash: {name}"
        );
    }
    // Completing `cordon sa` in bash, as the shell would, offers `sandbox`.
    let offered = Command::new("bash")
        .arg("-c")
        .arg("source /dev/stdin; COMP_WORDS=(cordon sa); COMP_CWORD=1; _cordon cordon sa cordon; echo \"${COMPREPLY[@]}\"")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut offered = offered;
    offered.stdin.take().unwrap().write_all(bash.as_bytes()).unwrap();
    let out = offered.timed_wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "sandbox");
    let (_, zsh, _) = cordon(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef cordon"), "{zsh}");
    let (_, fish, _) = cordon(&["completions", "fish"]);
    assert!(
        fish.contains("complete -c cordon") && fish.contains("sandbox"),
        "{fish}"
    );
    let (code, _, err) = cordon(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn manual_pages_render_for_cordon_and_each_command() {
    let render = |page: &str| {
        let mut groff = Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("groff (Debian's groff-base, which man needs)");
        groff.stdin.take().unwrap().write_all(page.as_bytes()).unwrap();
        let out = groff.timed_wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (code, page, err) = cordon(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(page.contains(".TH cordon 1"), "{page}");
    render(&page);
    for name in commands() {
        let (code, page, err) = cordon(&["man", &name]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(page.contains(&format!(".TH cordon-{name} 1")), "{name}: {page}");
        render(&page);
    }
    let (code, page, _) = cordon(&["man", "sandbox", "create"]);
    assert_eq!(code, 0);
    assert!(
        page.contains("cordon\\-sandbox\\-create \\- Create a sandbox"),
        "{page}"
    );
    let (code, _, err) = cordon(&["man", "sandbox", "nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cordon-sandbox has no command \"nope\"; its commands: create"),
        "{err}"
    );
}
