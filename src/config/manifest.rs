//! The tool manifest format (`tool-manifests/NAME.toml`), as serde structs.
//!
//! A manifest tells toolgate what a tool is (its JSON Schema, how it runs) and,
//! through `effects`, what the policy needs to know about its arguments: which
//! ones name files and which one holds a shell command. That is what makes path
//! confinement and command rules work for any tool, built-in or custom.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

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
    /// A program run directly (never through a shell); `{arg}` words are
    /// replaced by the argument's value as one whole word.
    Exec(Vec<String>),
}

/// One tool manifest.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The tool's name as the model calls it.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
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
    /// How hook adapters map an agent CLI's own tool onto this one.
    #[serde(default)]
    pub dialects: BTreeMap<String, Dialect>,
}

/// The manifest's `[effects]` table.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    /// Argument name -> how it touches the file it names.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, PathAccess>")]
    pub paths: BTreeMap<Spanned<String>, PathAccess>,
    /// The argument that holds a shell command.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub command: Option<Spanned<String>>,
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
    #[schemars(with = "Option<String>")]
    pub parse_json: Option<Spanned<String>>,
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

/// `[dialects.claude]` — an agent CLI's tool that is this tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dialect {
    /// The CLI's tool name, e.g. `Read` or `run_shell_command`.
    pub name: String,
    /// The CLI's argument name -> this tool's argument name.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}
