#![expect(clippy::unwrap_used, reason = "tests")]

use clap::Subcommand;

use super::*;

/// Each verdict, as the help text and docs/src/audit.md name it.
const VERDICTS: [(Verification, &str); 4] = [
    (Verification::Intact, "intact"),
    (Verification::Tampered, "tampered"),
    (Verification::Unsealed, "unsealed"),
    (Verification::NoSignedEvidence, "no signed evidence"),
];

#[test]
fn the_exit_status_of_each_verdict_is_distinct() {
    let mut codes: Vec<u8> = VERDICTS.iter().map(|(o, _)| exit_status(*o)).collect();
    codes.push(UNUSABLE);
    let n = codes.len();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), n, "{codes:?}");
}

#[test]
fn the_help_text_and_the_readme_give_each_verdict_its_exit_status() {
    let command = AuditCommand::augment_subcommands(clap::Command::new("audit"));
    let verify = command.find_subcommand("verify").unwrap();
    let help = verify.get_long_about().or(verify.get_about()).unwrap().to_string();
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let readme = include_str!("../../docs/src/audit.md");
    let section = &readme[readme.find("## Tamper evidence").unwrap()..];
    let exit = &section[section.find("Exit status").unwrap()..];
    let exit = exit[..exit.find("\n\n").unwrap()]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for (outcome, word) in VERDICTS {
        let code = exit_status(outcome);
        assert!(
            help.contains(&format!("{code} {word}")),
            "help: {word} is not {code}: {help}"
        );
        assert!(
            exit.contains(&format!("`{code}` {word}")),
            "docs/src/audit.md: {word} is not {code}: {exit}"
        );
    }
    assert!(help.contains(&format!("{UNUSABLE} unusable")), "{help}");
    assert!(exit.contains(&format!("`{UNUSABLE}` unusable")), "{exit}");
}
