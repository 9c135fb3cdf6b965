//! The edit tool's diff: Pi's display diff (numbered lines, 4 lines of
//! context, `...` for skipped runs), a unified patch, and the first changed
//! line.
//!
//! As in Pi, only windows around the replacements are diffed (32 unchanged
//! lines on each side, merged when they touch), so the cost follows the size
//! of the change, not of the file; the result is the whole-file diff's.

use similar::{Algorithm, ChangeTag, TextDiff};

use super::edit_match::Replacement;

/// Lines of context shown around a change.
const CONTEXT_LINES: usize = 4;
/// Unchanged lines diffed on each side of a replacement: well above the
/// context shown, so a change is aligned within its window as it would be
/// over the whole file.
const DIFF_WINDOW_MARGIN_LINES: usize = 32;

/// What the edit tool reports in its details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditDiff {
    /// Pi's display diff: `+N text`, `-N text`, ` N text`, ` ...`.
    pub diff: String,
    /// A unified patch with `--- PATH` / `+++ PATH` headers.
    pub patch: String,
    /// The first changed line, 1-based, in the new file.
    pub first_changed_line: Option<usize>,
}

/// Diffs `base` (the LF-normalized original) against `new`, where
/// `replacements` (sorted, disjoint, in `base`'s offsets) made the difference.
pub fn generate_edit_diff(
    path: &str,
    base: &str,
    new: &str,
    replacements: &[Replacement],
) -> EditDiff {
    let width = count_lines(base).max(count_lines(new)).to_string().len();
    let skip_marker = format!(" {} ...", " ".repeat(width));
    let mut output: Vec<String> = Vec::new();
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut first_changed_line = None;
    for window in diff_windows(base, replacements) {
        let old_text = base
            .get(window.old_start..window.old_end)
            .unwrap_or_default();
        let new_text = new
            .get(window.new_start..window.new_end)
            .unwrap_or_default();
        let parts = diff_lines(old_text, new_text);
        let shown = display_diff(&parts, window.old_line + 1, window.new_line + 1, width);
        first_changed_line = first_changed_line.or(shown.first_changed_line);
        let mut lines = shown.lines.into_iter().peekable();
        // Both windows around a run of unchanged lines mark it as skipped;
        // the whole-file diff shows one marker.
        if output.last() == Some(&skip_marker) && lines.peek() == Some(&skip_marker) {
            lines.next();
        }
        output.extend(lines);
        for mut hunk in patch_hunks(&parts) {
            hunk.old_start += window.old_line;
            hunk.new_start += window.new_line;
            hunks.push(hunk);
        }
    }
    EditDiff {
        diff: output.join("\n"),
        patch: format_patch(path, &hunks),
        first_changed_line,
    }
}

/// Lines as `text.split("\n").length` counts them.
fn count_lines(text: &str) -> usize {
    count_line_feeds(text) + 1
}

fn count_line_feeds(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count()
}

/// Start of the line that holds `offset`.
fn line_start_before(text: &str, offset: usize) -> usize {
    if offset == 0 {
        return 0;
    }
    memchr::memrchr(b'\n', &text.as_bytes()[..offset.min(text.len())]).map_or(0, |i| i + 1)
}

/// A whole-line range of the old text and the matching range of the new.
#[derive(Debug)]
struct Window {
    old_start: usize,
    old_end: usize,
    /// Lines before `old_start` in the old text.
    old_line: usize,
    new_start: usize,
    new_end: usize,
    /// Lines before `new_start` in the new text.
    new_line: usize,
}

/// Windows with margin around the replacements; overlapping windows merge.
fn diff_windows(base: &str, replacements: &[Replacement]) -> Vec<Window> {
    let bytes = base.as_bytes();
    let mut windows: Vec<Window> = Vec::new();
    // Offset and line shifts of the replacements so far, and a line cursor.
    let (mut offset_delta, mut line_delta) = (0isize, 0isize);
    let (mut cursor_offset, mut cursor_line) = (0usize, 0usize);
    let shift = |at: usize, by: isize| at.saturating_add_signed(by);
    for r in replacements {
        let match_end = r.match_index + r.match_length;
        let mut start = line_start_before(base, r.match_index);
        for _ in 0..DIFF_WINDOW_MARGIN_LINES {
            if start == 0 {
                break;
            }
            start = line_start_before(base, start - 1);
        }
        let mut end = match_end;
        for i in 0..=DIFF_WINDOW_MARGIN_LINES {
            if end >= base.len() {
                break;
            }
            let from = if i == 0 {
                match_end.saturating_sub(1).max(r.match_index)
            } else {
                end
            };
            end = bytes
                .get(from..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map_or(base.len(), |i| from + i + 1);
        }
        let replaced = base.get(r.match_index..match_end).unwrap_or_default();
        let offset_shift = r.new_text.len() as isize - r.match_length as isize;
        let line_shift =
            count_line_feeds(&r.new_text) as isize - count_line_feeds(replaced) as isize;
        match windows.last_mut() {
            Some(previous) if start <= previous.old_end => {
                previous.old_end = previous.old_end.max(end);
                previous.new_end = shift(previous.old_end, offset_delta + offset_shift);
            }
            _ => {
                cursor_line += count_line_feeds(base.get(cursor_offset..start).unwrap_or_default());
                cursor_offset = start;
                windows.push(Window {
                    old_start: start,
                    old_end: end,
                    old_line: cursor_line,
                    new_start: shift(start, offset_delta),
                    new_end: shift(end, offset_delta + offset_shift),
                    new_line: cursor_line.saturating_add_signed(line_delta),
                });
            }
        }
        offset_delta += offset_shift;
        line_delta += line_shift;
    }
    windows
}

/// A run of lines (each with its `\n`, the last maybe without) that is
/// unchanged, removed or added.
#[derive(Debug)]
struct Part<'a> {
    tag: ChangeTag,
    lines: Vec<&'a str>,
}

