//! `toolgate auth hash-token`: a bearer token on stdin, the `auth.tokens`
//! entry to paste on stdout. The token itself is never printed.

use std::io::{Read, Write};
use std::process::ExitCode;

use clap::Subcommand;

use super::CliError;

/// Tokens shorter than this can be guessed.
const MIN_TOKEN_BYTES: usize = 16;

/// `toolgate auth …`
#[derive(Subcommand)]
pub(crate) enum AuthCommand {
    /// Read a bearer token on stdin; print the `auth.tokens` entry that
    /// accepts it (its SHA-256, never the token).
    HashToken {
        /// The identity the token stands for (logs, metrics, `rules[].identities`).
        #[arg(long, default_value = "caller")]
        id: String,
        /// The profile (one of `tools.profiles`) the caller gets.
        #[arg(long)]
        profile: Option<String>,
    },
}

/// Runs an `auth` subcommand.
pub(crate) fn run(command: AuthCommand) -> Result<ExitCode, CliError> {
    match command {
        AuthCommand::HashToken { id, profile } => hash_token(&id, profile.as_deref()),
    }
}

fn hash_token(id: &str, profile: Option<&str>) -> Result<ExitCode, CliError> {
    let mut input = String::new();
    std::io::stdin()
        .take(64 << 10)
        .read_to_string(&mut input)
        .map_err(|e| CliError::Usage(format!("cannot read the token on stdin: {e}")))?;
    let token = input.strip_suffix('\n').unwrap_or(&input);
    let token = token.strip_suffix('\r').unwrap_or(token);
    if token.is_empty() {
        return Err(CliError::Usage(
            "no token on stdin; e.g. `openssl rand -hex 32 | tee token.txt | toolgate auth hash-token --id ci-bot`".into(),
        ));
    }
    let b64token = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    if !token.chars().all(b64token) {
        return Err(CliError::Usage(
            "the token has characters a bearer token cannot carry (allowed: letters, digits and -._~+/=); generate one with `openssl rand -hex 32`".into(),
        ));
    }
    if token.len() < MIN_TOKEN_BYTES {
        return Err(CliError::Usage(format!(
            "the token is {} characters long, which can be guessed; use at least {MIN_TOKEN_BYTES} random characters, e.g. `openssl rand -hex 32`",
            token.len()
        )));
    }
    let id_yaml = serde_json::to_string(id).unwrap_or_default();
    let mut line = format!(
        "- {{ id: {id_yaml}, sha256: \"{}\"",
        crate::serve::auth::hash_token(token)
    );
    if let Some(p) = profile {
        line.push_str(&format!(
            ", profile: {} }}",
            serde_json::to_string(p).unwrap_or_default()
        ));
    } else {
        line.push_str(" }");
    }
    writeln!(std::io::stdout().lock(), "{line}")?;
    Ok(ExitCode::SUCCESS)
}
