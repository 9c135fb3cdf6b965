//! The policy file format (`policies/*.yaml`), as serde structs.
//!
//! These types say what a file may contain; what it *means* is decided by
//! [`crate::policy::compile`]. Every struct rejects unknown fields, because a
//! misspelt `comands:` that is silently ignored is a policy that does not mean
//! what its author thinks.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::condition::{parse_byte_size, ByteSize, Condition};
use super::results_file::ResultRuleSpec;

/// The three decisions a before-rule can make.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The call runs.
    Allow,
    /// The call needs a person's approval.
    Ask,
    /// The call does not run.
    Deny,
}

impl Decision {
    /// The lowercase name used in files and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// What a call to a tool that no manifest describes gets (hook mode: the
/// agent CLI's own tools, such as `TodoWrite`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum UnknownToolDecision {
    /// Say nothing and let the agent CLI decide.
    Defer,
    /// Allow the call.
    Allow,
    /// Ask a person.
    Ask,
    /// Deny the call.
    Deny,
}

/// Whether an entry decides calls or is only recorded (`mode:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The entry decides (the default).
    #[default]
    Enforce,
    /// Shadow mode: what the entry would decide is recorded (decision log,
    /// metrics, `replay --enforce-audit`) and never changes a verdict.
    Audit,
}

/// One policy file.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Format version; must be 1.
    pub version: u32,
    /// `audit` makes every command entry and rule of this file audit-only;
    /// such a file holds only `commands` lists and `rules`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Other policy files this one builds on, relative to this file. Layers
    /// combine deny-overrides: a stricter decision in any layer wins.
    #[serde(default)]
    pub extends: Vec<String>,
    /// Which tools exist for the model.
    #[serde(default)]
    pub tools: Option<ToolsSection>,
    /// Path confinement for every argument a manifest declares as a path.
    #[serde(default)]
    pub paths: Option<PathsSection>,
    /// Shell command rules for every argument a manifest declares as a command.
    #[serde(default)]
    pub commands: Option<CommandsSection>,
    /// Conditions on any tool's arguments.
    #[serde(default)]
    pub rules: Vec<RuleSpec>,
    /// After-rules on results: checked in order after every call (after
    /// redaction); the first whose condition holds applies its actions.
    #[serde(default)]
    pub results: Vec<ResultRuleSpec>,
    /// Secret redaction applied to tool output.
    #[serde(default)]
    pub redact: Option<RedactSection>,
    /// Tools whose successful call ends the batch.
    #[serde(default)]
    pub terminate: Option<TerminateSection>,
    /// Output and time limits.
    #[serde(default)]
    pub limits: Option<LimitsSection>,
    /// Authentication of HTTP callers: static tokens, JWTs, and which
    /// profile each identity gets.
    #[serde(default)]
    pub auth: Option<super::auth_file::AuthSection>,
    /// Kernel confinement of what bash and exec tools run.
    #[serde(default)]
    pub sandbox: Option<SandboxSection>,
}

/// The top-level keys of a policy file, for "did you mean" hints.
pub const POLICY_FIELDS: &[&str] = &[
    "version",
    "extends",
    "mode",
    "tools",
    "paths",
    "commands",
    "rules",
    "results",
    "redact",
    "terminate",
    "limits",
    "auth",
    "sandbox",
];

/// `tools:` — the active-tool set and named profiles.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// Tools the model sees. A tool not listed does not exist for it.
    #[serde(default)]
    pub active: Option<Vec<String>>,
    /// Named alternative active sets, chosen with `--profile`.
    #[serde(default)]
    pub profiles: BTreeMap<String, Vec<String>>,
    /// Decision for a tool no manifest describes.
    #[serde(default)]
    pub unknown: Option<UnknownToolDecision>,
}

/// `paths:` — confinement of path arguments and of file words in commands.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathsSection {
    /// Directories, relative to the workspace, that paths must stay inside.
    #[serde(default)]
    pub roots: Option<Vec<String>>,
    /// Globs (workspace-relative, `*` does not cross `/`) that are never touched.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Globs that may be read but not written.
    #[serde(default)]
    pub read_only: Vec<String>,
}

