//! The built-in `find` tool: files by glob pattern, as Pi runs `fd --glob`,
//! walked with ripgrep's `ignore` crate instead of an `fd` process.
//!
//! Pattern rules (fd's, as Pi drives it):
//! - a pattern without `/` matches file names at any depth (`*.rs`);
//! - a relative pattern with `/` is anchored at the search directory
//!   (`src/*.rs` finds `src/a.rs`, not `pkg/src/b.rs`); `**` crosses
//!   directories, `*` does not; an absolute pattern matches absolute paths;
//! - a leading `./` is dropped;
//! - smart case: an all-lowercase pattern matches case-insensitively.
//!
//! Directories match too and print with a trailing `/`.

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::search::{
    effective_limit, listing_output, relative_display, resolve_root, run_blocking, walker,
    CountLimit, DenyFilter, SearchRoot, ABORTED,
};
use super::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Pi's default result limit.
pub const DEFAULT_LIMIT: usize = 1000;

/// Finds files by glob pattern.
#[derive(Debug, Default)]
pub struct Find;

impl Tool for Find {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let pattern = args
                .get("pattern")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::new("find needs a `pattern` string"))?;
            let matcher = PatternMatcher::new(pattern)?;
            let limit = effective_limit(args.get("limit").and_then(Value::as_f64), DEFAULT_LIMIT);
            let root = resolve_root(ctx, args.get("path").and_then(Value::as_str))?;
            if !root.is_dir {
                return Err(ToolError::new(format!(
                    "Not a directory: {}",
                    root.abs.display()
                )));
            }
            let owned = ctx.clone();
            run_blocking(ctx, move || find(&owned, &root, &matcher, limit)).await
        })
    }
}

/// What a pattern is matched against.
#[derive(Debug)]
enum Target {
    FileName,
    RelativePath,
    AbsolutePath,
}

/// A compiled find pattern.
#[derive(Debug)]
struct PatternMatcher {
    glob: GlobMatcher,
    target: Target,
}

impl PatternMatcher {
    fn new(pattern: &str) -> Result<PatternMatcher, ToolError> {
        let mut p = pattern;
        while let Some(rest) = p.strip_prefix("./") {
            p = rest;
        }
        let target = if !p.contains('/') {
            Target::FileName
        } else if p.starts_with('/') {
            Target::AbsolutePath
        } else {
            Target::RelativePath
        };
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .backslash_escape(true)
            .case_insensitive(p == p.to_lowercase())
            .build()
            .map_err(|e| ToolError::new(format!("Invalid glob pattern `{pattern}`: {e}")))?
            .compile_matcher();
        Ok(PatternMatcher { glob, target })
    }

    fn is_match(&self, abs: &std::path::Path, rel: &str) -> bool {
        match self.target {
            Target::FileName => abs.file_name().is_some_and(|n| self.glob.is_match(n)),
            Target::RelativePath => self.glob.is_match(rel),
            Target::AbsolutePath => self.glob.is_match(abs),
        }
    }
}

fn find(
    ctx: &ToolContext,
    root: &SearchRoot,
    matcher: &PatternMatcher,
    limit: usize,
) -> Result<ToolOutput, ToolError> {
    let max_bytes = usize::try_from(ctx.limits.max_output_bytes).unwrap_or(usize::MAX);
    let deny = DenyFilter::new(ctx, root);
    let mut stored = Vec::new();
    let mut count = 0usize;
    let mut output_bytes = 0usize;
    let mut limit_reached = false;
    for entry in walker(root, deny, ".fdignore").build() {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new(ABORTED));
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let rel = relative_display(entry.path(), &root.abs);
        if !matcher.is_match(entry.path(), &rel) {
            continue;
        }
        // One result past the limit tells "exactly N" from "more than N".
        if count == limit {
            limit_reached = true;
            break;
        }
        count += 1;
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        let result = if is_dir { format!("{rel}/") } else { rel };
        let len = result.len();
        // Results past the byte cap are counted, not kept.
        if output_bytes <= max_bytes.saturating_add(1) {
            stored.push(result);
        }
        output_bytes += len + 1;
    }
    if count == 0 {
        return Ok(ToolOutput::text("No files found matching pattern"));
    }
    let count_limit = limit_reached.then(|| CountLimit {
        limit,
        notice: format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit.saturating_mul(2)
        ),
        detail_key: "resultLimitReached",
    });
    let totals = (count, output_bytes.saturating_sub(1));
    Ok(listing_output(
        &stored,
        max_bytes,
        count_limit,
        Some(totals),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn patterns_follow_fd() {
        let m = PatternMatcher::new("*.rs").unwrap();
        assert!(m.is_match(Path::new("/w/src/deep/a.rs"), "src/deep/a.rs"));
        assert!(m.is_match(Path::new("/w/A.RS"), "A.RS"), "smart case");

        let m = PatternMatcher::new("./src/*.rs").unwrap();
        assert!(m.is_match(Path::new("/w/src/a.rs"), "src/a.rs"));
        assert!(!m.is_match(Path::new("/w/pkg/src/b.rs"), "pkg/src/b.rs"));
        assert!(!m.is_match(Path::new("/w/src/x/c.rs"), "src/x/c.rs"));

        let m = PatternMatcher::new("**/src/*.rs").unwrap();
        assert!(m.is_match(Path::new("/w/pkg/src/b.rs"), "pkg/src/b.rs"));

        let m = PatternMatcher::new("*.RS").unwrap();
        assert!(
            !m.is_match(Path::new("/w/a.rs"), "a.rs"),
            "mixed case is exact"
        );
    }
}
