//! Selecting a range of lines from a file read in chunks, as Pi's read does.
//!
//! Memory does not grow with the file: only the lines the output can show are
//! stored (at most [`DEFAULT_MAX_LINES`] lines and about [`DEFAULT_MAX_BYTES`]
//! bytes, plus one line past the caps so truncation decides as it would on
//! the whole text); every other line is only counted. A 1 GB file, or a file
//! that is one 1 GB line, costs a pass over it and 50 KB.
//!
//! Lines are split on `\n`, as Pi splits them: a file `a\nb\n` has three
//! lines, the last one empty (Pi reports `3 lines total` for it).
//!
//! Bytes that are not UTF-8 decode to U+FFFD, one per maximal invalid
//! sequence — the WHATWG decoding Node uses, so sizes match Pi's. A byte order
//! mark is kept, as Pi keeps it.

use std::str::Utf8Chunk;

use crate::text::{truncate_head, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// Decodes UTF-8 arriving in chunks, replacing invalid sequences with U+FFFD
/// and carrying a character split across two chunks over to the next one.
#[derive(Debug, Default)]
pub(crate) struct LossyDecoder {
    /// The start of a character whose remaining bytes are in the next chunk.
    pending: Vec<u8>,
}

impl LossyDecoder {
    /// Decodes `chunk`, handing the text to `sink` in pieces.
    pub(crate) fn feed(&mut self, chunk: &[u8], sink: &mut impl FnMut(&str)) {
        if self.pending.is_empty() {
            self.decode(chunk, false, sink);
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(chunk);
            self.decode(&joined, false, sink);
        }
    }

    /// Ends the input: a character left incomplete becomes U+FFFD.
    pub(crate) fn finish(&mut self, sink: &mut impl FnMut(&str)) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.decode(&pending, true, sink);
        }
    }

    fn decode(&mut self, bytes: &[u8], last: bool, sink: &mut impl FnMut(&str)) {
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            if !chunk.valid().is_empty() {
                sink(chunk.valid());
            }
            if chunk.invalid().is_empty() {
                continue;
            }
            if !last && chunks.peek().is_none() && is_incomplete(&chunk) {
                self.pending = chunk.invalid().to_vec();
            } else {
                sink("\u{FFFD}");
            }
        }
    }
}

/// True when the invalid bytes at the end of the input are the start of a
/// character that more input could complete.
fn is_incomplete(chunk: &Utf8Chunk<'_>) -> bool {
    matches!(std::str::from_utf8(chunk.invalid()), Err(e) if e.error_len().is_none())
}

/// What [`LineSelector`] found.
#[derive(Debug)]
pub(crate) struct Selection {
    /// Lines in the whole file (`\n` count + 1).
    pub total_file_lines: usize,
    /// Head truncation of the selected lines; its totals are those of all
    /// selected lines, not only of the stored ones.
    pub truncation: Truncation,
    /// Size of the first selected line (for the line-too-long notice).
    pub first_line_bytes: usize,
}

/// Picks lines `start..end` (0-based, `end` exclusive) out of text fed in
/// pieces.
#[derive(Debug)]
pub(crate) struct LineSelector {
    start: usize,
    end: usize,
    /// The line the next piece of text belongs to.
    line: usize,
    stored: Vec<String>,
    stored_bytes: usize,
    /// Set once the stored lines are past both caps: later lines are counted only.
    stored_past_caps: bool,
    selected_lines: usize,
    /// Bytes of the selected lines, without their line breaks.
    selected_line_bytes: usize,
    first_line_bytes: usize,
    last_line_empty: bool,
    /// The selected line being read, while it is stored.
    current: Option<String>,
    current_bytes: usize,
}

impl LineSelector {
    /// Selects `limit` lines from 0-based line `start` (all when `None`).
    pub(crate) fn new(start: usize, limit: Option<usize>) -> LineSelector {
        LineSelector {
            start,
            end: limit.map_or(usize::MAX, |l| start.saturating_add(l)),
            line: 0,
            stored: Vec::new(),
            stored_bytes: 0,
            stored_past_caps: false,
            selected_lines: 0,
            selected_line_bytes: 0,
            first_line_bytes: 0,
            last_line_empty: true,
            current: Some(String::new()),
            current_bytes: 0,
        }
    }

    /// Takes the next piece of decoded text.
    pub(crate) fn push(&mut self, mut text: &str) {
        loop {
            if self.line >= self.end {
                // Past the selection: only the line count is still needed.
                self.line += memchr::memchr_iter(b'\n', text.as_bytes()).count();
                return;
            }
            let selected = self.line >= self.start;
            match memchr::memchr(b'\n', text.as_bytes()) {
                Some(newline) => {
                    if selected {
                        self.append(&text[..newline]);
                        self.finish_line();
                    }
                    self.line += 1;
                    text = &text[newline + 1..];
                }
                None => {
                    if selected {
                        self.append(text);
                    }
                    return;
                }
            }
        }
    }

