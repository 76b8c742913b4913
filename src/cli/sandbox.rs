//! `cordon sandbox create|list|show|renew|revoke|env`: a client of the admin API of a running cordon.

use std::path::PathBuf;
use std::process::ExitCode;

use secrecy::SecretString;

use crate::cli::admin_client::{self, AdminClient, CreateRequest};
use crate::cli::render::{self, EnvFormat};
use crate::config::Config;
use crate::config::credentials::SecretRef;

/// Where the admin API is and how to authenticate to it.
#[derive(clap::Args, Default)]
pub(crate) struct AdminArgs {
    /// The admin API's URL (default: `listen.admin` of the configuration).
    #[arg(long, env = "CORDON_ADMIN_URL", global = true)]
    admin: Option<String>,
    /// A file holding the admin token (default: `control.admin_token` of the configuration). The token
    /// itself may be given in CORDON_ADMIN_TOKEN.
    #[arg(long, env = "CORDON_ADMIN_TOKEN_FILE", global = true)]
    token_file: Option<PathBuf>,
    /// Configuration file, to find the admin address and token (default: the embedded one).
    #[arg(long, env = "CORDON_CONFIG", global = true)]
    config: Option<PathBuf>,
}

/// A sandbox's policy on the command line: a name, or its own from a file.
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
pub(crate) struct PolicyArg {
    /// One of the file's policies.
    #[arg(long)]
    policy: Option<String>,
    /// The sandbox's own policy: a YAML or JSON file with `extends` (the file's policy it narrows), `allow`
    /// rules written as under `policies:`, and optionally `credentials` and `mode`.
    #[arg(long)]
    policy_file: Option<PathBuf>,
}

impl PolicyArg {
    /// The `policy` value of the request body.
    fn value(&self) -> Result<serde_json::Value, String> {
        match (&self.policy, &self.policy_file) {
            (Some(name), _) => Ok(serde_json::Value::String(name.clone())),
            (None, Some(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| format!("--policy-file {}: {e}", path.display()))?;
                // YAML is a superset of JSON: one parser reads both, with the line of a mistake.
                crate::config::document(&path.display().to_string(), &text)
            }
            (None, None) => Err("give --policy NAME or --policy-file FILE".into()),
        }
    }
}

