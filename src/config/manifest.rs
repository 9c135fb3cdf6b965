//! The tool manifest format (`tool-manifests/NAME.toml`), as serde structs.
//!
//! A manifest tells toolgate what a tool is (its JSON Schema, how it runs) and,
//! through `effects`, what the policy needs to know about its arguments: which
//! ones name files and which one holds a shell command. That is what makes path
//! confinement and command rules work for any tool, built-in or custom.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a tool may run beside others in a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// Runs concurrently with the other calls of its batch.
    #[default]
    Parallel,
    /// Makes its whole batch run one call at a time.
    Sequential,
}

/// How a path argument touches its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PathAccess {
    /// The tool reads the file or directory.
    Read,
    /// The tool creates, changes or deletes it.
    Write,
}

/// What runs when the tool is called.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Implementation {
    /// One of the built-in tools: read, write, edit, bash, grep, find, ls.
    Builtin(String),
    /// A program run directly (never through a shell), in the workspace,
    /// with a clean environment (see [`ExecOptions`]). A word that is exactly
    /// `{arg}` becomes the argument's value as one argv word (a string
    /// verbatim, a number or boolean as JSON text, an array one word per
    /// element); `{arg}` inside a longer word (`--max-count={n}`) is replaced
    /// in place. A word whose argument is absent is left out.
    Exec(Vec<String>),
    /// A tool of an upstream MCP server, made from a `[server]` manifest and
    /// the server's `tools/list` (never written in a manifest).
    #[serde(skip)]
    #[schemars(skip)]
    Upstream {
        /// The server's name.
        server: String,
        /// The upstream's own name of the tool.
        tool: String,
    },
}

/// One tool manifest.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The tool's name as the model calls it.
    pub name: String,
    /// A short human-readable title.
    #[serde(default)]
    pub label: Option<String>,
    /// What the tool does, shown to the model.
    pub description: String,
    /// Whether the tool may run concurrently with others.
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    /// What runs.
    pub implementation: Implementation,
    /// JSON Schema (2020-12) of the arguments, written as TOML.
    pub parameters: serde_json::Value,
    /// What the arguments mean to the policy.
    #[serde(default)]
    pub effects: Effects,
    /// Declarative argument migrations applied before validation.
    #[serde(default)]
    pub prepare: Vec<PrepareStep>,
    /// How hook adapters map an agent CLI's own tools onto this one, by CLI:
    /// `claude`, `codex`, `gemini`, or `mcp` for MCP tools (which all three
    /// CLIs name `mcp__SERVER__TOOL`).
    #[serde(default)]
    pub dialects: BTreeMap<String, DialectEntries>,
    /// `[exec]`: how an exec tool's program runs (only with
    /// `implementation = { exec = [...] }`).
    #[serde(default)]
    pub exec: Option<ExecOptions>,
}

/// The manifest's `[exec]` table: the environment and output format of an
/// exec tool's program.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecOptions {
    /// Environment variables passed through from the gateway's environment;
    /// every other variable is removed. Default `["PATH"]`; `[]` runs the
    /// program with an empty environment.
    #[serde(default = "default_exec_env")]
    pub env: Vec<String>,
    /// How the program's output becomes the result.
    #[serde(default)]
    pub output: ExecOutput,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            env: default_exec_env(),
            output: ExecOutput::default(),
        }
    }
}

fn default_exec_env() -> Vec<String> {
    vec!["PATH".to_string()]
}

/// How an exec tool's output becomes its result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecOutput {
    /// stdout and stderr merged into one text block, tail-truncated like
    /// bash's, the full output kept in a temp file when cut.
    #[default]
    Text,
    /// stdout is a JSON array of MCP content blocks (`text`, `image`,
    /// `audio`, `resource`) that become the result's content; stderr is only
    /// shown when the program fails.
    Content,
}

/// One piece of an exec word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecWordPart {
    /// Literal text (with `{{` and `}}` already turned into braces).
    Text(String),
    /// `{name}`: the value of argument `name`.
    Arg(String),
}

