//! Shared by the file-tool tests: a temporary workspace with a tool context,
//! and the case-file helpers.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toolgate::tools::{builtin, Content, ToolContext, ToolError, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

/// A workspace in a temporary directory, with a context for running tools.
pub struct Workspace {
    _tmp: tempfile::TempDir,
    /// The canonical workspace directory.
    pub root: PathBuf,
    /// A directory next to the workspace, outside it.
    pub outside: PathBuf,
    /// A standalone context over `root` with the default policy.
    pub ctx: ToolContext,
}

impl Workspace {
    /// An empty workspace and an empty directory next to it.
    pub fn new() -> Workspace {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().canonicalize().expect("canonical").join("ws");
        let outside = root.with_file_name("outside");
        std::fs::create_dir(&root).expect("workspace");
        std::fs::create_dir(&outside).expect("outside");
        let policy = load_policy(&ConfigPaths::default(), &CompileOptions::default())
            .expect("the default policy compiles");
        let ctx = toolgate::executor::standalone_context(&root, &policy).expect("context");
        Workspace {
            _tmp: tmp,
            root,
            outside,
            ctx,
        }
    }

    /// The absolute path of `rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a fixture, creating its directories.
    pub fn put(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent");
        }
        std::fs::write(path, bytes).expect("write fixture");
    }

    /// Reads a file back.
    pub fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).expect("read back")
    }

    /// Runs a built-in tool in this workspace.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let tool = builtin(tool).expect("built-in tool");
        tool.execute(&self.ctx, args).await
    }
}

/// The first text block.
pub fn text(output: &ToolOutput) -> &str {
    match output.content.first() {
        Some(Content::Text { text }) => text,
        other => panic!("expected a text block, got {other:?}"),
    }
}

/// File content from a case's spec (see `record_pi.mjs`).
pub fn generate(spec: &Value) -> String {
    match spec {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(generate).collect(),
        Value::Object(o) if o.contains_key("repeat") => {
            let times = o["times"].as_u64().unwrap_or(0) as usize;
            o["repeat"].as_str().unwrap_or("").repeat(times)
        }
        Value::Object(o) => {
            let count = o["count"].as_u64().unwrap_or(0);
            let line = o["line"].as_str().unwrap_or("");
            let lines: Vec<String> = (1..=count)
                .map(|i| line.replace("{i}", &i.to_string()))
                .collect();
            let mut out = lines.join("\n");
            if o.get("trailing_newline").and_then(Value::as_bool) == Some(true) {
                out.push('\n');
            }
            out.push_str(o.get("extra").and_then(Value::as_str).unwrap_or(""));
            out
        }
        other => panic!("bad content spec {other}"),
    }
}

/// Loads a case file from `tests/data/tools_files`.
pub fn load_cases<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tools_files")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("case file");
    serde_json::from_str(&text).expect("case file parses")
}