/// What to do.
#[derive(clap::Subcommand)]
pub(crate) enum SandboxCommand {
    /// Create a sandbox; prints its credential, CA, placeholders and environment (JSON), or only the
    /// environment with --format export|dotenv.
    Create {
        /// The user it belongs to.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        policy: PolicyArg,
        /// Its id (default: generated).
        #[arg(long)]
        id: Option<String>,
        /// Lifetime, e.g. 30m or 2h (default: control.default_ttl).
        #[arg(long)]
        ttl: Option<String>,
        /// A label, key=value (repeatable).
        #[arg(long = "label", value_parser = render::parse_label)]
        labels: Vec<(String, String)>,
        /// A source range that identifies the sandbox without a credential, e.g. 10.0.0.2/32 (repeatable): a VM
        /// or container known by its address.
        #[arg(long = "source-cidr")]
        source_cidrs: Vec<String>,
        /// Print only the environment, in this format.
        #[arg(long)]
        format: Option<EnvFormat>,
        /// Print JSON, the admin API's answer (the default; not with --format).
        #[arg(long, conflicts_with = "format")]
        json: bool,
    },
    /// Give a run-time sandbox another policy (a name, or its own from a file): tunnels it no longer allows are
    /// closed, and its CA is re-issued when the names it may sign change (printed with the answer).
    SetPolicy {
        /// The sandbox.
        id: String,
        #[command(flatten)]
        policy: PolicyArg,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// List sandboxes.
    List {
        /// Print JSON instead of a table: {"sandboxes": [...]}, the admin API's answer (docs/openapi.yaml).
        #[arg(long)]
        json: bool,
    },
    /// Show one sandbox, with its CA certificate.
    Show {
        /// Its id.
        id: String,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// Extend a sandbox's life.
    Renew {
        /// Its id.
        id: String,
        /// New remaining lifetime (default: control.default_ttl); never shortens it.
        #[arg(long)]
        ttl: Option<String>,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// Revoke a sandbox: its requests get 407 and its open connections are closed.
    Revoke {
        /// Its id.
        id: String,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// Print the CA bundle (PEM) the sandbox's CA variables point at: write it at `control.ca_file` in the sandbox.
    CaBundle {
        /// Its id.
        id: String,
    },
    /// Make a short-lived link that opens a port of the sandbox on the preview listener, for one person;
    /// prints the link (or the whole answer with --json).
    Preview {
        /// The sandbox.
        id: String,
        /// Its port (one its policy exposes).
        #[arg(long)]
        port: u16,
        /// The person the link is for.
        #[arg(long)]
        user: String,
        /// How long the link may be opened (default and most: previews.link_ttl).
        #[arg(long)]
        ttl: Option<String>,
        /// Print the answer as JSON (its id, to close it later, and when it expires).
        #[arg(long)]
        json: bool,
    },
    /// Close a preview at once: its link and every session opened with it are refused from now on.
    ClosePreview {
        /// The sandbox.
        id: String,
        /// The preview's id (`pv-...`).
        preview: String,
        /// Print JSON, the admin API's answer (what this command prints either way).
        #[arg(long)]
        json: bool,
    },
    /// Issue a further credential and print the environment to start the sandbox with.
    Env {
        /// Its id.
        id: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "export")]
        format: EnvFormat,
    },
}

fn token(args: &AdminArgs, config: &Option<Config>) -> Result<SecretString, String> {
    if let Ok(t) = std::env::var("CORDON_ADMIN_TOKEN")
        && !t.is_empty()
    {
        return Ok(SecretString::from(t));
    }
    if let Some(path) = &args.token_file {
        return crate::secrets::file_secret(path);
    }
    // Without a flag, the legacy `control.admin_token` (principal `admin`), else the only named token there is.
    let configured = config.as_ref().and_then(|c| {
        let tokens = &c.control.admin_tokens;
        tokens
            .iter()
            .find(|t| t.at == "control.admin_token")
            .or(if tokens.len() == 1 { tokens.first() } else { None })
            .map(|t| t.token.clone())
    });
    match configured {
        Some(SecretRef::File(path)) => crate::secrets::file_secret(&path),
        Some(SecretRef::Env(var)) => std::env::var(&var)
            .ok()
            .filter(|v| !v.is_empty())
            .map(SecretString::from)
            .ok_or_else(|| format!("the admin token's variable {var} is not set")),
        Some(other) => Err(format!(
            "the admin token is in {other:?}, which this command cannot read; pass --token-file or CORDON_ADMIN_TOKEN"
        )),
        None => Err(
            "no admin token: pass --token-file, set CORDON_ADMIN_TOKEN, or name a configuration whose \
                     control.admin_token is a file (with several control.admin_tokens, say which with --token-file)"
                .into(),
        ),
    }
}

impl AdminArgs {
    /// The admin API named by the configuration at `config` (and the environment's overrides).
    pub(crate) fn of_config(config: Option<PathBuf>) -> AdminArgs {
        AdminArgs {
            config,
            ..AdminArgs::default()
        }
    }
}

pub(crate) fn client(args: &AdminArgs) -> Result<AdminClient, String> {
    // The configuration is only a source of defaults; with both flags given it is not needed.
    let config = match (&args.admin, &args.token_file) {
        (Some(_), Some(_)) => None,
        _ => Some(Config::load(args.config.as_deref()).map_err(|e| e.to_string())?),
    };
    let base = match (&args.admin, config.as_ref().and_then(|c| c.listen.admin)) {
        (Some(url), _) => url.clone(),
        (None, Some(addr)) => format!("http://{addr}"),
        (None, None) => return Err("no admin address: pass --admin or set listen.admin in the configuration".into()),
    };
    AdminClient::new(&base, token(args, &config)?).map_err(|e| e.to_string())
}

/// Run one `cordon sandbox` command.
pub(crate) fn main(args: AdminArgs, command: SandboxCommand) -> ExitCode {
    over_admin(&args, |client| async move { execute(&client, command).await })
}

/// Run `call` against the admin API the arguments name, print its text, and exit: 2 when the arguments do not
/// name a usable admin API, 1 when the call fails.
pub(crate) fn over_admin<F, Fut>(args: &AdminArgs, call: F) -> ExitCode
where
    F: FnOnce(AdminClient) -> Fut,
    Fut: std::future::Future<Output = Result<String, admin_client::ClientError>>,
{
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cordon: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let client = match client(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cordon: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(call(client)) {
        Ok(text) => {
            out!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cordon: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A JSON answer as printed.
pub(crate) fn pretty(v: &serde_json::Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
}

async fn execute(client: &AdminClient, command: SandboxCommand) -> Result<String, admin_client::ClientError> {
    Ok(match command {
        SandboxCommand::Create {
            user,
            policy,
            id,
            ttl,
            labels,
            source_cidrs,
            format,
            json: _,
        } => {
            let req = CreateRequest {
                user,
                policy: policy.value().map_err(admin_client::ClientError::Invalid)?,
                id,
                ttl,
                labels: labels.into_iter().collect(),
                source_cidrs,
            };
            let created = client.create(&req).await?;
            match format {
                Some(f) => render::render_env(&created, f)?,
                None => pretty(&created),
            }
        }
        SandboxCommand::SetPolicy { id, policy, .. } => {
            let policy = policy.value().map_err(admin_client::ClientError::Invalid)?;
            pretty(&client.set_policy(&id, &policy).await?)
        }
        SandboxCommand::CaBundle { id } => client.ca_bundle(&id).await?,
        SandboxCommand::List { json } => {
            let list = client.list().await?;
            if json {
                pretty(&list)
            } else {
                crate::cli::style::Paint::stdout().table(&render::render_table(&list))
            }
        }
        SandboxCommand::Show { id, .. } => pretty(&client.show(&id).await?),
        SandboxCommand::Renew { id, ttl, .. } => pretty(&client.renew(&id, ttl.as_deref()).await?),
        SandboxCommand::Revoke { id, .. } => pretty(&client.revoke(&id).await?),
        SandboxCommand::Env { id, format } => render::render_env(&client.credentials(&id).await?, format)?,
        SandboxCommand::Preview {
            id,
            port,
            user,
            ttl,
            json,
        } => {
            let made = client.preview(&id, port, &user, ttl.as_deref()).await?;
            match (json, made["url"].as_str()) {
                (false, Some(url)) => format!("{url}\n"),
                _ => pretty(&made),
            }
        }
        SandboxCommand::ClosePreview { id, preview, .. } => pretty(&client.close_preview(&id, &preview).await?),
    })
}
