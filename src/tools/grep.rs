//! The built-in `grep` tool: Pi's parameters, output and notices, searched
//! with ripgrep's own crates instead of an `rg` process.
//!
//! Output is `file:N: text` for a match and `file-N- text` for a context
//! line, paths relative to the searched directory (the file name when one
//! file is searched). Like Pi, the match limit is only reported as reached
//! when one more match proves that results were cut off, and the last
//! allowed match still gets its trailing context.

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use serde_json::{json, Map, Value};

use super::search::{
    effective_limit, relative_display, resolve_root, run_blocking, walker, DenyFilter, SearchRoot,
    ABORTED,
};
use super::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::text::{format_size, truncate_head, truncate_line, GREP_MAX_LINE_LENGTH};

/// Pi's default match limit.
pub const DEFAULT_LIMIT: usize = 100;

/// Searches file contents.
#[derive(Debug, Default)]
pub struct Grep;

impl Tool for Grep {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let params = Params::from_args(&args)?;
            let root = resolve_root(ctx, args.get("path").and_then(Value::as_str))?;
            let owned = ctx.clone();
            run_blocking(ctx, move || search(&owned, &root, &params)).await
        })
    }
}

struct Params {
    pattern: String,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: u64,
    limit: usize,
}

impl Params {
    fn from_args(args: &Value) -> Result<Params, ToolError> {
        let pattern = args
            .get("pattern")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("grep needs a `pattern` string"))?;
        let flag = |name| args.get(name).and_then(Value::as_bool).unwrap_or(false);
        let context = args
            .get("context")
            .and_then(Value::as_f64)
            .filter(|c| *c > 0.0)
            .map(|c| c.min(u32::MAX as f64).floor() as u64)
            .unwrap_or(0);
        Ok(Params {
            pattern: pattern.to_string(),
            glob: args
                .get("glob")
                .and_then(Value::as_str)
                .filter(|g| !g.is_empty())
                .map(strip_dot_slash),
            ignore_case: flag("ignoreCase"),
            literal: flag("literal"),
            context,
            limit: effective_limit(args.get("limit").and_then(Value::as_f64), DEFAULT_LIMIT),
        })
    }
}

/// rg never matches a leading `./` (`./src/*.ts` finds nothing), so Pi drops
/// it, keeping a `!` negation.
fn strip_dot_slash(glob: &str) -> String {
    let (neg, mut rest) = match glob.strip_prefix('!') {
        Some(r) => ("!", r),
        None => ("", glob),
    };
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    format!("{neg}{rest}")
}

/// The running result, fed line by line in rg's event order.
struct Collected {
    limit: usize,
    context: u64,
    max_bytes: usize,
    lines: Vec<String>,
    /// Bytes of every line (stored or not) plus a newline each.
    output_bytes: usize,
    output_line_count: usize,
    match_count: usize,
    limit_hit: bool,
    trailing_context_end: u64,
    last_file: String,
    match_limit_reached: bool,
    lines_truncated: bool,
    done: bool,
}

impl Collected {
    fn push_line(&mut self, file: &str, line_number: u64, bytes: &[u8], is_match: bool) {
        self.last_file = file.to_string();
        let text = String::from_utf8_lossy(bytes);
        // Strip only the line terminator: a lone CR inside a line is content.
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        self.lines_truncated |= cut;
        let line = if is_match {
            format!("{file}:{line_number}: {text}")
        } else {
            format!("{file}-{line_number}- {text}")
        };
        // Lines past the byte cap are counted but not stored: truncation
        // drops them anyway.
        let len = line.len();
        if self.output_bytes <= self.max_bytes.saturating_add(1) {
            self.lines.push(line);
        }
        self.output_bytes += len + 1;
        self.output_line_count += 1;
    }

    /// One match or context line. Returns false when the search may stop.
    fn on_line(&mut self, file: &str, line_number: u64, bytes: &[u8], is_match: bool) -> bool {
        if self.done {
            return false;
        }
        if !self.limit_hit {
            self.push_line(file, line_number, bytes, is_match);
            if is_match {
                self.match_count += 1;
                if self.match_count >= self.limit {
                    self.limit_hit = true;
                    self.trailing_context_end = line_number + self.context;
                }
            }
            return true;
        }
        let in_window = file == self.last_file && line_number <= self.trailing_context_end;
        // A match inside the last match's trailing context is shown as context.
        if in_window {
            self.push_line(file, line_number, bytes, false);
        }
        // Only another match proves that the limit cut results off.
        if is_match {
            self.match_limit_reached = true;
        }
        if self.match_limit_reached && !(in_window && line_number < self.trailing_context_end) {
            self.done = true;
        }
        !self.done
    }

