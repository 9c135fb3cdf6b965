//! Tool manifests and the active-tool set.
//!
//! A tool that is not active does not exist for the model: it is not listed,
//! and a call to it gets `Tool NAME not found`.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::Access;
use crate::config::manifest::{Manifest, PathAccess};

/// A call to a tool that is not active (or not described at all): Pi's
/// "Tool NAME not found", the same text from every front-end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolNotFound(pub String);

impl std::fmt::Display for ToolNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tool {} not found", self.0)
    }
}

impl std::error::Error for ToolNotFound {}

/// The built-in implementations a manifest may name.
pub const BUILTINS: &[&str] = &["read", "write", "edit", "bash", "grep", "find", "ls"];

/// One tool, as its manifest declares it.
#[derive(Clone, Debug)]
pub struct ToolInfo {
    /// The manifest (shared with the loaded configuration).
    pub manifest: Arc<Manifest>,
    /// The file it came from.
    pub file: String,
    /// Arguments that name files, with how the tool touches them.
    pub path_args: Vec<(String, Access)>,
    /// The argument that holds a shell command, if any.
    pub command_arg: Option<String>,
}

impl ToolInfo {
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The JSON Schema of its arguments.
    pub fn schema(&self) -> &Value {
        &self.manifest.parameters
    }

    /// Whether its results carry a command's exit code: the built-in bash
    /// tool and exec tools (`implementation = { exec = [...] }`).
    pub fn reports_exit_code(&self) -> bool {
        match &self.manifest.implementation {
            crate::config::manifest::Implementation::Builtin(b) => b == "bash",
            crate::config::manifest::Implementation::Exec(_) => true,
            crate::config::manifest::Implementation::Upstream { .. } => false,
        }
    }

    /// The upstream server whose tool this is, if it is one.
    pub fn upstream_server(&self) -> Option<&str> {
        match &self.manifest.implementation {
            crate::config::manifest::Implementation::Upstream { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The JSON types `arg` may take according to the schema: `None` when the
    /// schema has no such property, an empty list when it does not say.
    pub fn arg_types(&self, arg: &str) -> Option<Vec<String>> {
        let prop = self.manifest.parameters.get("properties")?.get(arg)?;
        Some(schema_types(prop))
    }
}

fn schema_types(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(String::from))
            .collect(),
        _ => {
            let mut out = Vec::new();
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(alts)) = schema.get(key) {
                    for alt in alts {
                        let ts = schema_types(alt);
                        if ts.is_empty() {
                            return Vec::new();
                        }
                        out.extend(ts);
                    }
                }
            }
            out
        }
    }
}

impl From<PathAccess> for Access {
    fn from(a: PathAccess) -> Access {
        match a {
            PathAccess::Read => Access::Read,
            PathAccess::Write => Access::Write,
        }
    }
}

/// Every manifest, and which of them are active.
#[derive(Clone, Debug, Default)]
pub struct ToolSet {
    /// All tools a manifest describes, by name.
    pub tools: BTreeMap<String, ToolInfo>,
    /// The active tools, in the order the policy lists them.
    pub active: Vec<String>,
    /// Named alternative active sets (`tools.profiles`), for callers whose
    /// identity names a profile.
    pub profiles: BTreeMap<String, Vec<String>>,
}

impl ToolSet {
    /// A tool by name, active or not.
    pub fn get(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.get(name)
    }

    /// True when the model may call `name`.
    pub fn is_active(&self, name: &str) -> bool {
        self.active.iter().any(|a| a == name)
    }

    /// The active set for a caller with `profile`: that profile's tools, or
    /// the policy's active set when `None`. A profile that does not exist
    /// (the policy changed under a caller) has no tools: fail closed.
    pub fn active_names(&self, profile: Option<&str>) -> &[String] {
        match profile {
            None => &self.active,
            Some(p) => self.profiles.get(p).map_or(&[][..], Vec::as_slice),
        }
    }

    /// [`ToolSet::active_tool`] for a caller with `profile`.
    pub fn active_tool_for(
        &self,
        profile: Option<&str>,
        name: &str,
    ) -> Result<&ToolInfo, ToolNotFound> {
        match self.tools.get(name) {
            Some(info) if self.active_names(profile).iter().any(|a| a == name) => Ok(info),
            _ => Err(ToolNotFound(name.to_string())),
        }
    }

    /// [`ToolSet::active_tools`] for a caller with `profile`.
    pub fn active_tools_for<'a>(
        &'a self,
        profile: Option<&str>,
    ) -> impl Iterator<Item = &'a ToolInfo> + 'a {
        let names = self.active_names(profile);
        names.iter().filter_map(|n| self.tools.get(n))
    }

    /// The active tool `name`, or the one answer every front-end gives for a
    /// tool the model cannot see: it does not exist.
    pub fn active_tool(&self, name: &str) -> Result<&ToolInfo, ToolNotFound> {
        match self.tools.get(name) {
            Some(info) if self.is_active(name) => Ok(info),
            _ => Err(ToolNotFound(name.to_string())),
        }
    }

    /// The active tools in their fixed order (what `tools/list` shows).
    pub fn active_tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.active.iter().filter_map(|n| self.tools.get(n))
    }
}
