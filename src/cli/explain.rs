//! `toolgate explain`: the whole reasoning for one call — what the policy
//! saw (simple commands, resolved paths), every finding with the policy
//! file and line of its rule, and which one decided.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueEnum;
use serde_json::{json, Value};

use super::error::load;
use super::identity::identity_for;
use super::input::{open_workspace, parse_call, read_file, single_call};
use super::{CliError, ConfigArgs};
use crate::config::Loaded;
use crate::policy::explain::{ExplainedPath, Explanation};

/// How the explanation is printed.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExplainFormat {
    /// Text for a person.
    Human,
    /// One JSON document.
    Json,
}

/// `explain`'s flags.
#[derive(clap::Args)]
pub(crate) struct Flags {
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    /// The workspace paths are resolved against.
    #[arg(long, default_value = ".")]
    pub(crate) workspace: PathBuf,
    /// Use this profile's active tools (with --identity: that caller's
    /// profile).
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// Decide as this caller (a token id or JWT identity): rules scoped with
    /// `identities:` apply to it, and its profile (--profile, else its
    /// token's in `auth.tokens`) sets the active tools.
    #[arg(long, value_name = "ID")]
    pub(crate) identity: Option<String>,
    /// The tool called (with --args).
    #[arg(long, requires = "args", conflicts_with = "call")]
    pub(crate) tool: Option<String>,
    /// The arguments, a JSON object (with --tool).
    #[arg(long, requires = "tool")]
    pub(crate) args: Option<String>,
    /// A file (or - for stdin) holding one call: {"name": …, "arguments": {…}}.
    #[arg(long)]
    pub(crate) call: Option<PathBuf>,
    /// The directory a command runs in, relative to the workspace (as an
    /// agent CLI's working directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) workdir: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub(crate) format: ExplainFormat,
}

