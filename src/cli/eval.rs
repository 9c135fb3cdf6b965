//! `toolgate eval`: decide calls without running them; one JSON verdict per
//! call.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::error::load;
use super::input::{open_workspace, parse_call, read_file, single_call};
use super::{CliError, ConfigArgs};
use crate::ToolCall;

/// Runs `eval`: 0 evaluated, 2 usage or configuration error (nothing on
/// stdout).
pub fn run(
    config: &ConfigArgs,
    workspace: &Path,
    profile: Option<String>,
    tool: Option<String>,
    args: Option<String>,
    call: Option<PathBuf>,
    calls: Option<PathBuf>,
) -> Result<ExitCode, CliError> {
    // Parse every call before deciding any, so a bad line never leaves half an answer.
    let parsed: Vec<ToolCall> =
        match (tool, args, call, calls) {
            (Some(name), Some(args), None, None) => vec![single_call(name, &args)?],
            (None, None, Some(file), None) => {
                let text = read_file(&file)?;
                vec![parse_call(&text)
                    .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?]
            }
            (None, None, None, Some(file)) => {
                let text = read_file(&file)?;
                let mut out = Vec::new();
                for (i, line) in text
                    .lines()
                    .enumerate()
                    .filter(|(_, l)| !l.trim().is_empty())
                {
                    out.push(parse_call(line).map_err(|e| {
                        CliError::usage(format!("{}:{}: {e}", file.display(), i + 1))
                    })?);
                }
                out
            }
            _ => {
                return Err(CliError::usage(
                    "give one of --tool NAME --args JSON, --call FILE or --calls FILE.jsonl",
                ))
            }
        };
    let policy = load(&config.paths(), profile)?;
    let ws = open_workspace(workspace)?;
    let mut out = std::io::stdout().lock();
    for call in &parsed {
        let verdict = policy.evaluate(&ws, call);
        let line = serde_json::to_string(&verdict).unwrap_or_default();
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}
