//! The built-in `ls` tool: one directory's entries, Pi's way — sorted
//! case-insensitively, directories marked with `/`, dotfiles included.
//!
//! Names are listed as they are (a listing shows names, not content; the
//! policy still refuses reading a denied file). The directory is read
//! through the sandbox; a symlink is followed only to a target inside the
//! sandbox roots, and one that leads outside (or nowhere) is left out, as Pi
//! leaves out entries it cannot stat.

use std::cmp::Ordering;
use std::path::Path;

use serde_json::Value;

use super::search::{effective_limit, listing_output, run_blocking, CountLimit, ABORTED};
use super::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Pi's default entry limit.
pub const DEFAULT_LIMIT: usize = 500;

/// Lists a directory.
#[derive(Debug, Default)]
pub struct Ls;

impl Tool for Ls {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args
                .get("path")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .unwrap_or(".")
                .to_string();
            let limit = effective_limit(args.get("limit").and_then(Value::as_f64), DEFAULT_LIMIT);
            let owned = ctx.clone();
            run_blocking(ctx, move || list(&owned, &raw, limit)).await
        })
    }
}

fn list(ctx: &ToolContext, raw: &str, limit: usize) -> Result<ToolOutput, ToolError> {
    let abs = ctx.sandbox.absolute(raw);
    let (dir, rel) = ctx.sandbox.locate(&abs)?;
    let meta = dir
        .metadata(&rel)
        .map_err(|_| ToolError::new(format!("Path not found: {}", abs.display())))?;
    if !meta.is_dir() {
        return Err(ToolError::new(format!(
            "Not a directory: {}",
            abs.display()
        )));
    }
    let entries = dir
        .read_dir(&rel)
        .map_err(|e| ToolError::new(format!("Cannot read directory: {e}")))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| compare_names(a, b));

    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(ABORTED));
        }
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        let Some(is_dir) = entry_is_dir(ctx, dir, &rel, &abs, &name) else {
            continue;
        };
        results.push(if is_dir { format!("{name}/") } else { name });
    }
    if results.is_empty() {
        return Ok(ToolOutput::text("(empty directory)"));
    }
    let max_bytes = usize::try_from(ctx.limits.max_output_bytes).unwrap_or(usize::MAX);
    let count_limit = limit_reached.then(|| CountLimit {
        limit,
        notice: format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit.saturating_mul(2)
        ),
        detail_key: "entryLimitReached",
    });
    Ok(listing_output(&results, max_bytes, count_limit, None))
}

/// Whether an entry is a directory, following a symlink like Pi's `stat`
/// does, but only to a target inside the sandbox roots; `None` (left out)
/// for a broken link, a link that leads outside, or an entry that vanished.
fn entry_is_dir(
    ctx: &ToolContext,
    dir: &cap_std::fs::Dir,
    rel: &Path,
    abs: &Path,
    name: &str,
) -> Option<bool> {
    let meta = dir.symlink_metadata(rel.join(name)).ok()?;
    if !meta.file_type().is_symlink() {
        return Some(meta.is_dir());
    }
    let target = std::fs::canonicalize(abs.join(name)).ok()?;
    ctx.sandbox.locate(&target).ok()?;
    std::fs::metadata(&target).ok().map(|m| m.is_dir())
}

/// ASCII punctuation in the order of ICU's root collation, which is what
/// Pi's `localeCompare` sorts by: punctuation and symbols, then digits, then
/// letters.
const PUNCTUATION_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// Where a character sorts: (class, rank within the class).
fn collation_rank(c: char) -> (u8, u32) {
    if let Some(i) = PUNCTUATION_ORDER.find(c) {
        (0, i as u32)
    } else if c.is_ascii_digit() {
        (1, c as u32)
    } else if c.is_alphabetic() {
        (2, c as u32)
    } else {
        (0, 0x100 + c as u32)
    }
}

/// Pi's `a.toLowerCase().localeCompare(b.toLowerCase())`, approximated
/// character by character; names equal but for case keep a fixed order.
fn compare_names(a: &str, b: &str) -> Ordering {
    let key =
        |s: &str| -> Vec<(u8, u32)> { s.to_lowercase().chars().map(collation_rank).collect() };
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_locale_compare() {
        // The order node's `localeCompare` gives for these names.
        let mut names = vec![
            "a.txt", "a-b", "ab", "a_b", "B", "_x", "10", "9", "a10", "a9", ".env", ".Zeta",
            "zeta", "Ab",
        ];
        names.sort_by(|a, b| compare_names(a, b));
        assert_eq!(
            names,
            vec![
                "_x", ".env", ".Zeta", "10", "9", "a_b", "a-b", "a.txt", "a10", "a9", "Ab", "ab",
                "B", "zeta"
            ]
        );
    }
}
