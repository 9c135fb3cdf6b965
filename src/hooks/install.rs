//! `toolgate hook install claude|codex|gemini`: the settings that register
//! toolgate as a CLI's before- and after-tool hook.
//!
//! Without `--write` the snippet is printed. With it, the snippet is merged
//! into the settings file: every other setting and every other hook stays as
//! it was, an earlier toolgate entry for the same CLI is replaced rather than
//! duplicated (so installing twice changes nothing), the previous file is kept
//! as a numbered backup that is never overwritten, and the new file replaces
//! the old one in one rename, so a crash never leaves half a file.
//!
//! | CLI | project file | user file | timeout unit | matcher (every tool) |
//! |---|---|---|---|---|
//! | Claude Code | `.claude/settings.json` | `~/.claude/settings.json` | seconds | `*` |
//! | Codex | `.codex/hooks.json` | `$CODEX_HOME/hooks.json` (`~/.codex`) | seconds | `.*` |
//! | Gemini CLI | `.gemini/settings.json` | `~/.gemini/settings.json` | milliseconds | `.*` |

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::Agent;

/// What `toolgate hook install` was asked for.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The agent CLI.
    pub agent: Agent,
    /// Register for every project of this user (in the home folder) instead
    /// of one project.
    pub user: bool,
    /// Merge into the settings file instead of printing the snippet.
    pub write: bool,
    /// The project folder, for a project install.
    pub dir: PathBuf,
    /// The toolgate command the CLI runs [default: this binary's absolute path].
    pub bin: Option<String>,
    /// Policy folder or file for the hook to load (written as an absolute path).
    pub policies: Option<PathBuf>,
    /// Manifest folder for the hook to load (written as an absolute path).
    pub manifests: Option<PathBuf>,
    /// The CLI's time limit for one hook run, in seconds (written in the CLI's unit).
    pub timeout: u64,
}

/// What an install did: the snippet to print (without `write`) and a note
/// for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The settings snippet, for stdout, when it was not written.
    pub snippet: Option<String>,
    /// What happened, for stderr ("" when there is nothing to say).
    pub note: String,
}

/// Installs the hook settings, or, without `write`, says what to merge.
pub fn install(args: &InstallOptions) -> Result<Installed, String> {
    let hook = hook_command(args)?;
    let snippet = snippet(args.agent, &hook, args.timeout);
    let file = settings_file(args)?;
    if !args.write {
        let text = serde_json::to_string_pretty(&snippet).unwrap_or_default();
        return Ok(Installed {
            snippet: Some(text),
            note: format!(
                "toolgate: merge this into {}, or run again with --write to do it (a backup is kept)",
                file.display()
            ),
        });
    }
    write_settings(args, &file, &snippet).map(|note| Installed {
        snippet: None,
        note,
    })
}

fn write_settings(args: &InstallOptions, file: &Path, snippet: &Value) -> Result<String, String> {
    let file = file.to_path_buf();
    let (existing, original) = match std::fs::read(&file) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| {
                format!("{} is not UTF-8 text; nothing was changed", file.display())
            })?;
            let value = if text.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str::<Value>(&text).map_err(|e| {
                    format!("{} is not valid JSON ({e}); fix it, or merge the snippet by hand (run without --write to print it); nothing was changed", file.display())
                })?
            };
            (value, Some(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (json!({}), None),
        Err(e) => return Err(format!("{}: {e}; nothing was changed", file.display())),
    };
    let merged = merge(existing.clone(), args.agent, snippet)
        .map_err(|e| format!("{}: {e}; nothing was changed", file.display()))?;
    if original.is_some() && merged == existing {
        return Ok(format!(
            "toolgate: {} already registers this hook; nothing was changed",
            file.display()
        ));
    }
    let backup = match &original {
        Some(text) => Some(write_backup(&file, text)?),
        None => None,
    };
    let mut text = serde_json::to_string_pretty(&merged).unwrap_or_default();
    text.push('\n');
    write_atomically(&file, &text)?;
    Ok(match backup {
        Some(b) => format!(
            "toolgate: registered in {} (previous version kept as {})",
            file.display(),
            b.display()
        ),
        None => format!("toolgate: registered in {}", file.display()),
    })
}

/// The shell command the CLI runs for each call.
fn hook_command(args: &InstallOptions) -> Result<String, String> {
    let bin = match &args.bin {
        Some(b) => b.clone(),
        None => {
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this binary's path ({e}); pass --bin"))?;
            quote(&exe.display().to_string())
        }
    };
    let mut cmd = format!("{bin} hook {}", args.agent.key());
    // Pin the workspace to the project the CLI was started in, rather than
    // whatever directory a command last moved the session to.
    match args.agent {
        Agent::Claude => cmd.push_str(" --workspace \"$CLAUDE_PROJECT_DIR\""),
        Agent::Gemini => cmd.push_str(" --workspace \"$GEMINI_PROJECT_DIR\""),
        Agent::Codex => {}
    }
    for (flag, path) in [
        ("--policies", &args.policies),
        ("--manifests", &args.manifests),
    ] {
        if let Some(p) = path {
            let abs = std::path::absolute(p).map_err(|e| format!("{flag} {}: {e}", p.display()))?;
            cmd.push_str(&format!(" {flag} {}", quote(&abs.display().to_string())));
        }
    }
    // Answer (deny) well before the CLI gives up on the hook and lets the call run.
    let deadline_ms = args.timeout * 500;
    if deadline_ms != 5000 {
        cmd.push_str(&format!(" --deadline-ms {deadline_ms}"));
    }
    Ok(cmd)
}