/// Splits an exec word into literal text and `{name}` placeholders. `name`
/// is a letter or `_` followed by letters, digits, `_` or `-`; any other
/// brace is literal (so `find -exec {} ;` keeps its `{}`), and `{{` / `}}`
/// write a literal brace where a placeholder would otherwise be read.
pub fn parse_exec_word(word: &str) -> Vec<ExecWordPart> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = word;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{{") || rest.starts_with("}}") {
            text.push(c);
            rest = &rest[2..];
            continue;
        }
        if c == '{' {
            if let Some(end) = rest.find('}') {
                let name = &rest[1..end];
                if is_placeholder_name(name) {
                    if !text.is_empty() {
                        parts.push(ExecWordPart::Text(std::mem::take(&mut text)));
                    }
                    parts.push(ExecWordPart::Arg(name.to_string()));
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        text.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if !text.is_empty() || parts.is_empty() {
        parts.push(ExecWordPart::Text(text));
    }
    parts
}

fn is_placeholder_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The manifest's `[effects]` table.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    /// Argument name -> how it touches the file it names.
    #[serde(default)]
    pub paths: BTreeMap<String, PathAccess>,
    /// The argument that holds a shell command.
    #[serde(default)]
    pub command: Option<String>,
}

/// One argument migration (Pi's `prepareArguments`), applied in order.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrepareStep {
    /// Rename an argument when the new name is not already given.
    #[serde(default)]
    pub rename: Option<Rename>,
    /// Parse this argument as JSON when it arrives as a string.
    #[serde(default)]
    pub parse_json: Option<String>,
    /// Move top-level fields into a one-element array of objects.
    #[serde(default)]
    pub wrap: Option<Wrap>,
}

/// `rename = { from = "file_path", to = "path" }`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    /// The old name.
    pub from: String,
    /// The new name.
    pub to: String,
}

/// `wrap = { fields = ["oldText", "newText"], into = "edits" }`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wrap {
    /// Top-level fields moved into the new object.
    pub fields: Vec<String>,
    /// The array argument that receives the object.
    pub into: String,
}

/// The keys `[dialects.*]` may use: the agent CLIs toolgate speaks to as a
/// hook, and `mcp` for MCP tools, which every one of them names alike.
pub const DIALECT_KEYS: &[&str] = &["claude", "codex", "gemini", "mcp"];

/// `[dialects.claude]` — an agent CLI's tool that is this tool.
///
/// A hook adapter renames the CLI's arguments through `args` before the
/// policy sees them. An argument that is neither mapped nor listed in
/// `ignore` makes the call a deny: a field the CLI adds later could change
/// what the call does (Gemini's `dir_path` moves a command elsewhere), so it
/// must be mapped or declared harmless before it is let through.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dialect {
    /// The CLI's tool name, e.g. `Read` or `run_shell_command`.
    pub name: String,
    /// The CLI's argument name -> this tool's argument name.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
    /// The CLI's arguments that do not matter to the policy (`description`,
    /// a timeout in other units, …): dropped before deciding.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// The CLI's argument naming the directory a command runs in (Gemini's
    /// `dir_path`): the command's relative words are judged from there, and
    /// the directory is checked like a path the command reads.
    #[serde(default)]
    pub workdir: Option<String>,
    /// The CLI's argument holding a patch in Codex's `apply_patch` format:
    /// every file it adds, updates, deletes or moves becomes one call of this
    /// tool.
    #[serde(default)]
    pub patch: Option<PatchDialect>,
}

/// `patch = { from = "command", path = "path", content = "content" }`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchDialect {
    /// The CLI's argument that holds the patch text.
    pub from: String,
    /// This tool's write-path argument, set to each file the patch touches.
    pub path: String,
    /// This tool's argument that receives the text the patch writes.
    #[serde(default)]
    pub content: Option<String>,
}

/// One CLI's dialect entries: a table (`[dialects.claude]`) for one of the
/// CLI's tools, or an array of tables (`[[dialects.claude]]`) when several of
/// them are this tool (Claude's `Edit` and `MultiEdit`).
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(transparent)]
#[schemars(with = "DialectEntriesSchema")]
pub struct DialectEntries(pub Vec<Dialect>);

/// The schema of [`DialectEntries`]: one table or an array of them.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // only its schema is used
enum DialectEntriesSchema {
    One(Dialect),
    Many(Vec<Dialect>),
}

impl<'de> Deserialize<'de> for DialectEntries {
    // A hand-written visitor rather than `#[serde(untagged)]`, so a typo in a
    // dialect table keeps serde's precise message (`unknown field …`) instead
    // of "did not match any variant".
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = DialectEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a dialect table or an array of dialect tables")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let one = Dialect::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(DialectEntries(vec![one]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                let many =
                    Vec::<Dialect>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(DialectEntries(many))
            }
        }
        d.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExecWordPart::{Arg, Text};

    #[test]
    fn exec_words_split_into_text_and_placeholders() {
        assert_eq!(parse_exec_word("{path}"), vec![Arg("path".into())]);
        assert_eq!(
            parse_exec_word("--max-count={n}"),
            vec![Text("--max-count=".into()), Arg("n".into())]
        );
        assert_eq!(parse_exec_word("{}"), vec![Text("{}".into())]);
        assert_eq!(parse_exec_word("{{path}}"), vec![Text("{path}".into())]);
        assert_eq!(parse_exec_word("{ a }"), vec![Text("{ a }".into())]);
        assert_eq!(parse_exec_word(""), vec![Text(String::new())]);
        assert_eq!(
            parse_exec_word("é{x}"),
            vec![Text("é".into()), Arg("x".into())]
        );
    }
}
