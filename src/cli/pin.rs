//! `toolgate pin NAME`: accept an upstream server's tools as they are now.
//! Starts the server, lists its tools, prints the difference from its lock
//! file (`NAME.lock` beside the manifest) and rewrites the lock.

use std::path::Path;
use std::process::ExitCode;

use super::{CliError, ConfigArgs};

/// Runs `pin`: 0 when the lock was written, 2 when the configuration or the
/// server could not be loaded.
pub fn run(config: &ConfigArgs, workspace: &Path, name: &str) -> Result<ExitCode, CliError> {
    let loaded = crate::config::load(&config.paths()).map_err(CliError::Config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the async runtime: {e}")))?;
    let pinned = runtime
        .block_on(crate::upstream::pin_server(
            &loaded.servers,
            name,
            workspace,
        ))
        .map_err(|e| CliError::usage(format!("pin: {e}")))?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if pinned.diff.is_empty() {
        eprintln!(
            "{name}: {} tools, unchanged ({})",
            pinned.tools,
            pinned.lock.display()
        );
    } else {
        print!("{}", pinned.diff);
        eprintln!(
            "{name}: pinned {} tools in {}",
            pinned.tools,
            pinned.lock.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
