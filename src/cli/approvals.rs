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
        /// Print JSON instead of a table: {"pending": [...]}, the admin API's answer (docs/openapi.yaml).
        #[arg(long, conflicts_with = "ids")]
        json: bool,
        /// Print only their ids, one a line, oldest first: for a script, or `cordon approvals allow "$(cordon
        /// approvals list --ids | head -n 1)"`.
        #[arg(long)]
        ids: bool,
    },
    /// Let a held request through, or grant an access request a sandbox filed (`ar-...`).
    Allow {
        /// The approval's id (`ap-...`), or an access request's (`ar-...`).
        id: String,
        /// Also let every request of this sandbox with the same method, host, port and path (whatever its query
        /// and body) through from now on, without asking: a standing grant.
        #[arg(long, conflicts_with = "exact")]
        always: bool,
        /// Also let every request of this sandbox with the same method, URL (with its query) and body through
        /// from now on, without asking: a standing grant that nothing else passes.
        #[arg(long)]
        exact: bool,
        /// Gone: the decision carries the name of the admin token this command calls with.
        #[arg(long, hide = true)]
        by: Option<String>,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// Refuse a held request (its client gets 403), or deny an access request (`ar-...`).
    Deny {
        /// The approval's id (`ap-...`), or an access request's (`ar-...`).
        id: String,
        /// Gone: the decision carries the name of the admin token this command calls with.
        #[arg(long, hide = true)]
        by: Option<String>,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// List the standing grants.
    Grants {
        /// Print JSON instead of a table: {"grants": [...]}, the admin API's answer (docs/openapi.yaml).
        #[arg(long, conflicts_with = "ids")]
        json: bool,
        /// Print only their ids, one a line, oldest first: for a script, or `cordon approvals revoke-grant`.
        #[arg(long)]
        ids: bool,
    },
    /// List the access requests sandboxes filed from inside, each with what it would add: those waiting, the
    /// grants in force, and for a day those that ended.
    Access {
        /// Print JSON instead of a table: {"requests": [...]}, the admin API's answer (docs/openapi.yaml).
        #[arg(long, conflicts_with = "ids")]
        json: bool,
        /// Print only the ids of those waiting for a decision, one a line, oldest first.
        #[arg(long)]
        ids: bool,
    },
    /// Remove a standing grant (the requests it covered are held for approval again), or end an access grant
    /// early (`ar-...`).
    RevokeGrant {
        /// The grant's id (`gr-...`), or an access request's (`ar-...`).
        id: String,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
}

/// Run one `cordon approvals` command.
pub(crate) fn main(args: AdminArgs, command: ApprovalsCommand) -> ExitCode {
    if let ApprovalsCommand::Allow { by: Some(_), .. } | ApprovalsCommand::Deny { by: Some(_), .. } = &command {
        eprintln!(
            "cordon: --by is no longer taken: who decides is the principal of the admin token this command calls \
             with (its name in control.admin_tokens, or \"admin\" for control.admin_token); give a token of your \
             own with --token-file or CORDON_ADMIN_TOKEN"
        );
        return ExitCode::from(2);
    }
    super::sandbox::over_admin(&args, |client| async move { execute(&client, command).await })
}

/// How tables are painted on standard output.
fn paint() -> crate::cli::style::Paint {
    crate::cli::style::Paint::stdout()
}

async fn execute(client: &AdminClient, command: ApprovalsCommand) -> Result<String, ClientError> {
    Ok(match command {
        ApprovalsCommand::List { ids: true, .. } => ids(&client.approvals().await?, "pending"),
        ApprovalsCommand::List { json: true, .. } => pretty(&client.approvals().await?),
        ApprovalsCommand::List { .. } => paint().table(&render::render_approvals(&client.approvals().await?)),
        ApprovalsCommand::Allow { id, always, exact, .. } => {
            let scope = match (always, exact) {
                (true, _) => "always",
                (_, true) => "exact",
                _ => "once",
            };
            if is_access(&id) {
                if always || exact {
                    return Err(ClientError::Invalid(
                        "--always and --exact are for held requests; an access grant lasts the lifetime it asked for"
                            .into(),
                    ));
                }
                pretty(&client.decide_access(&id, "grant").await?)
            } else {
                pretty(&client.decide(&id, "allow", scope).await?)
            }
        }
        ApprovalsCommand::Deny { id, .. } if is_access(&id) => pretty(&client.decide_access(&id, "deny").await?),
        ApprovalsCommand::Deny { id, .. } => pretty(&client.decide(&id, "deny", "once").await?),
        ApprovalsCommand::Access { ids: true, .. } => {
            let answer = client.access_requests().await?;
            answer["requests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| r["state"] == "pending")
                .filter_map(|r| r["id"].as_str())
                .map(|id| format!("{id}\n"))
                .collect()
        }
        ApprovalsCommand::Access { json: true, .. } => pretty(&client.access_requests().await?),
        ApprovalsCommand::Access { .. } => paint().table(&render::render_access(&client.access_requests().await?)),
        ApprovalsCommand::RevokeGrant { id, .. } if is_access(&id) => pretty(&client.revoke_access(&id).await?),
        ApprovalsCommand::Grants { ids: true, .. } => ids(&client.grants().await?, "grants"),
        ApprovalsCommand::Grants { json: true, .. } => pretty(&client.grants().await?),
        ApprovalsCommand::Grants { .. } => paint().table(&render::render_grants(&client.grants().await?)),
        ApprovalsCommand::RevokeGrant { id, .. } => pretty(&client.revoke_grant(&id).await?),
    })
}

/// Whether `id` names an access request (`ar-...`) rather than a held request or a standing grant.
fn is_access(id: &str) -> bool {
    id.starts_with("ar-")
}

/// The ids of the entries under `key` in an admin API answer (`{"pending": [...]}`, `{"grants": [...]}`), one a
/// line in the answer's order (oldest first); nothing for none.
fn ids(answer: &serde_json::Value, key: &str) -> String {
    answer[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["id"].as_str())
        .map(|id| format!("{id}\n"))
        .collect()
}
