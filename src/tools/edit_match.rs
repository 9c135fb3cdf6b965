//! Matching and applying the edit tool's replacements, as Pi 1.6 does.
//!
//! - Every edit is matched against the original content (line endings
//!   normalized to LF), never against the result of an earlier edit.
//! - Exact matching first. When an edit's text is not found exactly, Pi
//!   matches *fuzzily*: both sides NFKC-normalized, trailing whitespace
//!   stripped from each line, typographic quotes, dashes and spaces made
//!   ASCII. If any edit needs that, all of them are matched in the fuzzy
//!   view, and each replaced line block is rewritten from the fuzzy view while
//!   every untouched line keeps its original bytes.
//! - Uniqueness is always counted in the fuzzy view: `x` is not unique in a
//!   file holding `x` and `x  `.
//! - Any failure (empty, not found, not unique, overlapping, no change) fails
//!   the whole call: all or nothing.
//!
//! Offsets here are byte offsets (Pi's are UTF-16 units); they are only ever
//! compared with each other, so the results are the same.

use std::borrow::Cow;
use std::cell::OnceCell;

use unicode_normalization::UnicodeNormalization;

/// One `{oldText, newText}` of the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditSpec {
    /// The text to find; must be unique in the file.
    pub old_text: String,
    /// What replaces it.
    pub new_text: String,
}

/// A replacement of `match_length` bytes at `match_index` by `new_text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replacement {
    /// Where the replaced text starts.
    pub match_index: usize,
    /// How long the replaced text is.
    pub match_length: usize,
    /// What replaces it.
    pub new_text: String,
}

/// The edits applied to the LF-normalized content.
#[derive(Debug)]
pub struct Applied {
    /// The new content (LF line endings).
    pub new_content: String,
    /// What was replaced, in the LF-normalized original's offsets, sorted and
    /// disjoint.
    pub replacements: Vec<Replacement>,
}

/// `\r\n` and lone `\r` become `\n`.
pub fn normalize_to_lf(text: &str) -> Cow<'_, str> {
    if !text.contains('\r') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// A leading byte order mark and the rest.
pub fn split_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", text),
    }
}

/// JavaScript's `WhiteSpace` and `LineTerminator`, which `trimEnd` strips
/// (Rust's `trim_end` differs: it keeps U+FEFF and strips U+0085).
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{B}' | '\u{C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// Pi's `normalizeForFuzzyMatch`: NFKC, trailing whitespace stripped per
/// line, typographic quotes, dashes and spaces made ASCII.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    // ASCII is its own NFKC form; skip the normalizer for it.
    let nfkc: Cow<'_, str> = if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    };
    let mut out = String::with_capacity(nfkc.len());
    for (i, line) in nfkc.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.extend(
            line.trim_end_matches(is_js_whitespace)
                .chars()
                .map(|c| match c {
                    '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
                    '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
                    '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
                    '\u{A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
                        ' '
                    }
                    c => c,
                }),
        );
    }
    out
}

/// Non-overlapping occurrences, as `content.split(pattern).length - 1`
/// counts them (an empty pattern splits between characters).
fn count_occurrences(content: &str, pattern: &str) -> usize {
    if pattern.is_empty() {
        return content.chars().count().saturating_sub(1);
    }
    content.matches(pattern).count()
}

/// Where `old` is in `content`: exactly, else in the fuzzy view (then the
/// offsets are the fuzzy view's). Returns (index, length, used fuzzy).
fn find_text(content: &str, fuzzy_content: &str, old: &str) -> Option<(usize, usize, bool)> {
    if let Some(i) = content.find(old) {
        return Some((i, old.len(), false));
    }
    let fuzzy_old = normalize_for_fuzzy_match(old);
    fuzzy_content
        .find(&fuzzy_old)
        .map(|i| (i, fuzzy_old.len(), true))
}

