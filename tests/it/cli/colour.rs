//! Colour only for a person at a terminal (https://no-color.org): the binary run on a pseudo-terminal (Python's
//! `pty`) and through a pipe, with and without NO_COLOR, CLICOLOR_FORCE, TERM=dumb and CI (each case sets or clears
//! them itself, so the test means the same on a CI runner, where CI is set). clap's help, the verdicts
//! of `explain`, `audit verify` and `check`, and `cordon run`'s operational log follow one rule; JSON never has
//! colour.

use std::process::Command;

use crate::rigs::process::BIN;
use crate::rigs::wait::Within;

/// Runs argv[1:] on a pseudo-terminal and writes what it printed (stdout and stderr both) on stdout. With
/// PTY_STOP_AFTER, the process gets SIGTERM once that text has appeared; it is killed after 20 s in any case.
const ON_A_TERMINAL: &str = r#"
import os, pty, select, signal, sys, time
args = sys.argv[1:]
stop_after = os.environ.pop("PTY_STOP_AFTER", None)
pid, fd = pty.fork()
if pid == 0:
    os.execv(args[0], args)
out = b""
deadline = time.time() + 20
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
        if stop_after and stop_after.encode() in out:
            os.kill(pid, signal.SIGTERM)
            stop_after = None
else:
    os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
"#;

/// What `cordon ARGS` printed on a terminal, with `env` set over a colour-capable TERM and no colour variables.
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(ON_A_TERMINAL)
        .arg(BIN)
        .args(args)
        .env("CORDON_STATE_DIR", crate::rigs::process::state_dir())
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CI")
        .env_remove("CORDON_CONFIG")
        .env_remove("CORDON_LOG_FORMAT")
        .envs(env.iter().copied())
        .timed_output()
        .expect("python3, to give the binary a pseudo-terminal");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What `cordon ARGS` printed on a pipe (stdout, stderr), with `env` set.
fn piped(args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("CORDON_STATE_DIR", crate::rigs::process::state_dir())
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CI")
        .env_remove("CORDON_CONFIG")
        .envs(env.iter().copied())
        .timed_output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const ESC: char = '\u{1b}';

/// A request the embedded policy refuses whatever the network: the method is not allowed there.
const REFUSED: &[&str] = &[
    "explain",
    "--sandbox",
    "demo",
    "--method",
    "POST",
    "https://api.github.com/x",
];

#[test]
fn colour_on_a_terminal_unless_no_color_says_otherwise() {
    let coloured = on_terminal(REFUSED, &[]);
    assert!(coloured.contains(&format!("verdict  {ESC}[")), "{coloured:?}");
    assert!(coloured.contains("DENY"), "{coloured:?}");
    // NO_COLOR set to anything but the empty string turns it off; empty, it says nothing.
    let plain = on_terminal(REFUSED, &[("NO_COLOR", "1")]);
    assert!(!plain.contains(ESC) && plain.contains("verdict  DENY"), "{plain:?}");
    let empty = on_terminal(REFUSED, &[("NO_COLOR", "")]);
    assert!(empty.contains(&format!("verdict  {ESC}[")), "{empty:?}");
    // A terminal that cannot show colour, or CLICOLOR=0, gets none.
    for env in [("TERM", "dumb"), ("CLICOLOR", "0")] {
        let plain = on_terminal(REFUSED, &[env]);
        assert!(!plain.contains(ESC), "{env:?}: {plain:?}");
    }
    // A CI runner's log (CI set) shows colour whatever TERM says, but still not through a pipe or under NO_COLOR.
    let ci = on_terminal(REFUSED, &[("TERM", "dumb"), ("CI", "true")]);
    assert!(ci.contains(&format!("verdict  {ESC}[")), "{ci:?}");
    assert!(!on_terminal(REFUSED, &[("TERM", "dumb"), ("CI", "true"), ("NO_COLOR", "1")]).contains(ESC));
    let (out, _) = piped(REFUSED, &[("CI", "true")]);
    assert!(!out.contains(ESC), "{out:?}");
    // Piped: plain, unless CLICOLOR_FORCE (and then not under NO_COLOR).
    let (out, _) = piped(REFUSED, &[]);
    assert!(!out.contains(ESC) && out.ends_with("verdict  DENY\n"), "{out:?}");
    let (forced, _) = piped(REFUSED, &[("CLICOLOR_FORCE", "1")]);
    assert!(forced.contains(&format!("verdict  {ESC}[")), "{forced:?}");
    let (out, _) = piped(REFUSED, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!out.contains(ESC), "{out:?}");

    let check = on_terminal(&["check"], &[]);
    assert!(
        check.starts_with(&format!("config/cordon.yaml (embedded): {ESC}[")),
        "{check:?}"
    );
    assert!(!on_terminal(&["check"], &[("NO_COLOR", "1")]).contains(ESC));
}

#[test]
fn clap_help_and_its_examples_follow_the_same_rule() {
    let help = on_terminal(&["sandbox", "list", "--help"], &[]);
    assert!(help.contains(&format!("{ESC}[1m{ESC}[4mExamples:")), "{help:?}");
    assert!(help.contains(&format!("{ESC}[1m{ESC}[4mUsage:")), "{help:?}");
    let plain = on_terminal(&["sandbox", "list", "--help"], &[("NO_COLOR", "1")]);
    assert!(!plain.contains(ESC) && plain.contains("\nExamples:\r\n"), "{plain:?}");
    let (piped_help, _) = piped(&["sandbox", "list", "--help"], &[]);
    assert!(
        !piped_help.contains(ESC) && piped_help.contains("\nExamples:\n"),
        "{piped_help:?}"
    );
    // clap's errors (on stderr) too.
    let error = on_terminal(&["sandbox", "--nope"], &[]);
    assert!(error.contains(ESC), "{error:?}");
    assert!(!on_terminal(&["sandbox", "--nope"], &[("NO_COLOR", "1")]).contains(ESC));
}

#[test]
fn json_never_has_colour_even_on_a_terminal() {
    for args in [
        &[
            "explain",
            "--sandbox",
            "demo",
            "--method",
            "POST",
            "--json",
            "https://api.github.com/x",
        ][..],
        &["reasons", "--json"],
        &["check", "--json"],
    ] {
        let out = on_terminal(args, &[("CLICOLOR_FORCE", "1")]);
        assert!(!out.contains(ESC), "{args:?}: {out:?}");
        let start = out.find('{').unwrap();
        let text = out[start..].replace("\r\n", "\n");
        serde_json::from_str::<serde_json::Value>(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"));
    }
}

#[test]
fn the_operational_log_of_cordon_run_is_coloured_only_on_a_terminal_without_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::rigs::ports::free_port();
    let config = dir.path().join("cordon.yaml");
    let d = dir.path().display();
    std::fs::write(
        &config,
        format!("listen: {{ proxy: 127.0.0.1:{port} }}\nca: {{ dir: {d}/cas }}\naudit: {{ path: {d}/audit.jsonl }}\n"),
    )
    .unwrap();
    let run = |env: &[(&str, &str)]| {
        let mut env = env.to_vec();
        env.push(("PTY_STOP_AFTER", "listening on"));
        on_terminal(&["run", "--config", config.to_str().unwrap()], &env)
    };
    let coloured = run(&[]);
    assert!(
        coloured.contains("listening on") && coloured.contains(&format!("{ESC}[")),
        "{coloured:?}"
    );
    let plain = run(&[("NO_COLOR", "1")]);
    assert!(plain.contains("listening on") && !plain.contains(ESC), "{plain:?}");
}
