//! `cordon credentials seed NAME --refresh-token-file PATH`: hand a running cordon the refresh token of an
//! `oauth2_refresh` credential (an imported sign-in), through the admin API. The token is read from a file or
//! standard input, never from the command line (where other users and shell history would see it).

use std::io::Read;
use std::process::ExitCode;

use secrecy::{ExposeSecret, SecretString};

use crate::cli::admin_client::{AdminClient, ClientError, item_path};

use super::sandbox::{AdminArgs, pretty};

/// The examples of `cordon credentials` and `cordon credentials seed` (see `examples.rs`).
pub(super) const EXAMPLES: &[(&str, &str)] = &[
    (
        "credentials",
        "# Give the held sign-in `assistant` the refresh token its agent's own sign-in wrote to ./refresh-token
cordon credentials seed assistant --refresh-token-file ./refresh-token",
    ),
    (
        "credentials seed",
        "# Seed the held sign-in `assistant` from the file ./refresh-token
cordon credentials seed assistant --refresh-token-file ./refresh-token

# The same from a shell variable, on standard input (a token on the command line would show in `ps`)
printf '%s' \"$REFRESH_TOKEN\" | cordon credentials seed assistant --refresh-token-file -",
    ),
];

/// What to do.
#[derive(clap::Subcommand)]
pub(crate) enum CredentialsCommand {
    /// Give an `oauth2_refresh` credential its refresh token (a new generation; a dead sign-in lives again).
    Seed {
        /// The credential's name in `credentials:`.
        name: String,
        /// The file holding the refresh token (one trailing newline is not part of it); `-` for standard input.
        #[arg(long, value_name = "PATH")]
        refresh_token_file: std::path::PathBuf,
    },
}

pub(crate) fn main(args: AdminArgs, command: CredentialsCommand) -> ExitCode {
    let CredentialsCommand::Seed {
        name,
        refresh_token_file,
    } = command;
    let token = match read_token(&refresh_token_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cordon: --refresh-token-file: {e}");
            return ExitCode::from(2);
        }
    };
    super::sandbox::over_admin(&args, |client| async move { seed(&client, &name, &token).await })
}

async fn seed(client: &AdminClient, name: &str, token: &SecretString) -> Result<String, ClientError> {
    let body = serde_json::json!({ "refresh_token": token.expose_secret() });
    let path = item_path("/v1/credentials", "a credential", name, "/refresh-token")?;
    let answer = client
        .call(http::Method::PUT, path, Some(body.to_string().into_bytes()))
        .await?;
    Ok(pretty(&answer))
}

/// The token in `path` (or standard input for `-`), without one trailing newline; an error if empty.
fn read_token(path: &std::path::Path) -> Result<SecretString, String> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
    } else {
        text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    }
    let text = SecretString::from(text);
    let value = text.expose_secret();
    let value = value.strip_suffix('\n').unwrap_or(value);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty() {
        return Err(format!("{} holds no token", path.display()));
    }
    Ok(SecretString::from(value.to_owned()))
}