impl Part<'_> {
    fn is_change(&self) -> bool {
        self.tag != ChangeTag::Equal
    }
}

/// A line diff as jsdiff's `diffLines` gives it: within each changed region
/// the removed lines come first, then the added ones.
fn diff_lines<'a>(old: &'a str, new: &'a str) -> Vec<Part<'a>> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(old, new);
    let mut parts: Vec<Part<'a>> = Vec::new();
    let (mut removed, mut added): (Vec<&'a str>, Vec<&'a str>) = (Vec::new(), Vec::new());
    let flush =
        |parts: &mut Vec<Part<'a>>, removed: &mut Vec<&'a str>, added: &mut Vec<&'a str>| {
            if !removed.is_empty() {
                parts.push(Part {
                    tag: ChangeTag::Delete,
                    lines: std::mem::take(removed),
                });
            }
            if !added.is_empty() {
                parts.push(Part {
                    tag: ChangeTag::Insert,
                    lines: std::mem::take(added),
                });
            }
        };
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Delete => removed.push(change.value()),
            ChangeTag::Insert => added.push(change.value()),
            ChangeTag::Equal => {
                flush(&mut parts, &mut removed, &mut added);
                match parts.last_mut() {
                    Some(part) if part.tag == ChangeTag::Equal => part.lines.push(change.value()),
                    _ => parts.push(Part {
                        tag: ChangeTag::Equal,
                        lines: vec![change.value()],
                    }),
                }
            }
        }
    }
    flush(&mut parts, &mut removed, &mut added);
    parts
}

/// Display lines and the first changed line of one window.
struct Shown {
    lines: Vec<String>,
    first_changed_line: Option<usize>,
}

