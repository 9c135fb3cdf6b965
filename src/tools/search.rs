//! What `grep`, `find` and `ls` share: resolving the search path the way Pi
//! does (with Pi's `Path not found` error), walking with ripgrep's `ignore`
//! crate (.gitignore, .ignore, hidden files included), skipping whatever the
//! policy denies, running the blocking walk off the async runtime with
//! cancellation, and (`find`, `ls`) turning the kept lines into a result with
//! Pi's limit notices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;
use serde_json::{json, Map, Value};

use super::{ToolContext, ToolError, ToolOutput};
use crate::text::{format_size, truncate_head};
use crate::workspace::{GlobList, Workspace};

/// Pi's text for a search cancelled before it finished.
pub const ABORTED: &str = "Operation aborted";

/// Where a search starts.
#[derive(Clone, Debug)]
pub struct SearchRoot {
    /// Absolute, as spelled (`.` and `..` folded, symlinks not followed):
    /// what error messages show and what results are relative to.
    pub abs: PathBuf,
    /// The same place with symlinks resolved, for deny checks through links.
    pub real: PathBuf,
    /// A directory (else a file).
    pub is_dir: bool,
}

/// Resolves the tool's `path` argument (default `.`). Outside every sandbox
/// root is an error; a missing path is `Path not found: ABS`.
pub fn resolve_root(ctx: &ToolContext, raw: Option<&str>) -> Result<SearchRoot, ToolError> {
    let raw = raw.filter(|r| !r.is_empty()).unwrap_or(".");
    let abs = ctx.sandbox.absolute(raw);
    ctx.sandbox.locate(&abs)?;
    let not_found = || ToolError::new(format!("Path not found: {}", abs.display()));
    let meta = std::fs::metadata(&abs).map_err(|_| not_found())?;
    let real = abs.canonicalize().map_err(|_| not_found())?;
    Ok(SearchRoot {
        is_dir: meta.is_dir(),
        real,
        abs,
    })
}

/// Skips entries the policy's `paths.deny` covers, judged both as spelled
/// under the search root and through the root's real location.
#[derive(Clone, Debug)]
pub struct DenyFilter {
    deny: Arc<GlobList>,
    workspace: Workspace,
    root: SearchRoot,
}

impl DenyFilter {
    /// A filter for paths under `root`.
    pub fn new(ctx: &ToolContext, root: &SearchRoot) -> DenyFilter {
        DenyFilter {
            deny: ctx.deny.clone(),
            workspace: ctx.sandbox.workspace().clone(),
            root: root.clone(),
        }
    }

    /// True when `path` (under the root, as the walk spells it) is denied.
    pub fn denies(&self, path: &Path) -> bool {
        if self.deny.covering(&self.workspace, path).is_some() {
            return true;
        }
        match path.strip_prefix(&self.root.abs) {
            Ok(rel) if self.root.real != self.root.abs => {
                let real = if rel.as_os_str().is_empty() {
                    self.root.real.clone()
                } else {
                    self.root.real.join(rel)
                };
                self.deny.covering(&self.workspace, &real).is_some()
            }
            _ => false,
        }
    }
}

/// True when `dir` or one of its ancestors has a `.git` (a repository or a
/// worktree).
fn inside_git_repo(dir: &Path) -> bool {
    dir.ancestors().any(|d| d.join(".git").exists())
}

/// A walker over `root` with the rules both search tools share:
/// - hidden files are searched (Pi passes `--hidden` to rg and fd);
/// - `.gitignore`, `.ignore`, git's excludes and `custom_ignore` files are
///   respected; outside a git repository too, as Pi's find does with fd's
///   `--no-require-git` (inside one, git's own rules, so a parent
///   repository's ignores stop at a nested repository);
/// - symlinks are not followed;
/// - entries the policy denies are skipped, and denied directories pruned;
/// - entries come in file-name order, so results are stable.
pub fn walker(root: &SearchRoot, deny: DenyFilter, custom_ignore: &str) -> WalkBuilder {
    let mut builder = WalkBuilder::new(&root.abs);
    builder
        .hidden(false)
        .follow_links(false)
        .require_git(inside_git_repo(&root.real))
        .add_custom_ignore_filename(custom_ignore)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| !deny.denies(entry.path()));
    builder
}

/// `limit` as Pi reads it: floored, at least 1, `default` when absent.
pub fn effective_limit(limit: Option<f64>, default: usize) -> usize {
    match limit {
        None => default,
        Some(l) if l.is_nan() || l < 1.0 => 1,
        Some(l) if l >= usize::MAX as f64 => usize::MAX,
        Some(l) => l.floor() as usize,
    }
}

/// Runs a blocking search on the blocking pool. Cancellation answers at once
/// with [`ABORTED`]; the search itself sees the same token (it should check
/// `ctx.cancel` between entries) and stops soon after.
pub async fn run_blocking<T: Send + 'static>(
    ctx: &ToolContext,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        _ = ctx.cancel.cancelled() => Err(ToolError::new(ABORTED)),
        joined = task => joined.map_err(|e| ToolError::new(format!("search failed: {e}")))?,
    }
}

/// `path` relative to `base`, with `/` separators.
pub fn relative_display(path: &Path, base: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    let parts: Vec<_> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

/// A listing that stopped at its count limit: what the model is told and
/// the `details` key Pi sets to the limit.
pub struct CountLimit {
    /// The limit that was reached.
    pub limit: usize,
    /// Pi's notice, e.g. `500 entries limit reached. Use limit=1000 for more`.
    pub notice: String,
    /// `resultLimitReached` (find) or `entryLimitReached` (ls).
    pub detail_key: &'static str,
}

/// The result of a `find` or `ls` listing: `lines` joined and cut to
/// `max_bytes` from the head, then Pi's notices (count limit first, byte
/// limit second) in one bracket. `totals` are the listing's real line and
/// byte counts when `lines` holds only part of it (find stops keeping lines
/// past the byte limit); by default they are counted from `lines`.
pub fn listing_output(
    lines: &[String],
    max_bytes: usize,
    count_limit: Option<CountLimit>,
    totals: Option<(usize, usize)>,
) -> ToolOutput {
    let truncation = truncate_head(&lines.join("\n"), usize::MAX, max_bytes);
    let mut output = truncation.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if let Some(reached) = count_limit {
        notices.push(reached.notice);
        details.insert(reached.detail_key.into(), json!(reached.limit));
    }
    if truncation.truncated() {
        let (total_lines, total_bytes) =
            totals.unwrap_or((truncation.total_lines, truncation.total_bytes));
        notices.push(format!("{} limit reached", format_size(max_bytes)));
        details.insert(
            "truncation".into(),
            json!({
                "truncated": true,
                "truncatedBy": "bytes",
                "totalLines": total_lines,
                "totalBytes": total_bytes,
                "outputLines": truncation.output_lines,
                "outputBytes": truncation.output_bytes,
            }),
        );
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    ToolOutput::with_details(output, Value::Object(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_floored_and_at_least_one() {
        assert_eq!(effective_limit(None, 100), 100);
        assert_eq!(effective_limit(Some(0.0), 100), 1);
        assert_eq!(effective_limit(Some(-5.0), 100), 1);
        assert_eq!(effective_limit(Some(2.9), 100), 2);
    }

    #[test]
    fn relative_paths_use_slashes() {
        assert_eq!(
            relative_display(Path::new("/w/a/b.rs"), Path::new("/w")),
            "a/b.rs"
        );
    }
}
