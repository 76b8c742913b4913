#![expect(clippy::unwrap_used, reason = "tests")]

use super::*;

#[test]
fn every_example_is_of_a_visible_command_and_says_what_it_does() {
    let mut cmd = crate::cli::definition();
    cmd.build();
    assert_eq!(unused(&cmd), Vec::<&str>::new(), "examples of commands there are not");
    for (path, text) in EXAMPLES {
        for example in parse(text) {
            assert!(
                !example.what.is_empty(),
                "{path:?}: an example without its `# ` line: {text}"
            );
            assert!(
                !example.commands.is_empty(),
                "{path:?}: `{}` has no command",
                example.what
            );
            assert!(
                example
                    .commands
                    .iter()
                    .all(|c| !c.starts_with('#') && !c.trim().is_empty()),
                "{path:?}: {text}"
            );
        }
    }
}

#[test]
fn the_help_block_indents_every_line_under_its_heading() {
    let block = block(of("reasons").unwrap()).to_string();
    let mut lines = block.lines();
    assert_eq!(lines.next().unwrap(), "Examples:");
    for line in lines {
        assert!(
            line.is_empty() || line.starts_with("  # ") || line.starts_with("  cordon "),
            "{line:?}"
        );
    }
}