    fn append(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        if let Some(current) = &mut self.current {
            // A line over the byte cap is never shown, and a first line over
            // it is only measured: never store all of a huge line.
            if self.current_bytes <= DEFAULT_MAX_BYTES {
                current.push_str(piece);
            }
        }
        self.current_bytes += piece.len();
    }

    fn finish_line(&mut self) {
        if let Some(text) = self.current.take() {
            if self.selected_lines == 0 {
                self.first_line_bytes = self.current_bytes;
            }
            // Storing goes on one line past the caps: truncation ignores a
            // trailing empty line, so the line after the cap must be there
            // for it to decide as it would on the full text.
            if self.stored.len() > DEFAULT_MAX_LINES || self.stored_bytes > DEFAULT_MAX_BYTES {
                self.stored_past_caps = true;
            }
            self.stored_bytes += text.len() + usize::from(!self.stored.is_empty());
            self.stored.push(text);
        }
        self.selected_lines += 1;
        self.selected_line_bytes += self.current_bytes;
        self.last_line_empty = self.current_bytes == 0;
        self.current = (!self.stored_past_caps).then(String::new);
        self.current_bytes = 0;
    }

    /// Ends the input.
    pub(crate) fn finish(mut self) -> Selection {
        if self.line >= self.start && self.line < self.end {
            self.finish_line();
        }
        let mut truncation = truncate_head(
            &self.stored.join("\n"),
            DEFAULT_MAX_LINES,
            DEFAULT_MAX_BYTES,
        );
        // The totals of all selected lines joined by `\n`, as truncation
        // would count them on the full text (a trailing empty line is not one).
        let total_bytes = self.selected_line_bytes + self.selected_lines.saturating_sub(1);
        truncation.total_bytes = total_bytes;
        truncation.total_lines = if total_bytes == 0 {
            0
        } else {
            self.selected_lines - usize::from(self.last_line_empty)
        };
        Selection {
            total_file_lines: self.line + 1,
            truncation,
            first_line_bytes: self.first_line_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` in chunks of `size` and selects.
    fn select(bytes: &[u8], size: usize, start: usize, limit: Option<usize>) -> Selection {
        let mut decoder = LossyDecoder::default();
        let mut selector = LineSelector::new(start, limit);
        for chunk in bytes.chunks(size.max(1)) {
            decoder.feed(chunk, &mut |s| selector.push(s));
        }
        decoder.finish(&mut |s| selector.push(s));
        selector.finish()
    }

    #[test]
    fn chunking_does_not_change_the_result() {
        let text = "héllo\nwörld\n\u{1F600} end\n\nlast".as_bytes();
        let whole = select(text, text.len(), 1, Some(3));
        for size in 1..8 {
            let split = select(text, size, 1, Some(3));
            assert_eq!(split.truncation, whole.truncation, "chunk size {size}");
            assert_eq!(split.total_file_lines, 5);
        }
        assert_eq!(whole.truncation.content, "wörld\n\u{1F600} end\n");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_across_chunks() {
        // A lone continuation byte, a truncated 3-byte sequence, a valid é split
        // across chunks.
        let bytes = b"a\x80b\xe2\x82\nc\xc3\xa9";
        for size in 1..bytes.len() + 1 {
            let s = select(bytes, size, 0, None);
            assert_eq!(
                s.truncation.content, "a\u{FFFD}b\u{FFFD}\nc\u{e9}",
                "size {size}"
            );
        }
        let s = select(b"x\xe2\x82", 1, 0, None);
        assert_eq!(s.truncation.content, "x\u{FFFD}");
    }

    #[test]
    fn a_huge_line_is_measured_not_stored() {
        let mut text = "y".repeat(3 * DEFAULT_MAX_BYTES);
        text.push_str("\nshort");
        let s = select(text.as_bytes(), 4096, 0, None);
        assert!(s.truncation.first_line_exceeds_limit);
        assert_eq!(s.first_line_bytes, 3 * DEFAULT_MAX_BYTES);
        assert_eq!(s.truncation.total_bytes, text.len());
        assert_eq!(s.total_file_lines, 2);
    }

    #[test]
    fn totals_count_all_selected_lines() {
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let s = select(text.as_bytes(), 1000, 0, None);
        assert_eq!(s.total_file_lines, 5001);
        assert_eq!(s.truncation.total_lines, 5000);
        assert_eq!(s.truncation.total_bytes, text.len());
        assert_eq!(s.truncation.output_lines, DEFAULT_MAX_LINES);
    }
}
