//! `toolgate redact`: stdin to stdout with the policy's secrets redacted.

use std::os::fd::AsFd;
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
    // Stdout unbuffered when it can be: `redact_io` writes whole chunks,
    // which stdout's line buffer would split into two writes each.
    let result = match std::io::stdout().as_fd().try_clone_to_owned() {
        Ok(fd) => crate::policy::redact::redact_io(
            policy.redactor(),
            std::io::stdin().lock(),
            std::fs::File::from(fd),
        ),
        Err(_) => crate::policy::redact::redact_io(
            policy.redactor(),
            std::io::stdin().lock(),
            std::io::stdout().lock(),
        ),
    };
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::usage(format!("redact: {e}"))),
    }
}
