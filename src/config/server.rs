//! Upstream server manifests: a `tool-manifests/NAME.toml` with a `[server]`
//! table declares an MCP server whose tools toolgate fronts, instead of one
//! tool. Its tools are named `PREFIX__TOOL` (the prefix defaults to the
//! server's name); `[tools.TOOL]` overlays tell the policy what an upstream
//! tool's arguments mean (`effects.paths`, `effects.command`) and how it runs
//! in a batch (`execution_mode`).
//!
//! What the server's tools are is only known once it runs (`tools/list`);
//! the front-end that runs it hands the listing to the compiler as an
//! [`UpstreamCatalog`].

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::manifest::{Effects, ExecutionMode};
use super::SourceFile;

/// What happens when an upstream tool differs from its lock file entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PinMode {
    /// Changed and new tools are withheld until `toolgate pin NAME`.
    #[default]
    Block,
    /// Changed tools are served; the difference is logged.
    Warn,
    /// No lock file is kept or checked.
    Off,
}

/// When an upstream server is started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StartMode {
    /// Before the gateway serves: its tools are listed from the start.
    #[default]
    Eager,
    /// On first use, when its lock file (`NAME.lock`) says what its tools
    /// are: they are listed from the lock, and the first call (or resource
    /// or prompt request) starts it. Without a usable lock (none yet, or
    /// `pin = "off"`) it starts in the background once the gateway serves,
    /// and its tools appear (with `notifications/tools/list_changed`) when
    /// it has answered.
    Lazy,
}

/// The `[server]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerTable {
    /// The server's name: its lock file is `NAME.lock`, its tools
    /// `NAME__TOOL` unless `prefix` says otherwise.
    pub name: String,
    /// The prefix of its tools' names (`PREFIX__TOOL`). `""` fronts the
    /// server transparently: its tool and prompt names and its resource URIs
    /// pass unchanged (at most one server may do so; see [`prefixed`]).
    #[serde(default)]
    pub prefix: Option<String>,
    /// stdio: the program and its arguments, run directly (no shell) in its
    /// own process group.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Environment variables passed through to the program; every other
    /// variable is removed. Default `["PATH"]`.
    #[serde(default = "default_env")]
    pub env: Vec<String>,
    /// Streamable HTTP: the server's endpoint (`https://…` or `http://…`).
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP headers sent with every request to a `url` server; `${env:VAR}`
    /// in a value is taken from toolgate's environment (see
    /// [`ServerTable::header_values`]).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What a tool that changed since it was pinned does.
    #[serde(default)]
    pub pin: PinMode,
    /// When the server starts.
    #[serde(default)]
    pub start: StartMode,
}

fn default_env() -> Vec<String> {
    vec!["PATH".to_string()]
}

impl ServerTable {
    /// The prefix of the server's tool names.
    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(&self.name)
    }

    /// The gateway's name for the upstream tool `tool`.
    pub fn tool_name(&self, tool: &str) -> String {
        prefixed(self.prefix(), tool)
    }
}

/// The gateway's name for an upstream tool, prompt or resource `name` of a
/// server with prefix `prefix`: `PREFIX__NAME`, or `name` itself for the
/// transparent (`prefix = ""`) server. Every upstream name toolgate shows is
/// made here.
pub fn prefixed(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}__{name}")
    }
}

/// The upstream's own name for a gateway name `name` under `prefix` (the
/// inverse of [`prefixed`]); `None` when `name` is not under it. Under the
/// transparent prefix `""` every name is.
pub fn unprefixed<'a>(prefix: &str, name: &'a str) -> Option<&'a str> {
    if prefix.is_empty() {
        Some(name)
    } else {
        name.strip_prefix(prefix)?.strip_prefix("__")
    }
}

/// Why a header of a `url` server cannot be sent. It names the header and
/// the variable, never a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// `${env:VAR}` names a variable that is not set (or not UTF-8).
    Missing {
        /// The header's name.
        header: String,
        /// The variable's name.
        var: String,
    },
    /// A `${` without a closing `}`, or a `${…}` that is not `${env:NAME}`.
    Syntax {
        /// The header's name.
        header: String,
    },
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::Missing { header, var } => write!(
                f,
                "header `{header}` uses `${{env:{var}}}`, but `{var}` is not set in toolgate's environment"
            ),
            HeaderError::Syntax { header } => write!(
                f,
                "header `{header}` has a `${{…}}` that is not `${{env:NAME}}`"
            ),
        }
    }
}