/// `s` as one shell word.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The settings object that registers `command` for both events.
pub fn snippet(agent: Agent, command: &str, timeout_secs: u64) -> Value {
    let (matcher, hook) = match agent {
        Agent::Claude => (
            "*",
            json!({ "type": "command", "command": command, "timeout": timeout_secs }),
        ),
        Agent::Codex => (
            ".*",
            json!({ "type": "command", "command": command, "timeout": timeout_secs }),
        ),
        Agent::Gemini => (
            ".*",
            json!({ "name": "toolgate", "type": "command", "command": command, "timeout": timeout_secs * 1000 }),
        ),
    };
    let mut events = Map::new();
    for event in agent.event_names() {
        events.insert(
            event.to_string(),
            json!([{ "matcher": matcher, "hooks": [hook.clone()] }]),
        );
    }
    json!({ "hooks": events })
}

fn settings_file(args: &InstallOptions) -> Result<PathBuf, String> {
    let name = match args.agent {
        Agent::Claude => (".claude", "settings.json"),
        Agent::Codex => (".codex", "hooks.json"),
        Agent::Gemini => (".gemini", "settings.json"),
    };
    if !args.user {
        return Ok(args.dir.join(name.0).join(name.1));
    }
    if args.agent == Agent::Codex {
        if let Some(home) = std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            return Ok(PathBuf::from(home).join(name.1));
        }
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set, so the user settings cannot be found; use --project --dir DIR")?;
    Ok(PathBuf::from(home).join(name.0).join(name.1))
}

/// True for a hook entry that runs `toolgate hook AGENT` (by any path,
/// quoted or not, after any prefix such as `env`).
fn is_ours(hook: &Value, agent: Agent) -> bool {
    let Some(cmd) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let words: Vec<&str> = cmd
        .split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']))
        .collect();
    words
        .windows(3)
        .any(|w| w[0].ends_with("toolgate") && w[1] == "hook" && w[2] == agent.key())
}

/// `settings` with `snippet`'s hooks in place of any earlier toolgate entry
/// for `agent`; everything else is kept in its order.
pub fn merge(mut settings: Value, agent: Agent, snippet: &Value) -> Result<Value, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the settings file does not hold a JSON object")?;
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let hooks = hooks
        .as_object_mut()
        .ok_or("`hooks` is not a JSON object")?;
    for (event, groups) in snippet["hooks"].as_object().into_iter().flatten() {
        let list = hooks.entry(event.clone()).or_insert_with(|| json!([]));
        let list = list
            .as_array_mut()
            .ok_or_else(|| format!("`hooks.{event}` is not a JSON array"))?;
        // Drop earlier toolgate entries (and the groups they leave empty),
        // then append the new ones: installing twice gives the same file.
        for group in list.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| !is_ours(h, agent));
            }
        }
        list.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|inner| !inner.is_empty())
        });
        list.extend(groups.as_array().into_iter().flatten().cloned());
    }
    Ok(settings)
}

/// Keeps `text` as `FILE.bak`, or `FILE.bak.N` with the first free N.
fn write_backup(file: &Path, text: &str) -> Result<PathBuf, String> {
    let base = file.as_os_str().to_os_string();
    for n in 0..1000 {
        let mut name = base.clone();
        name.push(if n == 0 {
            ".bak".to_string()
        } else {
            format!(".bak.{n}")
        });
        let path = PathBuf::from(name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("backup {}: {e}; nothing was changed", path.display()))?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "backup {}: {e}; nothing was changed",
                    path.display()
                ))
            }
        }
    }
    Err(format!(
        "too many backups of {}; nothing was changed",
        file.display()
    ))
}

/// Writes `text` to a temporary file beside `file`, then renames it over
/// `file`, keeping the old file's permissions.
fn write_atomically(file: &Path, text: &str) -> Result<(), String> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("{}: {e}", tmp.path().display()))?;
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(file)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_other_hooks_and_is_idempotent() {
        let existing = json!({
            "model": "opus",
            "hooks": {
                "PreToolUse": [
                    { "matcher": "Bash", "hooks": [
                        { "type": "command", "command": "./lint.sh" },
                        { "type": "command", "command": "/old/toolgate hook claude" }
                    ] },
                    { "matcher": "*", "hooks": [{ "type": "command", "command": "'/x y/toolgate' hook claude --policies p" }] }
                ],
                "Stop": [{ "hooks": [{ "type": "command", "command": "notify" }] }]
            }
        });
        let s = snippet(Agent::Claude, "toolgate hook claude", 10);
        let once = merge(existing, Agent::Claude, &s).unwrap();
        let twice = merge(once.clone(), Agent::Claude, &s).unwrap();
        assert_eq!(once, twice);
        assert_eq!(once["model"], "opus");
        assert_eq!(once["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
        let pre = once["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "{pre:?}");
        assert_eq!(
            pre[0]["hooks"],
            json!([{ "type": "command", "command": "./lint.sh" }])
        );
        assert_eq!(pre[1]["hooks"][0]["command"], "toolgate hook claude");
        assert_eq!(once["hooks"]["PostToolUse"][0]["matcher"], "*");
    }

    #[test]
    fn another_clis_entry_is_not_ours() {
        let codex = json!({ "command": "toolgate hook codex" });
        assert!(!is_ours(&codex, Agent::Claude));
        assert!(is_ours(&codex, Agent::Codex));
        assert!(!is_ours(
            &json!({ "command": "mytool hook codex" }),
            Agent::Codex
        ));
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(quote("/usr/local/bin/toolgate"), "/usr/local/bin/toolgate");
        assert_eq!(quote("/My Tools/toolgate"), "'/My Tools/toolgate'");
        assert_eq!(quote("/a'b"), r"'/a'\''b'");
    }
}
