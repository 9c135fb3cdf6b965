//! `toolgate redact`: stdin to stdout with the policy's secrets redacted.

use std::path::PathBuf;
use std::process::ExitCode;

use super::error::load;
use super::CliError;
use crate::config::ConfigPaths;

/// Runs `redact`: 0, or 2 when the policy does not load.
pub fn run(policies: Option<PathBuf>) -> Result<ExitCode, CliError> {
    let paths = ConfigPaths {
        policies,
        manifests: None,
    };
    let policy = load(&paths, None)?;
    match crate::policy::redact::redact_io(
        policy.redactor(),
        std::io::stdin().lock(),
        std::io::stdout().lock(),
    ) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::usage(format!("redact: {e}"))),
    }
}
