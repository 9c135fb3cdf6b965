//! `toolgate check`: load and compile the policy and manifests; report every
//! problem of every file.

use std::io::Write;
use std::process::ExitCode;

use super::{CliError, ConfigArgs, Format};
use crate::config;
use crate::{compile, CompileOptions};

/// Runs `check`: 0 clean, 1 errors.
pub fn run(config: &ConfigArgs, format: Format) -> Result<ExitCode, CliError> {
    // Compile whatever loaded even when some files did not, so one run shows
    // every problem of every file.
    let (loaded, mut diags) = config::load_all(&config.paths());
    let result = match compile(&loaded, &CompileOptions::default()) {
        Ok(p) if diags.is_empty() => Ok(p),
        Ok(_) => Err(diags),
        Err(more) => {
            diags.extend(more);
            Err(diags)
        }
    };
    // Imported rules are built lazily; `check` builds them to list any that fail.
    let warnings = result
        .as_ref()
        .map(|p| p.all_warnings())
        .unwrap_or_default();
    let mut out = std::io::stdout().lock();
    match format {
        Format::Human => write!(out, "{}", warnings.to_human_warnings())?,
        Format::Github => write!(out, "{}", warnings.to_github_warnings())?,
        Format::Json => {}
    }
    match (&result, format) {
        (Ok(p), Format::Human | Format::Github) => {
            writeln!(out, "ok: policy {}", p.summary())?;
        }
        (Err(d), Format::Human) => {
            write!(out, "{}", d.to_human())?;
            writeln!(
                out,
                "{} error{}",
                d.len(),
                if d.len() == 1 { "" } else { "s" }
            )?;
        }
        (Err(d), Format::Github) => write!(out, "{}", d.to_github())?,
        (_, Format::Json) => {
            let json = match &result {
                Ok(p) => {
                    serde_json::json!({"ok": true, "version": p.version(), "files": p.files(), "active_tools": p.active_tools(), "errors": [], "warnings": warnings.0})
                }
                Err(d) => serde_json::json!({"ok": false, "errors": d.0}),
            };
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json).unwrap_or_default()
            )?;
        }
    }
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
