//! `cordon config schema`: the JSON Schema of the configuration file, for editors and CI.

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
pub(super) enum ConfigCommand {
    /// Print the JSON Schema (draft 2020-12) of cordon.yaml, for editors and CI.
    ///
    /// Every key cordon takes, what belongs there, and no other key. Save it and name it in the file's first
    /// line for an editor with yaml-language-server (VS Code's YAML extension and others):
    /// `# yaml-language-server: $schema=cordon.schema.json`. `cordon check` still validates fully.
    Schema,
}

/// Run a `config` command.
pub(super) fn main(command: ConfigCommand) -> ExitCode {
    match command {
        ConfigCommand::Schema => {
            out!("{}", crate::config::schema::json_schema());
            ExitCode::SUCCESS
        }
    }
}
