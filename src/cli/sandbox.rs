//! `toolgate sandbox -- CMD [ARGS...]`: runs one command confined by the
//! policy's `sandbox:` and `paths:` (whether or not `sandbox.enabled` is
//! set), in the current directory, with the terminal's stdin, stdout and
//! stderr. Its exit status is the command's (`128 + N` for a signal death,
//! 127 when it cannot be started); a sandbox that cannot be set up is an
//! error on stderr, exit 2, and nothing runs.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::{CliError, ConfigArgs};
use crate::{load_policy, CompileOptions, Workspace};

/// Runs `argv` confined.
pub fn run(config: &ConfigArgs, workspace: &Path, argv: &[OsString]) -> Result<ExitCode, CliError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(CliError::usage(
            "toolgate sandbox needs a command: `toolgate sandbox -- CMD [ARGS...]`",
        ));
    };
    let policy =
        load_policy(&config.paths(), &CompileOptions::default()).map_err(CliError::Config)?;
    let ws = Workspace::new(workspace).map_err(|e| {
        CliError::usage(format!(
            "the workspace `{}` cannot be opened: {e}",
            workspace.display()
        ))
    })?;
    let plan = policy.sandbox_plan_always(&ws);
    let prepared = Arc::new(
        plan.prepare_once()
            .map_err(|e| CliError::usage(format!("sandbox: {e}")))?,
    );
    if !prepared.not_enforced().is_empty() {
        eprintln!(
            "toolgate sandbox: running with less confinement than the policy asks: {}",
            prepared.not_enforced().join("; ")
        );
    }
    let mut command = std::process::Command::new(program);
    command.args(args);
    prepared.attach(&mut command);
    let status = match command.status() {
        Ok(status) => status,
        Err(e) => {
            eprintln!(
                "toolgate sandbox: {} cannot be started: {e}",
                program.to_string_lossy()
            );
            return Ok(ExitCode::from(127));
        }
    };
    drop(prepared);
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