/// `commands:` — shell command lists.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandsSection {
    /// Commands that are allowed (matched as a prefix of the command's words).
    #[serde(default)]
    pub allow: Vec<CommandEntry>,
    /// Commands that need approval (matched anywhere in the command's words).
    #[serde(default)]
    pub ask: Vec<CommandEntry>,
    /// Commands that are denied (matched anywhere in the command's words).
    #[serde(default)]
    pub deny: Vec<CommandEntry>,
    /// Decision for a script the parser cannot fully account for.
    #[serde(default)]
    pub unparsed: Option<Decision>,
    /// Decision for a simple command that matches no list.
    #[serde(default)]
    pub default: Option<Decision>,
    /// Options that make a program run another program, load code or write
    /// a file, added to the shipped table (docs/escape-hatches.md), by
    /// program name: `{ mytool: ["--hook", "-x"] }` (each value is judged
    /// as a program run on input it chooses) or `{ mytool: { --hook: command } }`.
    #[serde(default)]
    pub exec_options: BTreeMap<String, ExecOptions>,
    /// Environment variables that do the same, added to the shipped table:
    /// `["MYTOOL_HOOK", "MYTOOL_*"]` or `{ MYTOOL_HOOK: command }`. Set
    /// before a command, in `env`, or by `export`, their value is judged.
    #[serde(default)]
    pub exec_env: Option<ExecEnv>,
    /// Environment variables whose values are known: `$NAME`, `${NAME}` and
    /// `${NAME:-literal}` in a command take toolgate's own value of NAME
    /// instead of counting as unparsed (unset: still unparsed, unless a
    /// `:-` default is given). Also usable as `$NAME` in `unless.operands_under`.
    #[serde(default)]
    pub variables: Vec<String>,
    /// Decision for code given to an interpreter (`python -c`, `node -e`,
    /// `perl -e`, a heredoc into `ruby`, ...) that toolgate cannot fully
    /// account for; shell commands and file operations it recognizes in the
    /// code are judged as commands either way (docs/policy-language.md).
    /// Unset: the `unparsed` decision.
    #[serde(default)]
    pub inline_code: Option<Decision>,
}

/// What the value of an exec option or variable does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecKind {
    /// A shell command string: analyzed like `bash -c VALUE`.
    Command,
    /// A program run on input it chooses: analyzed like `bash -c VALUE`, and
    /// given the `commands.unparsed` decision too.
    Program,
    /// Code or configuration that cannot be checked: `commands.unparsed`.
    Opaque,
    /// A file the program writes: checked like a path written to.
    Write,
    /// (Options only) the following words, up to `;` or `+`, are a command,
    /// like `find -exec`.
    Argv,
}

impl ExecKind {
    /// Every kind, as written in a policy.
    pub const NAMES: &'static [&'static str] = &["command", "program", "opaque", "write", "argv"];

    /// The kind a policy names, if it is one.
    pub fn parse(name: &str) -> Option<ExecKind> {
        Some(match name {
            "command" => ExecKind::Command,
            "program" => ExecKind::Program,
            "opaque" => ExecKind::Opaque,
            "write" => ExecKind::Write,
            "argv" => ExecKind::Argv,
            _ => return None,
        })
    }
}

/// One program's exec options: a list of names, or names with their kind.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExecOptions {
    /// Option names (`--hook`, `-x`, `-word`, `+*`); each value is a program.
    Names(Vec<String>),
    /// Option names with what their value does (a kind is checked when the
    /// policy compiles, so a misspelt one is reported at its position).
    Kinds(#[schemars(with = "BTreeMap<String, ExecKind>")] BTreeMap<String, String>),
}

/// Exec environment variables: a list of names, or names with their kind.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExecEnv {
    /// Variable names; `NAME_*` covers every name with that prefix. Each
    /// value is a program.
    Names(Vec<String>),
    /// Variable names with what their value does.
    Kinds(#[schemars(with = "BTreeMap<String, ExecKind>")] BTreeMap<String, String>),
}

/// One command pattern: a string such as `"rm -rf"`, or an object that also
/// names the rule and says why.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CommandEntry {
    /// Just the pattern.
    Pattern(String),
    /// A pattern with its own id and reason.
    Detailed(DetailedCommand),
}