/// Applies `edits` to `normalized` (the file, BOM stripped, LF line endings)
/// or fails with Pi's message for the first problem. `path` is the path as
/// the call gave it.
pub fn apply_edits(normalized: &str, edits: &[EditSpec], path: &str) -> Result<Applied, String> {
    let total = edits.len();
    let edits: Vec<EditSpec> = edits
        .iter()
        .map(|e| EditSpec {
            old_text: normalize_to_lf(&e.old_text).into_owned(),
            new_text: normalize_to_lf(&e.new_text).into_owned(),
        })
        .collect();
    if let Some(i) = edits.iter().position(|e| e.old_text.is_empty()) {
        return Err(if total == 1 {
            format!("oldText must not be empty in {path}.")
        } else {
            format!("edits[{i}].oldText must not be empty in {path}.")
        });
    }

    let fuzzy_of_normalized = OnceCell::new();
    let fuzzy_normalized =
        || fuzzy_of_normalized.get_or_init(|| normalize_for_fuzzy_match(normalized));
    let used_fuzzy = edits.iter().any(|e| {
        !normalized.contains(&e.old_text)
            && fuzzy_normalized().contains(&normalize_for_fuzzy_match(&e.old_text))
    });
    let base: &str = if used_fuzzy {
        fuzzy_normalized()
    } else {
        normalized
    };
    // The view uniqueness is counted in: the fuzzy view of the base.
    let fuzzy_of_base = OnceCell::new();
    let fuzzy_base = || fuzzy_of_base.get_or_init(|| normalize_for_fuzzy_match(base));

    let mut matched = Vec::with_capacity(total);
    for (i, edit) in edits.iter().enumerate() {
        let Some((index, length, _)) = find_text(base, fuzzy_base(), &edit.old_text) else {
            return Err(if total == 1 {
                format!("Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines.")
            } else {
                format!("Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines.")
            });
        };
        let occurrences =
            count_occurrences(fuzzy_base(), &normalize_for_fuzzy_match(&edit.old_text));
        if occurrences > 1 {
            return Err(if total == 1 {
                format!("Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique.")
            } else {
                format!("Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique.")
            });
        }
        matched.push((
            i,
            Replacement {
                match_index: index,
                match_length: length,
                new_text: edit.new_text.clone(),
            },
        ));
    }

    matched.sort_by_key(|(_, r)| r.match_index);
    for pair in matched.windows(2) {
        let ((prev_i, prev), (cur_i, cur)) = (&pair[0], &pair[1]);
        if prev.match_index + prev.match_length > cur.match_index {
            return Err(format!("edits[{prev_i}] and edits[{cur_i}] overlap in {path}. Merge them into one edit or target disjoint regions."));
        }
    }
    let matched: Vec<Replacement> = matched.into_iter().map(|(_, r)| r).collect();
    let replacements = if used_fuzzy {
        widen_to_lines(normalized, base, &matched)?
    } else {
        matched
    };
    let new_content = apply_replacements(normalized, &replacements, 0);
    if new_content == normalized {
        return Err(if total == 1 {
            format!("No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.")
        } else {
            format!("No changes made to {path}. The replacements produced identical content.")
        });
    }
    Ok(Applied {
        new_content,
        replacements,
    })
}

/// `content` (which starts at `offset` of the text the replacements refer
/// to) with the sorted, disjoint `replacements` applied.
fn apply_replacements(content: &str, replacements: &[Replacement], offset: usize) -> String {
    let mut out = String::with_capacity(content.len());
    let mut position = 0;
    for r in replacements {
        let start = r.match_index - offset;
        out.push_str(content.get(position..start).unwrap_or_default());
        out.push_str(&r.new_text);
        position = start + r.match_length;
    }
    out.push_str(content.get(position..).unwrap_or_default());
    out
}

/// Byte ranges of the lines of `content`, each with its `\n`; a last line
/// without one counts when it is not empty.
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for newline in memchr::memchr_iter(b'\n', content.as_bytes()) {
        spans.push((start, newline + 1));
        start = newline + 1;
    }
    if start < content.len() {
        spans.push((start, content.len()));
    }
    spans
}

const OUTSIDE_BASE: &str = "Replacement range is outside the base content.";

/// The lines `[start, end)` a replacement touches.
fn touched_lines(lines: &[(usize, usize)], r: &Replacement) -> Result<(usize, usize), String> {
    let end_offset = r.match_index + r.match_length;
    let start = lines
        .iter()
        .position(|&(s, e)| r.match_index >= s && r.match_index < e)
        .ok_or(OUTSIDE_BASE)?;
    let mut end = start;
    while end < lines.len() && lines[end].1 < end_offset {
        end += 1;
    }
    if end >= lines.len() {
        return Err(OUTSIDE_BASE.to_string());
    }
    Ok((start, end + 1))
}