/// `value` with each `${env:NAME}` replaced by `lookup(NAME)`.
pub fn substitute_env(
    header: &str,
    value: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, HeaderError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let syntax = || HeaderError::Syntax {
            header: header.to_string(),
        };
        let end = rest[at..].find('}').ok_or_else(syntax)? + at;
        let var = rest[at + 2..end].strip_prefix("env:").ok_or_else(syntax)?;
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syntax());
        }
        let v = lookup(var).ok_or_else(|| HeaderError::Missing {
            header: header.to_string(),
            var: var.to_string(),
        })?;
        out.push_str(&v);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl ServerTable {
    /// The `headers` with `${env:VAR}` substituted from toolgate's
    /// environment. The values are secrets: callers must not log them.
    pub fn header_values(&self) -> Result<Vec<(String, String)>, HeaderError> {
        self.headers
            .iter()
            .map(|(name, value)| {
                substitute_env(name, value, |var| std::env::var(var).ok())
                    .map(|v| (name.clone(), v))
            })
            .collect()
    }
}

/// `[tools.TOOL]`: what the policy must know of one upstream tool.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOverlay {
    /// Which arguments name files, and which holds a shell command.
    #[serde(default)]
    pub effects: Effects,
    /// Whether the tool may run beside others in a batch.
    #[serde(default)]
    pub execution_mode: Option<ExecutionMode>,
}

/// A server manifest.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerManifest {
    /// How the server runs.
    pub server: ServerTable,
    /// Overlays by the upstream's own tool name (without the prefix).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOverlay>,
}

/// One parsed server manifest.
#[derive(Clone, Debug)]
pub struct LoadedServer {
    /// Where it came from.
    pub file: SourceFile,
    /// Its contents.
    pub manifest: Arc<ServerManifest>,
}

impl LoadedServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        &self.manifest.server.name
    }

    /// The lock file beside the manifest (`NAME.lock`); `None` for a
    /// manifest that is not on disk.
    pub fn lock_path(&self) -> Option<std::path::PathBuf> {
        let dir = self.file.path.as_ref()?.parent()?;
        Some(dir.join(format!("{}.lock", self.name())))
    }
}

/// One tool as an upstream server lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UpstreamTool {
    /// The upstream's own name for it (no prefix).
    pub name: String,
    /// Its title, if it gives one.
    #[serde(default)]
    pub title: Option<String>,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// Its `inputSchema`.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// The tools each running upstream server listed, by server name. A server
/// that is not in it (not started yet, or down) contributes no tools.
pub type UpstreamCatalog = BTreeMap<String, Vec<UpstreamTool>>;

/// True when `text` is a server manifest (it has a top-level `[server]`
/// table) rather than a tool manifest.
pub fn is_server_manifest(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        t == "[server]" || t.starts_with("[server]")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        (var == "TOKEN").then(|| "s3cret".to_string())
    }

    #[test]
    fn env_references_are_substituted() {
        assert_eq!(
            substitute_env("Authorization", "Bearer ${env:TOKEN}", env).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(
            substitute_env("X", "${env:TOKEN}-${env:TOKEN}", env).unwrap(),
            "s3cret-s3cret"
        );
        assert_eq!(
            substitute_env("X", "plain $HOME", env).unwrap(),
            "plain $HOME"
        );
    }

    #[test]
    fn a_missing_variable_names_header_and_variable() {
        let e = substitute_env("Authorization", "Bearer ${env:NOPE}", env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "header `Authorization` uses `${env:NOPE}`, but `NOPE` is not set in toolgate's environment"
        );
        for bad in ["${TOKEN}", "${env:TOKEN", "${env:}", "${env:A-B}"] {
            assert_eq!(
                substitute_env("X", bad, env).unwrap_err(),
                HeaderError::Syntax { header: "X".into() },
                "{bad}"
            );
        }
    }
}
