//! The examples of `cordon completions` and `cordon man`, which write into system folders and a home, run as
//! printed (by `sh -c`, as root) on a machine of their own ([`Isolated`]: `/etc` and `/usr/local` are overlays
//! there, the home a folder of the test's), and each file checked for what its `# ` line says: the shells load
//! the completion scripts and complete `cordon sa` to `sandbox`, and `man` finds and renders the pages. The
//! host's own folders are left as they were.

use std::path::Path;

use super::examples::shown;
use crate::rigs::isolated::{Isolated, Ran};

/// Run `text`, an example of `path` (checked to be printed there), in `dir` inside `m`; it must exit 0.
fn ok(m: &Isolated, dir: &Path, path: &str, text: &str, env: &[(&str, &str)]) -> Ran {
    shown(path, text);
    let ran = m.run(dir, text, env, "");
    assert_eq!(ran.code, 0, "{text}:\n{}{}", ran.out, ran.err);
    ran
}

#[test]
fn the_completions_and_manual_pages_install_where_the_examples_say_and_work() {
    let host_bash = std::fs::read("/etc/bash_completion.d/cordon").ok();
    let host_page = Path::new("/usr/local/share/man/man1/cordon-sandbox-create.1").exists();
    let Some(m) = Isolated::new("cli::examples_system") else {
        return;
    };
    let work = m.folder("work");
    let home = m.folder("home");
    let home_s = home.display().to_string();
    let env = [("HOME", home_s.as_str())];
    let check = |script: &str| {
        let ran = m.run(&work, script, &env, "");
        assert_eq!(ran.code, 0, "{script}:\n{}{}", ran.out, ran.err);
        ran.out
    };

    // bash: the folder the bash-completion package makes and reads (made here if the package is not installed).
    check("mkdir -p /etc/bash_completion.d");
    ok(
        &m,
        &work,
        "completions",
        "cordon completions bash > /etc/bash_completion.d/cordon",
        &env,
    );
    check("bash -n /etc/bash_completion.d/cordon");
    let completed = check(
        "bash -c '. /etc/bash_completion.d/cordon; COMP_WORDS=(cordon sa); COMP_CWORD=1; COMP_LINE=\"cordon sa\"; \
         COMP_POINT=9; _cordon cordon sa cordon; printf \"%s\\n\" \"${COMPREPLY[@]}\"'",
    );
    assert!(completed.lines().any(|l| l.trim() == "sandbox"), "{completed}");

    // zsh: compinit finds _cordon in the folder added to $fpath and binds it to cordon.
    let lines = "mkdir -p ~/.zfunc\ncordon completions zsh > ~/.zfunc/_cordon";
    ok(&m, &work, "completions", lines, &env);
    check("zsh -n ~/.zfunc/_cordon");
    let bound =
        check("zsh -f -c 'fpath+=~/.zfunc; autoload -U compinit; compinit -u -D; print -r -- ${_comps[cordon]}'");
    assert_eq!(bound.trim(), "_cordon");

    // fish: loaded from its completions folder on its own (the home is the test's: no other configuration).
    let lines = "mkdir -p ~/.config/fish/completions\ncordon completions fish > ~/.config/fish/completions/cordon.fish";
    ok(&m, &work, "completions", lines, &env);
    let completed = check("fish -c 'complete -C \"cordon sa\"'");
    assert!(completed.lines().any(|l| l.starts_with("sandbox")), "{completed}");

    // The manual page rendered by man, and one installed where man finds it by name.
    let page = ok(&m, &work, "man", "cordon man | man -l -", &env).out;
    assert!(page.contains("NAME") && page.contains("cordon"), "{page}");
    let lines = "mkdir -p /usr/local/share/man/man1\n\
                 cordon man sandbox create > /usr/local/share/man/man1/cordon-sandbox-create.1";
    ok(&m, &work, "man", lines, &env);
    // (Debian's /usr/local/man is a link to /usr/local/share/man, which man may name instead.)
    let found = check("readlink -f \"$(man -w cordon-sandbox-create)\"");
    assert_eq!(found.trim(), "/usr/local/share/man/man1/cordon-sandbox-create.1");
    let page = check("man cordon-sandbox-create");
    assert!(
        page.contains("cordon-sandbox-create") && page.contains("--policy"),
        "{page}"
    );
    drop(m);

    assert_eq!(
        std::fs::read("/etc/bash_completion.d/cordon").ok(),
        host_bash,
        "the host's /etc changed"
    );
    assert_eq!(
        Path::new("/usr/local/share/man/man1/cordon-sandbox-create.1").exists(),
        host_page,
        "the host's /usr/local changed"
    );
}
