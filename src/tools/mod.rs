//! Tools: the seven built-in tools (read, write, edit, bash, grep, find, ls)
//! and the exec tools a manifest declares.
//!
//! A tool only *does* things. Whether it may is the policy's business and was
//! decided before [`Tool::execute`] is called; what the model sees of its
//! output is the after-hook's. What a tool still owns is doing its I/O safely:
//! file access goes through the [`Sandbox`] (a capability directory per root,
//! so a symlink swapped in after the policy check cannot lead outside), writes
//! are atomic, and processes run in their own process group so that a timeout
//! or cancellation kills all of them.
//!
//! Errors are values: a tool returns [`ToolError`] with the exact text the
//! model should read, and the executor turns it into an error result.

pub mod atomic;
mod bash;
pub mod binary;
mod command;
mod edit;
mod edit_diff;
mod edit_match;
mod exec;
mod file_errors;
mod find;
mod grep;
mod image;
mod ls;
mod mutation;
mod output;
mod process;
mod read;
mod read_lines;
mod sandbox;
mod search;
pub mod upstream;
mod write;

pub use command::reported_exit_code;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::config::manifest::{Implementation, Manifest};
use crate::workspace::GlobList;

pub use mutation::{MutationGuard, MutationQueues};
pub use sandbox::Sandbox;

/// One block of a tool result, shaped like an MCP content block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 of the bytes.
        data: String,
        /// e.g. `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource, passed through as MCP shapes it.
    Resource {
        /// `{uri, mimeType, text | blob}`.
        resource: Value,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Content {
        Content::Text { text: text.into() }
    }
}

/// What a tool produced: content for the model, details for programs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: Vec<Content>,
    /// Structured extras (truncation info, diffs, …); `{}`-like when none.
    pub details: Value,
}

impl ToolOutput {
    /// A text-only output with no details.
    pub fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: vec![Content::text(text)],
            details: Value::Object(Default::default()),
        }
    }

    /// A text-only output with details.
    pub fn with_details(text: impl Into<String>, details: Value) -> ToolOutput {
        ToolOutput {
            content: vec![Content::text(text)],
            details,
        }
    }
}

/// A failed tool call: the message is exactly what the model reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolError {
    /// The error text (Pi's wording for built-in tools).
    pub message: String,
    /// Structured extras kept with the error (e.g. the full-output file of a
    /// failed command); `Value::Null` when none.
    pub details: Value,
}

impl ToolError {
    /// An error with no details.
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            details: Value::Null,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> ToolError {
        ToolError::new(e.to_string())
    }
}

/// Receives a tool's partial results while it runs. The executor redacts each
/// one before any observer sees it, and drops those sent after the tool ends.
#[derive(Clone)]
pub struct Progress(Arc<dyn Fn(ToolOutput) + Send + Sync>);

impl Progress {
    /// Progress delivered to `f`.
    pub fn new(f: impl Fn(ToolOutput) + Send + Sync + 'static) -> Progress {
        Progress(Arc::new(f))
    }

    /// Progress that goes nowhere.
    pub fn none() -> Progress {
        Progress::new(|_| {})
    }

    /// Reports a partial result.
    pub fn update(&self, partial: ToolOutput) {
        (self.0)(partial)
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}

/// The limits a tool itself enforces while it runs: its time, and how much
/// output it keeps. (The policy decides them; a tool only obeys.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// A call's time limit.
    pub timeout: std::time::Duration,
    /// Output kept per call, in bytes.
    pub max_output_bytes: u64,
    /// Output kept per call, in lines.
    pub max_output_lines: u64,
}

impl Default for RunLimits {
    /// Pi's limits: 120 s, 50 KB, 2000 lines.
    fn default() -> Self {
        RunLimits {
            timeout: std::time::Duration::from_secs(120),
            max_output_bytes: crate::text::DEFAULT_MAX_BYTES as u64,
            max_output_lines: crate::text::DEFAULT_MAX_LINES as u64,
        }
    }
}

/// Everything a tool may use while it runs.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The call's id.
    pub call_id: String,
    /// Where files may be opened.
    pub sandbox: Arc<Sandbox>,
    /// The policy's deny globs: search tools skip what the model may not see.
    pub deny: Arc<GlobList>,
    /// The policy's time and output limits.
    pub limits: RunLimits,
    /// Set when the call is cancelled; tools stop and kill what they started.
    pub cancel: CancellationToken,
    /// Where partial results go.
    pub progress: Progress,
    /// Per-file FIFO queues that serialize writes and edits of one file.
    pub mutations: Arc<MutationQueues>,
    /// The policy's kernel confinement for the commands bash and exec tools
    /// run (`sandbox:`); `None` when the sandbox is not enabled.
    pub confine: Option<Arc<crate::confine::Plan>>,
}

/// A future returned by [`Tool::execute`].
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// Something the executor can run. Arguments arrive prepared, coerced and
/// validated against the tool's schema, and allowed by the policy.
pub trait Tool: Send + Sync + fmt::Debug {
    /// Runs the tool. Returning `Err` makes an error result with its message.
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a>;
}

/// The implementation a manifest names: a built-in tool, or an exec tool.
/// `None` for a built-in name that does not exist (manifest compilation
/// rejects those, so this does not happen for a compiled policy).
pub fn from_manifest(manifest: &Manifest) -> Option<Arc<dyn Tool>> {
    from_manifest_with(manifest, None)
}

/// Like [`from_manifest`], with upstream tools forwarded through `upstreams`.
pub fn from_manifest_with(
    manifest: &Manifest,
    upstreams: Option<&Arc<dyn upstream::Upstreams>>,
) -> Option<Arc<dyn Tool>> {
    match &manifest.implementation {
        Implementation::Builtin(name) => builtin(name),
        Implementation::Exec(_) => {
            exec::ExecTool::from_manifest(manifest).map(|t| Arc::new(t) as Arc<dyn Tool>)
        }
        Implementation::Upstream { server, tool } => Some(Arc::new(upstream::UpstreamTool::new(
            server,
            tool,
            upstreams.cloned(),
        ))),
    }
}

/// A built-in tool by name.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    match name {
        "read" => Some(Arc::new(read::ReadTool)),
        "write" => Some(Arc::new(write::WriteTool)),
        "edit" => Some(Arc::new(edit::EditTool)),
        "bash" => Some(Arc::new(bash::Bash)),
        "grep" => Some(Arc::new(grep::Grep)),
        "find" => Some(Arc::new(find::Find)),
        "ls" => Some(Arc::new(ls::Ls)),
        _ => None,
    }
}