/// The object form of a command pattern.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetailedCommand {
    /// The command words, e.g. `git push --force`.
    pub pattern: String,
    /// Rule id reported with decisions (default: `commands.LIST[PATTERN]`).
    #[serde(default)]
    pub id: Option<String>,
    /// Reason given to the model.
    #[serde(default)]
    pub reason: Option<String>,
    /// Compare flags as written: no alias folding, so `--force-with-lease`
    /// and `-f` do not match `git push --force`.
    #[serde(default)]
    pub exact: bool,
    /// When the entry does not apply although the pattern matches.
    #[serde(default)]
    pub unless: Option<UnlessSpec>,
    /// `audit`: record what the entry would decide, never decide by it.
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// `unless:` on a command entry: the entry does not apply when any of
/// `flags` is present, or when every path operand is under `operands_under`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlessSpec {
    /// Single flags (`-n`, `--dry-run`), folded like the pattern's: the entry
    /// does not apply when the command has any of them.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Directories (absolute, `~/...`, workspace-relative, or `$NAME` /
    /// `$NAME/sub` for a name in `commands.variables`): the entry does not
    /// apply when the command has at least one path operand and every one
    /// resolves (`..` folded, symlinks followed) under one of them.
    #[serde(default)]
    pub operands_under: Vec<String>,
}

impl CommandEntry {
    /// The pattern text.
    pub fn pattern(&self) -> &str {
        match self {
            CommandEntry::Pattern(p) => p,
            CommandEntry::Detailed(d) => &d.pattern,
        }
    }
}

/// One argument rule.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// Unique id, reported with every decision this rule makes.
    pub id: String,
    /// Tools the rule applies to; all tools that have the rule's arguments when omitted.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The condition on the call's arguments.
    pub when: Condition,
    /// What a matching call gets.
    pub decision: Decision,
    /// Reason given to the model.
    #[serde(default)]
    pub reason: Option<String>,
    /// A matching call also ends the agent's batch.
    #[serde(default)]
    pub terminate: bool,
    /// Identities the rule applies to (globs over token ids and JWT
    /// identities, e.g. `ci-*`); every caller when omitted. A call without
    /// an identity (stdio, or HTTP without `auth`) matches none.
    #[serde(default)]
    pub identities: Option<Vec<String>>,
    /// Argument objects that must (`match`) and must not (`not_match`)
    /// satisfy `when`; checked at load, a failing example fails the file.
    #[serde(default)]
    pub examples: Option<Examples>,
    /// `audit`: record what the rule would decide, never decide by it.
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// A rule's examples.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Examples {
    /// Arguments the rule must match. A string `"<2 MB>"` stands for a string of that size.
    #[serde(default, rename = "match")]
    pub matching: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Arguments the rule must not match.
    #[serde(default)]
    pub not_match: Vec<serde_json::Map<String, serde_json::Value>>,
}

/// `redact:` — secret redaction of tool output (results, details, progress
/// updates, error messages and decision logs).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactSection {
    /// Turn on the built-in secret rules (cloud, VCS, chat, payment, AI and
    /// registry tokens, private keys, JWTs, connection strings, assignments).
    #[serde(default)]
    pub defaults: Option<bool>,
    /// Policy-specific rules.
    #[serde(default)]
    pub rules: Vec<RedactRuleConfig>,
    /// Findings that are never secrets, for every rule (built-in, policy and imported).
    #[serde(default)]
    pub allowlist: Option<RedactAllowlistConfig>,
    /// gitleaks-format TOML configs to import, relative to this file.
    #[serde(default)]
    pub gitleaks: Vec<String>,
    /// What an imported gitleaks rule whose regex cannot run here (look-around,
    /// backreferences, …) does to the load: `warn` (default: skipped, listed
    /// by `toolgate check`) or `error` (the policy does not load).
    #[serde(default)]
    pub unsupported: Option<UnsupportedRules>,
}

/// What an unsupported imported rule does to the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnsupportedRules {
    /// Skip the rule; `toolgate check` lists it as a warning.
    Warn,
    /// Fail the load.
    Error,
}

/// One redaction rule.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactRuleConfig {
    /// Id used in the replacement `[REDACTED:id]`.
    pub id: String,
    /// The secret's regex (Rust `regex` syntax). Repetitions without an upper
    /// bound are capped so that no match is longer than 4096 bytes.
    pub regex: String,
    /// Literal strings, one of which every match contains (ASCII case is
    /// ignored): the regex runs only near them. Without keywords it runs over
    /// all text.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Capture group holding the secret (0 = whole match); the rest of the
    /// match stays, e.g. `password=`.
    #[serde(default)]
    pub secret_group: usize,
    /// Minimum Shannon entropy of the secret, in bits per character (e.g.
    /// 3.5); a less random secret is left alone.
    #[serde(default)]
    pub entropy: Option<f64>,
    /// Findings of this rule that are not secrets.
    #[serde(default)]
    pub allowlist: Option<RedactAllowlistConfig>,
}

