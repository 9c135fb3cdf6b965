//! `toolgate check`: load and compile the policy and manifests; report every
//! problem of every file.

use std::io::Write;
use std::process::ExitCode;

use super::{CliError, ConfigArgs, Format};
use crate::config;
use crate::confine::{Network, Support, SYSTEM_READ, SYSTEM_WRITE};
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
            if p.sandbox_settings().enabled {
                write!(out, "{}", sandbox_report(p))?;
            }
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
                    let mut json = serde_json::json!({"ok": true, "version": p.version(), "files": p.files(), "active_tools": p.active_tools(), "errors": [], "warnings": warnings.0});
                    if p.sandbox_settings().enabled {
                        json["sandbox"] = sandbox_json(p);
                    }
                    json
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

/// What the kernel enforces of the policy's `sandbox:` here, in lines.
fn sandbox_report(p: &crate::Policy) -> String {
    let s = p.sandbox_settings();
    let support = Support::probe();
    let mut text = format!(
        "sandbox: enabled, network {}, required {}\n",
        if s.network == Network::Deny {
            "deny"
        } else {
            "allow"
        },
        s.required
    );
    for line in support.describe() {
        text.push_str(&format!("  kernel: {line}\n"));
    }
    text.push_str(&format!(
        "  always readable: {}\n  always writable: {}, and a private TMPDIR\n",
        SYSTEM_READ.join(" "),
        SYSTEM_WRITE.join(" ")
    ));
    let gaps = not_enforced(p, &support);
    if gaps.is_empty() {
        text.push_str("  enforced: everything the policy asks\n");
    }
    for gap in gaps {
        let what = if s.required {
            "calls fail"
        } else {
            "not enforced"
        };
        text.push_str(&format!("  {what}: {gap}\n"));
    }
    text
}

fn not_enforced(p: &crate::Policy, support: &Support) -> Vec<String> {
    let ws = crate::Workspace::new(".");
    let covers = !p.paths_deny_is_empty_for_sandbox();
    match ws {
        Ok(ws) => p.sandbox_plan_always(&ws).gaps(support, covers),
        Err(e) => vec![format!("the current directory cannot be opened: {e}")],
    }
}

fn sandbox_json(p: &crate::Policy) -> serde_json::Value {
    let support = Support::probe();
    serde_json::json!({
        "landlock_abi": support.landlock_abi,
        "seccomp": support.seccomp,
        "mount_namespace": support.mount_namespace,
        "user_namespace": support.user_namespace,
        "system_read": SYSTEM_READ,
        "system_write": SYSTEM_WRITE,
        "not_enforced": not_enforced(p, &support),
    })
}
