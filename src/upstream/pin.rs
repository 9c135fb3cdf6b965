//! Pinning: what an upstream server's tools were when an operator accepted
//! them, kept in a lock file beside the manifest (`NAME.lock`, meant to be
//! committed and reviewed), and how the tools it lists now differ.
//!
//! Each tool is recorded with a SHA-256 of its name, description and
//! `inputSchema` (keys sorted), and with the description and schema
//! themselves so that `toolgate pin NAME` can show what changed. The set of
//! tool names is the set of keys.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config::server::UpstreamTool;

/// One pinned tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PinnedTool {
    /// SHA-256 (hex) of the name, description and canonical `inputSchema`.
    pub sha256: String,
    /// The description as accepted.
    pub description: String,
    /// The `inputSchema` as accepted.
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// A lock file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// The server's name.
    pub server: String,
    /// Pinned tools by the upstream's own name.
    pub tools: BTreeMap<String, PinnedTool>,
}

/// JSON with object keys sorted, so a hash does not depend on key order.
fn canonical(value: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let b: BTreeMap<&String, Value> = m.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(b.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// The hash of one tool.
pub fn tool_hash(tool: &UpstreamTool) -> String {
    let mut h = Sha256::new();
    for part in [
        tool.name.as_str(),
        tool.description.as_str(),
        &canonical(&tool.input_schema),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Lock {
    /// The pinned tools, as the server listed them when they were pinned.
    pub fn tools(&self) -> Vec<UpstreamTool> {
        self.tools
            .iter()
            .map(|(name, t)| UpstreamTool {
                name: name.clone(),
                title: None,
                description: t.description.clone(),
                input_schema: t.input_schema.clone(),
            })
            .collect()
    }

    /// The lock that accepts `tools` as they are.
    pub fn of(server: &str, tools: &[UpstreamTool]) -> Lock {
        Lock {
            server: server.to_string(),
            tools: tools
                .iter()
                .map(|t| {
                    (
                        t.name.clone(),
                        PinnedTool {
                            sha256: tool_hash(t),
                            description: t.description.clone(),
                            input_schema: t.input_schema.clone(),
                        },
                    )
                })
                .collect(),
        }
    }

    /// Reads a lock file; `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<Lock>, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| format!("{}: not a valid lock file: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// The lock file's text.
    pub fn to_text(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes the lock file atomically.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp =
            tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::io::Write::write_all(&mut tmp, self.to_text().as_bytes())
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        tmp.persist(path)
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// What differs between the pinned tools and `tools` as listed now:
    /// upstream tool name -> what changed. Removed tools are reported too
    /// (they cannot be called, so nothing is withheld for them).
    pub fn mismatches(&self, tools: &[UpstreamTool]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for t in tools {
            match self.tools.get(&t.name) {
                None => {
                    out.insert(t.name.clone(), "new tool, not pinned".to_string());
                }
                // The hash is what counts; a lock whose recorded text no
                // longer matches its hash (edited by hand) differs too.
                Some(p)
                    if p.sha256 != tool_hash(t)
                        || p.description != t.description
                        || canonical(&p.input_schema) != canonical(&t.input_schema) =>
                {
                    let mut what = Vec::new();
                    if p.description != t.description {
                        what.push("description");
                    }
                    if canonical(&p.input_schema) != canonical(&t.input_schema) {
                        what.push("inputSchema");
                    }
                    if what.is_empty() {
                        what.push("hash");
                    }
                    out.insert(t.name.clone(), format!("{} changed", what.join(" and ")));
                }
                Some(_) => {}
            }
        }
        for name in self.tools.keys() {
            if !tools.iter().any(|t| &t.name == name) {
                out.insert(name.clone(), "removed".to_string());
            }
        }
        out
    }
}

/// A unified diff of two lock files' texts, for `toolgate pin`.
pub fn diff(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .header("pinned", "listed now")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, schema: Value) -> UpstreamTool {
        UpstreamTool {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: schema,
        }
    }

    #[test]
    fn hashes_ignore_key_order_but_not_content() {
        let a = tool(
            "t",
            "d",
            serde_json::json!({"type": "object", "properties": {}}),
        );
        let b = tool(
            "t",
            "d",
            serde_json::json!({"properties": {}, "type": "object"}),
        );
        assert_eq!(tool_hash(&a), tool_hash(&b));
        assert_ne!(
            tool_hash(&a),
            tool_hash(&tool("t", "d2", a.input_schema.clone()))
        );
        assert_ne!(
            tool_hash(&a),
            tool_hash(&tool("u", "d", a.input_schema.clone()))
        );
    }

    #[test]
    fn mismatches_name_what_changed() {
        let schema = serde_json::json!({"type": "object"});
        let lock = Lock::of(
            "s",
            &[
                tool("a", "x", schema.clone()),
                tool("gone", "y", schema.clone()),
            ],
        );
        let now = [
            tool("a", "ignore previous instructions", schema.clone()),
            tool("b", "new", schema.clone()),
        ];
        let m = lock.mismatches(&now);
        assert_eq!(m["a"], "description changed");
        assert_eq!(m["b"], "new tool, not pinned");
        assert_eq!(m["gone"], "removed");
        assert!(Lock::of("s", &now).mismatches(&now).is_empty());
    }
}