/// Findings that are not secrets: any regex or stopword that applies lets the finding through.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactAllowlistConfig {
    /// Regexes (Rust syntax) matched against `target`.
    #[serde(default)]
    pub regexes: Vec<String>,
    /// Words; a secret containing one (ignoring case) is allowed, e.g. `example`.
    #[serde(default)]
    pub stopwords: Vec<String>,
    /// What `regexes` are matched against: `secret` (default) or `match` (with context).
    #[serde(default)]
    pub target: Option<AllowlistTarget>,
}

/// What an allowlist's regexes see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AllowlistTarget {
    /// The secret only.
    Secret,
    /// The whole match, context included.
    Match,
}

/// `terminate:` — tools whose successful call ends the batch.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminateSection {
    /// Tool names.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// `limits:` — what one call, command or batch may cost. Every limit has a
/// safe default; across layers the smallest value wins.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    /// A tool call's time limit, e.g. `120s`, `2m`, `500ms` (default 120s).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Output kept per call, in bytes (default 50KB).
    #[serde(default)]
    pub max_output_bytes: Option<ByteSize>,
    /// Output kept per call, in lines (default 2000).
    #[serde(default)]
    pub max_output_lines: Option<u64>,
    /// Size of one call's arguments as compact JSON (default 4MB); a larger
    /// call is denied.
    #[serde(default)]
    pub max_argument_bytes: Option<ByteSize>,
    /// How deeply one call's arguments may nest arrays and objects (default
    /// 32, at most 100); a deeper call is denied.
    #[serde(default)]
    pub max_argument_depth: Option<u32>,
    /// Length of a shell command argument (default 64KB, at most 1MB); a
    /// longer command is denied.
    #[serde(default)]
    pub max_command_bytes: Option<ByteSize>,
    /// How deeply a shell command may nest subshells, groups, control flow,
    /// `bash -c` bodies, substitutions and wrappers (default 16, at most 64);
    /// a deeper command is denied.
    #[serde(default)]
    pub max_command_nesting: Option<u32>,
    /// Tool calls in one batch, i.e. one model message (default 64); a
    /// larger batch runs none of its calls.
    #[serde(default)]
    pub max_batch_calls: Option<u32>,
    /// Tool calls executing at once (default 16); more wait their turn.
    #[serde(default)]
    pub max_concurrent_calls: Option<u32>,
}

/// `sandbox:` — what a command that bash or an exec tool runs may touch,
/// enforced by the kernel (Landlock, a mount namespace, seccomp). The
/// writable tree is `paths.roots`; `paths.read_only` and `paths.deny` apply
/// inside it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// bash and exec tools run confined (default false).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// `deny` (default) blocks every socket but Unix sockets; `allow`
    /// leaves the network alone.
    #[serde(default)]
    pub network: Option<SandboxNetwork>,
    /// Extra read-only paths outside the roots (absolute, `~/…`, or
    /// workspace-relative). The system directories programs need are built in
    /// and listed by `toolgate check`.
    #[serde(default)]
    pub read: Vec<String>,
    /// Extra writable paths outside the roots. A private temporary directory
    /// is always given, as `TMPDIR`.
    #[serde(default)]
    pub write: Vec<String>,
    /// true (default): without the kernel support the policy needs, calls
    /// fail with an error; false: warn once and run with what is supported.
    #[serde(default)]
    pub required: Option<bool>,
}

/// `sandbox.network`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Only Unix sockets can be created.
    Deny,
    /// Any socket.
    Allow,
}

/// Parses `120s`, `2m`, `500ms`, `1h`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. `120s`, `2m` or `500ms`"))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown duration unit `{other}` in `{text}`; use ms, s, m or h"
            ))
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!(
            "duration `{text}` must be more than 0 and at most 24h"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_byte_size("1MB"), Ok(1 << 20));
        assert_eq!(parse_byte_size("2.5 KB"), Ok(2560));
        assert_eq!(parse_byte_size("100"), Ok(100));
        assert!(parse_byte_size("10 parsecs").unwrap_err().contains("unit"));
        assert_eq!(parse_duration("2m").unwrap().as_secs(), 120);
        assert_eq!(parse_duration("500ms").unwrap().as_millis(), 500);
        assert!(parse_duration("0s").is_err());
    }
}
