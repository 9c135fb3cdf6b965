//! The built-in `edit` tool: exact-text replacements in one file, all or
//! nothing, with Pi 1.6's matching (see [`super::edit_match`]), messages and
//! diff (see [`super::edit_diff`]).
//!
//! The file is read and replaced while its mutation queue is held, so two
//! edits of one file in a parallel batch both land. The replacement is atomic
//! (see [`super::atomic`]). A byte order mark is kept, and line endings are
//! kept where the text was not replaced.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use cap_std::fs::OpenOptions;
use serde_json::{json, Value};

use super::edit_diff::generate_edit_diff;
use super::edit_match::{
    apply_edits, apply_replacements_to_original, normalize_to_lf, split_bom, EditSpec,
};
use super::file_errors::{error_code, join_error, ABORTED};
use super::write::{mutation_key, string_arg};
use super::{atomic, Sandbox, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Pi's text for a call without replacements.
const NO_EDITS: &str = "Edit tool input is invalid. edits must contain at least one replacement.";

/// The `edit` tool.
#[derive(Debug, Default)]
pub struct EditTool;

impl Tool for EditTool {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(edit(ctx, args))
    }
}

/// The `edits` argument: a non-empty array of `{oldText, newText}` strings.
/// (The executor's prepare step already turned a JSON string or the legacy
/// top-level `oldText`/`newText` into this shape.)
fn edits_arg(args: &Value) -> Result<Vec<EditSpec>, ToolError> {
    let items = match args.get("edits") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => return Err(ToolError::new(NO_EDITS)),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let text = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_string);
            match (text("oldText"), text("newText")) {
                (Some(old_text), Some(new_text)) => Ok(EditSpec { old_text, new_text }),
                _ => Err(ToolError::new(format!(
                    "Edit tool input is invalid. edits[{i}] must have a string oldText and newText."
                ))),
            }
        })
        .collect()
}

async fn edit(ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
    let edits = edits_arg(&args)?;
    let path = string_arg(&args, "edit", "path")?.to_string();
    let abs = ctx.sandbox.absolute(&path);
    let _turn = ctx.mutations.lock(&mutation_key(ctx, &path)?).await;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    let sandbox = ctx.sandbox.clone();
    // Awaited to the end even when cancelled: the queue is held until the
    // file has been replaced (or not), never released mid-write.
    let output = tokio::task::spawn_blocking(move || edit_file(&sandbox, &abs, &path, &edits))
        .await
        .map_err(join_error)??;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    Ok(output)
}

/// Reads, edits and replaces the file. `path` is the argument as given, for
/// messages.
fn edit_file(
    sandbox: &Sandbox,
    abs: &Path,
    path: &str,
    edits: &[EditSpec],
) -> Result<ToolOutput, ToolError> {
    let cannot = |detail: String| ToolError::new(format!("Could not edit file: {path}. {detail}."));
    let (dir, rel) = sandbox.locate(abs).map_err(|e| cannot(error_code(&e)))?;
    // Opening for writing asks the kernel what Pi's access(R_OK | W_OK) asks.
    let mut file = dir
        .open_with(&rel, OpenOptions::new().read(true).write(true))
        .map_err(|e| cannot(error_code(&e)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| cannot(error_code(&e)))?;
    drop(file);
    // Pi decodes lossily and would write U+FFFD over every byte that is not
    // UTF-8, corrupting the untouched parts; refuse instead.
    let raw = String::from_utf8(bytes)
        .map_err(|_| cannot("The file is not valid UTF-8 text".to_string()))?;

    // A model never includes the invisible BOM in oldText: match without it.
    let (bom, content) = split_bom(&raw);
    let normalized = normalize_to_lf(content);
    let applied = apply_edits(&normalized, edits, path).map_err(ToolError::new)?;
    // Diff before writing, so nothing can fail after the write.
    let diff = generate_edit_diff(
        path,
        &normalized,
        &applied.new_content,
        &applied.replacements,
    );
    // Splice into the original so untouched lines keep their line endings;
    // without any CR the normalized result is already final.
    let body = if matches!(normalized, Cow::Borrowed(_)) {
        applied.new_content
    } else {
        apply_replacements_to_original(content, &applied.replacements)
    };
    let final_content = format!("{bom}{body}");
    atomic::replace_file(dir, &rel, final_content.as_bytes())
        .map_err(|e| cannot(error_code(&e)))?;
    Ok(ToolOutput::with_details(
        format!("Successfully replaced {} block(s) in {path}.", edits.len()),
        json!({
            "diff": diff.diff,
            "patch": diff.patch,
            "firstChangedLine": diff.first_changed_line,
        }),
    ))
}
