//! The command line describing itself: shell completion scripts (`clap_complete`) and manual pages
//! (`clap_mangen`), both made from the same definition clap parses with, so they cannot drift from it.

use std::process::ExitCode;

use clap::Command;

/// Print `shell`'s completion script for `cmd` (the whole command line) on standard output.
pub(super) fn completions(mut cmd: Command, shell: clap_complete::Shell) -> ExitCode {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "cordon", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    ExitCode::SUCCESS
}

/// Print the manual page of `cmd`, or of the subcommand `path` names (`["sandbox", "create"]`), in roff.
pub(super) fn man(cmd: Command, path: &[String]) -> ExitCode {
    let mut cmd = cmd;
    cmd.build();
    let mut name = String::from("cordon");
    for word in path {
        let Some(sub) = cmd.find_subcommand(word).filter(|s| !s.is_hide_set()).cloned() else {
            let known: Vec<&str> = cmd
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(Command::get_name)
                .collect();
            eprintln!(
                "cordon: {name} has no command {word:?}; its commands: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
            return ExitCode::from(2);
        };
        name = format!("{name}-{}", sub.get_name());
        cmd = sub.version(crate::version::LONG);
    }
    // clap_mangen would fill the examples into one paragraph (EXTRA): they get a section of their own.
    let examples = super::examples::of(&path.join(" "));
    let cmd = cmd.after_help(None::<&'static str>);
    let mut page = Vec::new();
    match clap_mangen::Man::new(cmd).title(name).render(&mut page) {
        Ok(()) => {
            let mut page = String::from_utf8_lossy(&page).into_owned();
            if let Some(text) = examples {
                let at = page.find("\n.SH VERSION\n").map_or(page.len(), |i| i + 1);
                page.insert_str(at, &examples_section(text));
            }
            out!("{page}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cordon: cannot write the manual page: {e}");
            ExitCode::from(1)
        }
    }
}

/// The EXAMPLES section of a manual page: what each example does, then its command lines unfilled, in bold.
fn examples_section(text: &'static str) -> String {
    use clap_mangen::roff::{Roff, bold, roman};
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    for example in super::examples::parse(text) {
        roff.control("PP", std::iter::empty::<&str>());
        roff.text([roman(example.what)]);
        roff.control("RS", ["4"]).control("nf", std::iter::empty::<&str>());
        for line in example.commands {
            roff.text([bold(line)]);
        }
        roff.control("fi", std::iter::empty::<&str>())
            .control("RE", std::iter::empty::<&str>());
    }
    // Rendered with the apostrophes a shell needs, without the preamble the page already has.
    let text = roff.render();
    text.find(".SH EXAMPLES").map_or(text.clone(), |i| text[i..].to_owned())
}
