//! With `sandbox.enabled`, an agent CLI's own shell runs confined too: an
//! allowed (or asked) shell call is answered with its input rewritten so
//! that the command runs under `toolgate sandbox`.
//!
//! The CLI runs the new command with its shell (`bash -c NEW`). `NEW` is
//! `'TOOLGATE' sandbox --policies 'P' --manifests 'M' --workspace 'W' --
//! bash -c 'ORIGINAL'`, every word single-quoted, so the CLI's shell hands
//! the original to `bash -c` as one argument, byte for byte, and nothing is
//! parsed twice. Claude Code (`Bash`), Codex (`Bash`) and Gemini CLI
//! (`run_shell_command`) all name the script `command`.

use std::path::Path;

use serde_json::{Map, Value};

use super::{Agent, HookOptions};
use crate::config::ConfigPaths;

/// The CLI's shell tool, whose `command` is rewritten.
fn shell_tool(agent: Agent) -> &'static str {
    match agent {
        Agent::Claude | Agent::Codex => "Bash",
        Agent::Gemini => "run_shell_command",
    }
}

/// `word` as one POSIX shell word: single quotes, each `'` as `'\''`.
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The input with its command wrapped, or `None` when this call is not the
/// CLI's shell tool with a `command` string (then nothing is rewritten).
pub(super) fn rewrite(
    agent: Agent,
    options: &HookOptions,
    workspace: &Path,
    tool_name: &str,
    input: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, String> {
    if tool_name != shell_tool(agent) {
        return Ok(None);
    }
    let Some(command) = input.get("command").and_then(Value::as_str) else {
        return Ok(None);
    };
    let exe = std::env::current_exe().map_err(|e| {
        format!("toolgate: the sandbox is enabled, but toolgate cannot find its own program ({e}), so the command cannot be confined; the call is denied")
    })?;
    let paths = ConfigPaths {
        policies: options.policies.clone(),
        manifests: options.manifests.clone(),
    }
    .absolute();
    let mut words = vec![quote(&exe.to_string_lossy()), "sandbox".to_string()];
    for (flag, path) in [
        ("--policies", &paths.policies),
        ("--manifests", &paths.manifests),
    ] {
        if let Some(p) = path {
            words.push(flag.to_string());
            words.push(quote(&p.to_string_lossy()));
        }
    }
    words.push("--workspace".to_string());
    words.push(quote(&workspace.to_string_lossy()));
    words.extend(["--", "bash", "-c"].map(String::from));
    words.push(quote(command));
    let mut out = input.clone();
    out.insert("command".to_string(), Value::String(words.join(" ")));
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_every_byte() {
        for word in ["plain", "it's", "a'b'c", "$(x) `y` \"z\" \\ \n", ""] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
    }
}