    fn into_output(self) -> ToolOutput {
        if self.match_count == 0 {
            return ToolOutput::text("No matches found");
        }
        let raw = self.lines.join("\n");
        let truncation = truncate_head(&raw, usize::MAX, self.max_bytes);
        let mut output = truncation.content.clone();
        let mut details = Map::new();
        let mut notices = Vec::new();
        if self.match_limit_reached {
            notices.push(format!(
                "{} matches limit reached. Use limit={} for more, or refine pattern",
                self.limit,
                self.limit.saturating_mul(2)
            ));
            details.insert("matchLimitReached".into(), json!(self.limit));
        }
        if truncation.truncated() {
            notices.push(format!("{} limit reached", format_size(self.max_bytes)));
            details.insert(
                "truncation".into(),
                json!({
                    "truncated": true,
                    "truncatedBy": "bytes",
                    "totalLines": self.output_line_count,
                    "totalBytes": self.output_bytes.saturating_sub(1),
                    "outputLines": truncation.output_lines,
                    "outputBytes": truncation.output_bytes,
                }),
            );
        }
        if self.lines_truncated {
            notices.push(format!(
                "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
            ));
            details.insert("linesTruncated".into(), json!(true));
        }
        if !notices.is_empty() {
            output.push_str(&format!("\n\n[{}]", notices.join(". ")));
        }
        ToolOutput::with_details(output, Value::Object(details))
    }
}

/// Feeds one file's events into [`Collected`].
struct FileSink<'a> {
    collected: &'a mut Collected,
    display: &'a str,
    ctx: &'a ToolContext,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        if self.ctx.cancel.is_cancelled() {
            return Ok(false);
        }
        let n = m.line_number().unwrap_or(0);
        Ok(self.collected.on_line(self.display, n, m.bytes(), true))
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        let n = c.line_number().unwrap_or(0);
        Ok(self.collected.on_line(self.display, n, c.bytes(), false))
    }
}

fn search(ctx: &ToolContext, root: &SearchRoot, params: &Params) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(params.ignore_case)
        .fixed_strings(params.literal)
        .line_terminator(Some(b'\n'))
        .build(&params.pattern)
        .map_err(|e| ToolError::new(e.to_string()))?;
    let context = usize::try_from(params.context).unwrap_or(usize::MAX);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .before_context(context)
        .after_context(context)
        // Files with NUL bytes are binary: skipped, as rg skips them.
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build();
    let mut collected = Collected {
        limit: params.limit,
        context: params.context,
        max_bytes: usize::try_from(ctx.limits.max_output_bytes).unwrap_or(usize::MAX),
        lines: Vec::new(),
        output_bytes: 0,
        output_line_count: 0,
        match_count: 0,
        limit_hit: false,
        trailing_context_end: 0,
        last_file: String::new(),
        match_limit_reached: false,
        lines_truncated: false,
        done: false,
    };
    let deny = DenyFilter::new(ctx, root);

    let mut search_one = |abs: &std::path::Path, display: &str, collected: &mut Collected| {
        // Opened through the sandbox: a file swapped for a symlink after the
        // walk saw it cannot lead out of the workspace roots.
        let Ok((dir, rel)) = ctx.sandbox.locate(abs) else {
            return;
        };
        let Ok(file) = dir.open(&rel) else { return };
        let file = file.into_std();
        let sink = FileSink {
            collected,
            display,
            ctx,
        };
        // An unreadable file is skipped, as rg skips it (with a warning).
        let _ = searcher.search_file(&matcher, &file, sink);
    };

    if !root.is_dir {
        let name = root
            .abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        search_one(&root.abs, &name, &mut collected);
    } else {
        let mut builder = walker(root, deny, ".rgignore");
        if let Some(glob) = &params.glob {
            let mut overrides = OverrideBuilder::new(&root.abs);
            overrides
                .add(glob)
                .map_err(|e| ToolError::new(format!("Invalid glob: {e}")))?;
            builder.overrides(
                overrides
                    .build()
                    .map_err(|e| ToolError::new(format!("Invalid glob: {e}")))?,
            );
        }
        for entry in builder.build() {
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::new(ABORTED));
            }
            if collected.done {
                break;
            }
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let display = relative_display(entry.path(), &root.abs);
            search_one(entry.path(), &display, &mut collected);
        }
    }
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    Ok(collected.into_output())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_dot_slash_is_dropped_from_globs() {
        assert_eq!(strip_dot_slash("./src/*.rs"), "src/*.rs");
        assert_eq!(strip_dot_slash("!././x"), "!x");
        assert_eq!(strip_dot_slash("*.rs"), "*.rs");
    }
}
