//! `cordon approvals list|allow|deny|grants|revoke-grant`: decide the requests a running cordon holds for a human
//! (policy rules with `action: ask`), and manage the standing grants that `allow --always` makes.

use std::process::ExitCode;

use crate::cli::admin_client::{AdminClient, ClientError};
use crate::cli::render;

use super::sandbox::{AdminArgs, pretty};

/// What to do.
#[derive(clap::Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// List the requests waiting for a decision, oldest first.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Let a held request through.
    Allow {
        /// The approval's id (`ap-...`).
        id: String,
        /// Also let every request of this sandbox with the same method, host, port and path (whatever its query
        /// and body) through from now on, without asking: a standing grant.
        #[arg(long, conflicts_with = "exact")]
        always: bool,
        /// Also let every request of this sandbox with the same method, URL (with its query) and body through
        /// from now on, without asking: a standing grant that nothing else passes.
        #[arg(long)]
        exact: bool,
        /// Who decides, for the audit record (default: $USER).
        #[arg(long)]
        by: Option<String>,
    },
    /// Refuse a held request (its client gets 403).
    Deny {
        /// The approval's id (`ap-...`).
        id: String,
        /// Who decides, for the audit record (default: $USER).
        #[arg(long)]
        by: Option<String>,
    },
    /// List the standing grants.
    Grants {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a standing grant: the requests it covered are held for approval again.
    RevokeGrant {
        /// The grant's id (`gr-...`).
        id: String,
    },
}

/// Who decides: `--by`, else `$USER`.
fn decider(by: Option<String>) -> Result<String, String> {
    by.or_else(|| std::env::var("USER").ok())
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| "say who decides with --by NAME (USER is not set)".to_owned())
}

/// Run one `cordon approvals` command.
pub(crate) fn main(args: AdminArgs, mut command: ApprovalsCommand) -> ExitCode {
    if let ApprovalsCommand::Allow { by, .. } | ApprovalsCommand::Deny { by, .. } = &mut command {
        match decider(by.take()) {
            Ok(name) => *by = Some(name),
            Err(e) => {
                eprintln!("cordon: {e}");
                return ExitCode::from(2);
            }
        }
    }
    super::sandbox::over_admin(&args, |client| async move { execute(&client, command).await })
}

async fn execute(client: &AdminClient, command: ApprovalsCommand) -> Result<String, ClientError> {
    Ok(match command {
        ApprovalsCommand::List { json: true } => pretty(&client.approvals().await?),
        ApprovalsCommand::List { json: false } => render::render_approvals(&client.approvals().await?),
        ApprovalsCommand::Allow { id, always, exact, by } => {
            let scope = match (always, exact) {
                (true, _) => "always",
                (_, true) => "exact",
                _ => "once",
            };
            pretty(
                &client
                    .decide(&id, "allow", scope, by.as_deref().unwrap_or_default())
                    .await?,
            )
        }
        ApprovalsCommand::Deny { id, by } => pretty(
            &client
                .decide(&id, "deny", "once", by.as_deref().unwrap_or_default())
                .await?,
        ),
        ApprovalsCommand::Grants { json: true } => pretty(&client.grants().await?),
        ApprovalsCommand::Grants { json: false } => render::render_grants(&client.grants().await?),
        ApprovalsCommand::RevokeGrant { id } => pretty(&client.revoke_grant(&id).await?),
    })
}
