//! Text shortening, truncation and sizes: the one place every layer cuts
//! text for a model or a person.
//!
//! Truncation follows Pi's limits.
//! Two limits, whichever is hit first: lines and bytes. Head truncation
//! (read, find, ls, grep) keeps whole lines from the start; tail truncation
//! (bash) keeps the end, where errors and results are. The notices that tell
//! the model how to see more are written by each tool; this module only
//! counts.

/// Pi's `DEFAULT_MAX_LINES`.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Pi's `DEFAULT_MAX_BYTES` (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep match line, in characters, before `... [truncated]`.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

/// What was kept and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncation {
    /// The kept text (lines joined by `\n`, no trailing newline added).
    pub content: String,
    /// `None` when nothing was cut.
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the input (a trailing newline does not start a line).
    pub total_lines: usize,
    /// Bytes in the input.
    pub total_bytes: usize,
    /// Lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// Tail only: the one kept line is the end of a longer line.
    pub last_line_partial: bool,
    /// Head only: the first line alone is over the byte limit, nothing kept.
    pub first_line_exceeds_limit: bool,
}

impl Truncation {
    /// True when something was cut.
    pub fn truncated(&self) -> bool {
        self.truncated_by.is_some()
    }

    /// `Ok` with the whole text when it fits both limits; else `Err` with
    /// an empty cut (by lines until a byte limit says otherwise) to fill in.
    fn start(
        content: &str,
        lines: &[&str],
        max_lines: usize,
        max_bytes: usize,
    ) -> Result<Truncation, Truncation> {
        if lines.len() <= max_lines && content.len() <= max_bytes {
            return Ok(Truncation::whole(content, lines.len()));
        }
        Err(Truncation {
            content: String::new(),
            truncated_by: Some(TruncatedBy::Lines),
            total_lines: lines.len(),
            total_bytes: content.len(),
            output_lines: 0,
            output_bytes: 0,
            last_line_partial: false,
            first_line_exceeds_limit: false,
        })
    }

    fn whole(content: &str, total_lines: usize) -> Truncation {
        Truncation {
            content: content.to_string(),
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
        }
    }
}

/// Lines as counted for limits: a trailing newline does not start a line.
pub fn split_lines(content: &str) -> Vec<&str> {
    if content.is_empty() {
        return Vec::new();
    }
    let body = content.strip_suffix('\n').unwrap_or(content);
    body.split('\n').collect()
}

/// Keeps the first whole lines within both limits.
pub fn truncate_head(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let mut out = match Truncation::start(content, &lines, max_lines, max_bytes) {
        Ok(whole) => return whole,
        Err(cut) => cut,
    };
    if lines.first().is_some_and(|l| l.len() > max_bytes) {
        out.truncated_by = Some(TruncatedBy::Bytes);
        out.first_line_exceeds_limit = true;
        return out;
    }
    let mut bytes = 0;
    let mut kept = 0;
    for (i, line) in lines.iter().take(max_lines).enumerate() {
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > max_bytes {
            out.truncated_by = Some(TruncatedBy::Bytes);
            break;
        }
        bytes += cost;
        kept += 1;
    }
    if kept >= max_lines && bytes <= max_bytes {
        out.truncated_by = Some(TruncatedBy::Lines);
    }
    out.content = lines[..kept].join("\n");
    out.output_lines = kept;
    out.output_bytes = out.content.len();
    out
}

/// Keeps the last whole lines within both limits; when even the last line is
/// over the byte limit, keeps its end.
pub fn truncate_tail(content: &str, max_lines: usize, max_bytes: usize) -> Truncation {
    let lines = split_lines(content);
    let mut out = match Truncation::start(content, &lines, max_lines, max_bytes) {
        Ok(whole) => return whole,
        Err(cut) => cut,
    };
    let mut bytes = 0;
    let mut start = lines.len();
    while start > 0 && lines.len() - start < max_lines {
        let line = lines[start - 1];
        let cost = line.len() + usize::from(start < lines.len());
        if bytes + cost > max_bytes {
            out.truncated_by = Some(TruncatedBy::Bytes);
            if start == lines.len() {
                out.content = tail_bytes(line, max_bytes).to_string();
                out.output_lines = 1;
                out.output_bytes = out.content.len();
                out.last_line_partial = true;
                return out;
            }
            break;
        }
        bytes += cost;
        start -= 1;
    }
    let kept = lines.len() - start;
    if kept >= max_lines && bytes <= max_bytes {
        out.truncated_by = Some(TruncatedBy::Lines);
    }
    out.content = lines[start..].join("\n");
    out.output_lines = kept;
    out.output_bytes = out.content.len();
    out
}

/// The last at most `max_bytes` bytes of `s`, starting on a character boundary.
pub fn tail_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Cuts a grep match line to `max_chars` characters plus `... [truncated]`.
/// Returns the line and whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), false),
        Some((cut, _)) => (format!("{}... [truncated]", &line[..cut]), true),
    }
}

/// `NB`, `N.NKB`, `N.NMB` (51200 -> `50.0KB`), as Pi prints sizes.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// `text` cut to `max_chars` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn sizes_print_like_pi() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(60000), "58.6KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn head_cuts_by_lines_then_bytes() {
        let t = truncate_head(&numbered(2500), DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.total_lines, t.output_lines), (2500, 2000));
        assert!(t.content.ends_with("line 2000"));

        let wide: String = (0..500).map(|_| format!("{}\n", "x".repeat(209))).collect();
        let t = truncate_head(&wide, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(t.output_lines, 243);
        assert!(t.output_bytes <= DEFAULT_MAX_BYTES);
    }

    #[test]
    fn head_never_keeps_part_of_a_line() {
        let t = truncate_head(&"y".repeat(60000), 10, DEFAULT_MAX_BYTES);
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_keeps_the_end() {
        let t = truncate_tail(&numbered(4000), DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
        assert_eq!(t.output_lines, 2000);
        assert!(t.content.starts_with("line 2001\n"));
        assert!(t.content.ends_with("line 4000"));

        let t = truncate_tail(&format!("a\n{}é", "z".repeat(100)), 10, 51);
        assert!(t.last_line_partial);
        assert!(t.content.ends_with('é') && t.content.len() <= 51);
    }

    #[test]
    fn small_input_is_untouched() {
        let t = truncate_tail("a\nb\n", 10, 100);
        assert!(!t.truncated());
        assert_eq!(t.content, "a\nb\n");
        assert_eq!(t.total_lines, 2);
    }

    #[test]
    fn grep_lines_are_cut_by_characters() {
        let (s, cut) = truncate_line(&"é".repeat(600), GREP_MAX_LINE_LENGTH);
        assert!(cut);
        assert_eq!(s.chars().count(), 500 + "... [truncated]".len());
        assert_eq!(truncate_line("short", 500), ("short".to_string(), false));
    }
}
