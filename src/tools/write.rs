//! The built-in `write` tool: creates or replaces a file, creating its parent
//! directories, atomically (see [`super::atomic`]).
//!
//! Writes and edits of one file queue behind each other (Pi's file mutation
//! queue), keyed by where the path really leads, so `a.txt` and
//! `./sub/../a.txt` — or a symlink and its target — share one queue.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::file_errors::{io_error, join_error, ABORTED};
use super::{atomic, Sandbox, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The `write` tool.
#[derive(Debug, Default)]
pub struct WriteTool;

impl Tool for WriteTool {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(write(ctx, args))
    }
}

/// A string argument, or an error naming it.
pub(crate) fn string_arg<'v>(
    args: &'v Value,
    tool: &str,
    name: &str,
) -> Result<&'v str, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::new(format!("{tool}: {name} must be a string")))
}

/// The key of a file's mutation queue: where `raw` really leads (symlinks
/// followed; for a file that does not exist yet, through its nearest existing
/// ancestor).
pub(crate) fn mutation_key(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    crate::workspace::resolve(ctx.sandbox.workspace(), raw)
        .map(|resolved| resolved.real)
        .map_err(|e| ToolError::new(format!("Could not resolve {raw}: {e}")))
}

async fn write(ctx: &ToolContext, mut args: Value) -> Result<ToolOutput, ToolError> {
    // Taken, not copied: the content can be large.
    let content = match args.get_mut("content") {
        Some(Value::String(content)) => std::mem::take(content),
        _ => return Err(ToolError::new("write: content must be a string")),
    };
    let path = string_arg(&args, "write", "path")?;
    let abs = ctx.sandbox.absolute(path);
    let _turn = ctx.mutations.lock(&mutation_key(ctx, path)?).await;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    let sandbox = ctx.sandbox.clone();
    // Awaited to the end even when cancelled: the queue is held until the
    // write has settled, never released mid-write.
    tokio::task::spawn_blocking(move || write_file(&sandbox, &abs, content.as_bytes()))
        .await
        .map_err(join_error)??;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    Ok(ToolOutput::text(format!("Successfully wrote to {path}")))
}

/// Creates the parent directories and replaces the file, all beneath the
/// sandbox root that holds `abs`.
fn write_file(sandbox: &Sandbox, abs: &Path, content: &[u8]) -> Result<(), ToolError> {
    let (dir, rel) = sandbox.locate(abs).map_err(|e| io_error(&e, "open", abs))?;
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        // Only a missing parent is created: a parent that exists but leads
        // outside the sandbox must be reported as that, not as `EEXIST`.
        match dir.open_dir(parent) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => dir
                .create_dir_all(parent)
                .map_err(|e| io_error(&e, "mkdir", abs.parent().unwrap_or(abs)))?,
            Err(e) => return Err(io_error(&e, "open", abs)),
        }
    }
    atomic::replace_file(dir, &rel, content).map_err(|e| io_error(&e, "open", abs))
}