/// Pi's `formatDisplayDiff`: changes numbered, up to 4 context lines around
/// them, `...` for what is skipped.
fn display_diff(parts: &[Part<'_>], old_start: usize, new_start: usize, width: usize) -> Shown {
    let mut out = Vec::new();
    let (mut old_line, mut new_line) = (old_start, new_start);
    let mut last_was_change = false;
    let mut first_changed_line = None;
    let skip = format!(" {} ...", " ".repeat(width));
    let numbered = |sign: char, n: usize, line: &str| {
        format!(
            "{sign}{n:>width$} {}",
            line.strip_suffix('\n').unwrap_or(line)
        )
    };
    for (i, part) in parts.iter().enumerate() {
        if part.is_change() {
            first_changed_line.get_or_insert(new_line);
            for line in &part.lines {
                if part.tag == ChangeTag::Insert {
                    out.push(numbered('+', new_line, line));
                    new_line += 1;
                } else {
                    out.push(numbered('-', old_line, line));
                    old_line += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(Part::is_change);
        let lines = &part.lines;
        let context =
            |out: &mut Vec<String>, shown: &[&str], old_line: &mut usize, new_line: &mut usize| {
                for line in shown {
                    out.push(numbered(' ', *old_line, line));
                    *old_line += 1;
                    *new_line += 1;
                }
            };
        let (lead, trail) = match (last_was_change, next_is_change) {
            (true, true) if lines.len() <= CONTEXT_LINES * 2 => (lines.len(), 0),
            (true, true) => (CONTEXT_LINES, CONTEXT_LINES),
            (true, false) => (CONTEXT_LINES.min(lines.len()), 0),
            (false, true) => (0, CONTEXT_LINES.min(lines.len())),
            (false, false) => (0, 0),
        };
        context(&mut out, &lines[..lead], &mut old_line, &mut new_line);
        let skipped = lines.len() - lead - trail;
        if skipped > 0 && (last_was_change || next_is_change) {
            out.push(skip.clone());
        }
        old_line += skipped;
        new_line += skipped;
        context(
            &mut out,
            &lines[lines.len() - trail..],
            &mut old_line,
            &mut new_line,
        );
        last_was_change = false;
    }
    Shown {
        lines: out,
        first_changed_line,
    }
}

/// One `@@` hunk of the patch; `lines` carry their `\n`.
#[derive(Debug)]
struct Hunk {
    old_start: usize,
    old_lines: usize,
    new_start: usize,
    new_lines: usize,
    lines: Vec<String>,
}

/// jsdiff's `structuredPatch` hunks with 4 lines of context.
fn patch_hunks(parts: &[Part<'_>]) -> Vec<Hunk> {
    let mut hunks = Vec::new();
    // `range` holds the hunk being built and where it starts (1-based).
    let mut range: Option<(usize, usize, Vec<String>)> = None;
    let (mut old_line, mut new_line) = (1usize, 1usize);
    for (i, part) in parts.iter().enumerate() {
        if part.is_change() {
            let (_, _, lines) = range.get_or_insert_with(|| {
                let before = match i.checked_sub(1).map(|p| &parts[p]) {
                    Some(prev) => &prev.lines[prev.lines.len().saturating_sub(CONTEXT_LINES)..],
                    None => &[][..],
                };
                let context = before.iter().map(|l| format!(" {l}")).collect::<Vec<_>>();
                (old_line - context.len(), new_line - context.len(), context)
            });
            let sign = if part.tag == ChangeTag::Insert {
                '+'
            } else {
                '-'
            };
            lines.extend(part.lines.iter().map(|l| format!("{sign}{l}")));
            if part.tag == ChangeTag::Insert {
                new_line += part.lines.len();
            } else {
                old_line += part.lines.len();
            }
            continue;
        }
        if let Some((old_start, new_start, mut lines)) = range.take() {
            let is_last = i + 1 == parts.len();
            if part.lines.len() <= CONTEXT_LINES * 2 && !is_last {
                // Joins the next change: keep it all as context.
                lines.extend(part.lines.iter().map(|l| format!(" {l}")));
                range = Some((old_start, new_start, lines));
            } else {
                let shown = part.lines.len().min(CONTEXT_LINES);
                lines.extend(part.lines[..shown].iter().map(|l| format!(" {l}")));
                hunks.push(Hunk {
                    old_start,
                    old_lines: old_line - old_start + shown,
                    new_start,
                    new_lines: new_line - new_start + shown,
                    lines,
                });
            }
        }
        old_line += part.lines.len();
        new_line += part.lines.len();
    }
    if let Some((old_start, new_start, lines)) = range {
        hunks.push(Hunk {
            old_start,
            old_lines: old_line - old_start,
            new_start,
            new_lines: new_line - new_start,
            lines,
        });
    }
    hunks
}

/// jsdiff's `formatPatch` with file headers only.
fn format_patch(path: &str, hunks: &[Hunk]) -> String {
    let mut out = vec![format!("--- {path}"), format!("+++ {path}")];
    for hunk in hunks {
        // Unified diff quirk: an empty side starts one line earlier.
        let old_start = hunk.old_start - usize::from(hunk.old_lines == 0 && hunk.old_start > 0);
        let new_start = hunk.new_start - usize::from(hunk.new_lines == 0 && hunk.new_start > 0);
        out.push(format!(
            "@@ -{old_start},{} +{new_start},{} @@",
            hunk.old_lines, hunk.new_lines
        ));
        for line in &hunk.lines {
            match line.strip_suffix('\n') {
                Some(line) => out.push(line.to_string()),
                None => {
                    out.push(line.clone());
                    out.push("\\ No newline at end of file".to_string());
                }
            }
        }
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replacement(base: &str, old: &str, new: &str) -> Replacement {
        Replacement {
            match_index: base.find(old).unwrap(),
            match_length: old.len(),
            new_text: new.to_string(),
        }
    }

    #[test]
    fn pi_vector() {
        let base = "foo\nbar\nbaz\n";
        let reps = [
            replacement(base, "foo\n", "foo bar\n"),
            replacement(base, "bar\n", "BAR\n"),
        ];
        let d = generate_edit_diff("v.txt", base, "foo bar\nBAR\nbaz\n", &reps);
        assert_eq!(d.diff, "-1 foo\n-2 bar\n+1 foo bar\n+2 BAR\n 3 baz");
        assert_eq!(
            d.patch,
            "--- v.txt\n+++ v.txt\n@@ -1,3 +1,3 @@\n-foo\n-bar\n+foo bar\n+BAR\n baz\n"
        );
        assert_eq!(d.first_changed_line, Some(1));
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let base = "a\nb";
        let d = generate_edit_diff("n.txt", base, "a\nc", &[replacement(base, "b", "c")]);
        assert_eq!(d.diff, " 1 a\n-2 b\n+2 c");
        assert_eq!(
            d.patch,
            "--- n.txt\n+++ n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
        assert_eq!(d.first_changed_line, Some(2));
    }
}