/// Runs `explain`: 0 explained, 2 usage or configuration error.
pub(crate) fn run(flags: Flags) -> Result<ExitCode, CliError> {
    let call = match (flags.tool, flags.args, &flags.call) {
        (Some(name), Some(args), None) => single_call(name, &args)?,
        (None, None, Some(file)) => {
            let text = read_file(file)?;
            parse_call(&text).map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?
        }
        _ => {
            return Err(CliError::usage(
                "give --tool NAME --args JSON, or --call FILE",
            ))
        }
    };
    let paths = flags.config.paths();
    let policy = load(&paths, flags.profile.clone())?;
    let identity = flags
        .identity
        .as_deref()
        .map(|id| identity_for(&policy, id, flags.profile.as_deref()));
    // The files again, with their positions: only to turn a rule's key path
    // into a line (a policy that compiled loads).
    let loaded = crate::config::load(&paths).map_err(CliError::Config)?;
    let ws = open_workspace(&flags.workspace)?;
    let explanation = policy.explain_as(&ws, &call, flags.workdir.as_deref(), identity.as_ref());
    let doc = to_json(&explanation, &loaded);
    let text = match flags.format {
        ExplainFormat::Json => format!("{doc}\n"),
        ExplainFormat::Human => human(&explanation, &doc, &call.name, &call.arguments),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The line `at` (a key path) names in `file`.
fn line_of(loaded: &Loaded, file: &str, at: &str) -> Option<usize> {
    let layer = loaded.layers.iter().find(|l| l.file.name == file)?;
    let pos = layer.map.value(at);
    (pos.line > 0).then_some(pos.line)
}

/// The JSON document: findings carry `file` and `line`; each command lists
/// its own findings in full.
fn to_json(e: &Explanation, loaded: &Loaded) -> Value {
    let findings: Vec<Value> = e
        .findings
        .iter()
        .map(|f| {
            let line = match (&f.file, &f.at) {
                (Some(file), Some(at)) => line_of(loaded, file, at),
                _ => None,
            };
            json!({
                "source": f.source, "decision": f.decision, "rule": f.rule,
                "reason": f.reason, "file": f.file, "line": line, "terminate": f.terminate,
            })
        })
        .collect();
    let commands: Vec<Value> = e
        .commands
        .iter()
        .map(|c| {
            json!({
                "words": c.words,
                "wrapper": c.wrapper,
                "files": c.files,
                "findings": c.findings.iter().map(|i| findings[*i].clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "tool": e.tool,
        "identity": e.identity,
        "status": e.status,
        "decision": e.decision,
        "rule": e.rule,
        "reason": e.reason,
        "terminate": e.terminate,
        "why": e.why,
        "decided_by": e.decided_by,
        "commands": commands,
        "unparsed": e.unparsed,
        "inline_code": e.inline_code,
        "paths": e.paths,
        "findings": findings,
        "audit": e.audit,
    })
}

fn path_line(p: &ExplainedPath) -> String {
    match (&p.lexical, &p.real, &p.error) {
        (_, _, Some(err)) => format!("{} `{}`: cannot be resolved ({err})", p.source, p.raw),
        (Some(lexical), Some(real), _) if p.through_symlink => format!(
            "{} `{}` -> {lexical} -> {real} (through a symlink), {}",
            p.source, p.raw, p.access
        ),
        (Some(lexical), _, _) => format!("{} `{}` -> {lexical}, {}", p.source, p.raw, p.access),
        _ => format!("{} `{}`", p.source, p.raw),
    }
}

fn finding_line(f: &Value) -> String {
    let at = match (f["file"].as_str(), f["line"].as_u64()) {
        (Some(file), Some(line)) => format!(" ({file}:{line})"),
        (Some(file), None) => format!(" ({file})"),
        _ => String::new(),
    };
    format!(
        "{} {}{at} [{}]: {}",
        f["decision"].as_str().unwrap_or_default(),
        f["rule"].as_str().unwrap_or_default(),
        f["source"].as_str().unwrap_or_default(),
        f["reason"].as_str().unwrap_or_default()
    )
}

fn human(e: &Explanation, doc: &Value, name: &str, arguments: &Value) -> String {
    let mut out = String::new();
    let rule = e
        .rule
        .as_deref()
        .map(|r| format!(" by {r}"))
        .unwrap_or_default();
    out.push_str(&format!(
        "{name} {arguments}\n=> {}{rule}{}\n   {}\n   why: {}\n",
        e.decision.as_str(),
        if e.terminate { " (ends the batch)" } else { "" },
        e.reason,
        e.why
    ));
    if let Some(who) = &e.identity {
        let profile = who
            .profile
            .as_deref()
            .map(|p| format!(", profile {p}"))
            .unwrap_or_default();
        out.push_str(&format!("\ncaller: {}{profile}\n", who.id));
    }
    out.push_str(&format!("\ntool {name}: {}\n", e.status));
    if !e.commands.is_empty() {
        out.push_str("\ncommands (after parsing):\n");
        for (i, c) in e.commands.iter().enumerate() {
            let wrapper = if c.wrapper {
                "   (wrapper; the command it runs follows)"
            } else {
                ""
            };
            out.push_str(&format!(
                "  {}. {}{wrapper}\n",
                i + 1,
                shell_words(&c.words)
            ));
            for p in &c.files {
                out.push_str(&format!("       {}\n", path_line(p)));
            }
        }
    }
    for u in &e.unparsed {
        out.push_str(&format!("  not accounted for: {u}\n"));
    }
    for u in &e.inline_code {
        out.push_str(&format!("  interpreter code: {u}\n"));
    }
    if !e.paths.is_empty() {
        out.push_str("\npaths:\n");
        for p in &e.paths {
            out.push_str(&format!("  {}\n", path_line(p)));
        }
    }
    out.push_str("\nfindings (in the order checked):\n");
    let findings = doc["findings"].as_array().cloned().unwrap_or_default();
    if findings.is_empty() {
        out.push_str("  none\n");
    }
    for (i, f) in findings.iter().enumerate() {
        let mark = if e.decided_by == Some(i) { "=>" } else { "  " };
        out.push_str(&format!("{mark} {}. {}\n", i + 1, finding_line(f)));
    }
    if !e.audit.is_empty() {
        out.push_str("\naudit-only entries (recorded, never decisive):\n");
        for a in &e.audit {
            out.push_str(&format!(
                "  {} {}: {}\n",
                a.decision.as_str(),
                a.rule,
                a.reason
            ));
        }
    }
    out
}

/// Words joined for reading, quoted where a word has spaces or is empty.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                format!("'{}'", w.replace('\'', r"'\''"))
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::shell_words;

    #[test]
    fn words_with_spaces_are_quoted() {
        let w = |s: &[&str]| shell_words(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(
            w(&["git", "commit", "-m", "fix it"]),
            "git commit -m 'fix it'"
        );
        assert_eq!(w(&["echo", ""]), "echo ''");
        assert_eq!(w(&["echo", "it's"]), r"echo 'it'\''s'");
    }
}