/// Turns replacements matched in the fuzzy view `base` into replacements of
/// `original` that rewrite only the lines they touch (from the fuzzy view)
/// and keep every other line's bytes.
fn widen_to_lines(
    original: &str,
    base: &str,
    replacements: &[Replacement],
) -> Result<Vec<Replacement>, String> {
    let original_lines = line_spans(original);
    let base_lines = line_spans(base);
    if original_lines.len() != base_lines.len() {
        return Err(
            "Cannot preserve unchanged lines because the base content has a different line count."
                .to_string(),
        );
    }
    // Groups of replacements whose line ranges overlap: (start, end, members).
    let mut groups: Vec<(usize, usize, Vec<Replacement>)> = Vec::new();
    for r in replacements {
        let (start, end) = touched_lines(&base_lines, r)?;
        match groups.last_mut() {
            Some(group) if start < group.1 => {
                group.1 = group.1.max(end);
                group.2.push(r.clone());
            }
            _ => groups.push((start, end, vec![r.clone()])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(start, end, members)| {
            let (base_start, base_end) = (base_lines[start].0, base_lines[end - 1].1);
            let original_start = original_lines[start].0;
            Replacement {
                match_index: original_start,
                match_length: original_lines[end - 1].1 - original_start,
                new_text: apply_replacements(
                    base.get(base_start..base_end).unwrap_or_default(),
                    &members,
                    base_start,
                ),
            }
        })
        .collect())
}

/// The line ending of the line holding `offset`: its own, or that of the line
/// before for an unterminated last line. A lone CR only counts in files with
/// no LF at all (classic Mac); elsewhere it is a stray control character.
fn line_ending_at(content: &str, offset: usize) -> &'static str {
    let bytes = content.as_bytes();
    let after = bytes
        .get(offset..)
        .and_then(|rest| memchr::memchr(b'\n', rest))
        .map(|i| offset + i);
    let line_feed =
        after.or_else(|| memchr::memrchr(b'\n', &bytes[..(offset + 1).min(bytes.len())]));
    match line_feed {
        None if bytes.contains(&b'\r') => "\r",
        None => "\n",
        Some(lf) if lf > 0 && bytes[lf - 1] == b'\r' => "\r\n",
        Some(_) => "\n",
    }
}

/// Applies replacements matched in `normalize_to_lf(original)` to `original`
/// itself: text outside the replaced ranges keeps its bytes and line endings;
/// line breaks in new text take the ending of the line where the replaced
/// range starts.
pub fn apply_replacements_to_original(original: &str, replacements: &[Replacement]) -> String {
    // Only CRLF changes length when normalizing: the LF of the n-th CRLF sits
    // n bytes earlier in the normalized text.
    let mut crlf_before = 0;
    let mut next_crlf = original.find("\r\n");
    let mut to_original = |offset: usize| {
        while let Some(p) = next_crlf {
            if p - crlf_before >= offset {
                break;
            }
            crlf_before += 1;
            next_crlf = original
                .get(p + 2..)
                .and_then(|rest| rest.find("\r\n"))
                .map(|i| p + 2 + i);
        }
        offset + crlf_before
    };
    let mut out = String::with_capacity(original.len());
    let mut ends_with_cr = false;
    let mut push = |out: &mut String, part: &str| {
        if part.is_empty() {
            return;
        }
        // A CR before a seam and an LF after it would merge into one CRLF;
        // an extra LF keeps the line breaks the diff shows.
        if ends_with_cr && part.starts_with('\n') {
            out.push('\n');
        }
        out.push_str(part);
        ends_with_cr = part.ends_with('\r');
    };
    let mut position = 0;
    for r in replacements {
        let start = to_original(r.match_index);
        push(&mut out, original.get(position..start).unwrap_or_default());
        let ending = line_ending_at(original, start);
        if ending == "\n" {
            push(&mut out, &r.new_text);
        } else {
            push(&mut out, &r.new_text.replace('\n', ending));
        }
        position = to_original(r.match_index + r.match_length);
    }
    push(&mut out, original.get(position..).unwrap_or_default());
    out
}

#[cfg(test)]
#[path = "edit_match_tests.rs"]
mod tests;
