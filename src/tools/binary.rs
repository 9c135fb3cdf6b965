//! Output that is not text: NUL bytes and bytes that are not UTF-8.
//!
//! Tools hand the model text. A program may print binary data and a file
//! may be binary; decoding such bytes never fails (invalid sequences become
//! U+FFFD, as Node decodes them for Pi), but the model should be told that
//! what it reads is not what the bytes were. NUL bytes are shown as U+FFFD
//! too: many consumers of tool results (terminals, C strings, some APIs)
//! truncate or reject text at a NUL.

use std::borrow::Cow;

use super::{Content, ToolOutput};

/// How much of a byte stream was not text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BinaryCount {
    /// NUL bytes.
    pub nul: usize,
    /// Maximal invalid UTF-8 sequences (each shown as one U+FFFD).
    pub invalid: usize,
}

impl BinaryCount {
    /// True when every byte was text.
    pub fn is_text(&self) -> bool {
        self.nul == 0 && self.invalid == 0
    }

    /// The notice for the model, naming `what` ("output", "file"); `None`
    /// for text.
    pub fn notice(&self, what: &str) -> Option<String> {
        if self.is_text() {
            return None;
        }
        let mut parts = Vec::new();
        if self.nul > 0 {
            parts.push(plural(self.nul, "NUL byte", "NUL bytes"));
        }
        if self.invalid > 0 {
            parts.push(plural(
                self.invalid,
                "byte sequence that is not UTF-8",
                "byte sequences that are not UTF-8",
            ));
        }
        let verb = if self.nul + self.invalid == 1 {
            "is"
        } else {
            "are"
        };
        Some(format!(
            "[The {what} is not all text: {} {verb} shown as \u{FFFD}.]",
            parts.join(" and ")
        ))
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Counts NUL bytes and invalid UTF-8 in a stream that arrives in chunks;
/// a character split across two chunks is not counted as invalid.
#[derive(Debug, Default)]
pub struct BinaryScan {
    count: BinaryCount,
    /// The start of a character whose remaining bytes are in the next chunk.
    pending: Vec<u8>,
}

impl BinaryScan {
    /// Scans the next chunk.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.count.nul += memchr::memchr_iter(0, chunk).count();
        let joined;
        let bytes = if self.pending.is_empty() {
            chunk
        } else {
            joined = [std::mem::take(&mut self.pending).as_slice(), chunk].concat();
            &joined
        };
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(c) = chunks.next() {
            if c.invalid().is_empty() {
                continue;
            }
            let incomplete =
                matches!(std::str::from_utf8(c.invalid()), Err(e) if e.error_len().is_none());
            if chunks.peek().is_none() && incomplete {
                self.pending = c.invalid().to_vec();
            } else {
                self.count.invalid += 1;
            }
        }
    }

    /// The count so far, counting an unfinished character at the end as
    /// invalid (as the decoder shows it).
    pub fn count(&self) -> BinaryCount {
        let mut count = self.count;
        if !self.pending.is_empty() {
            count.invalid += 1;
        }
        count
    }
}

/// `text` with every NUL shown as U+FFFD.
pub fn mask_nul(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Appends `notice` to the last text block of `output` (or adds one).
pub fn append_notice(output: &mut ToolOutput, notice: &str) {
    match output.content.iter_mut().rev().find_map(|c| match c {
        Content::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) if text.is_empty() => text.push_str(notice),
        Some(text) => {
            text.push_str("\n\n");
            text.push_str(notice);
        }
        None => output.content.push(Content::text(notice)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]]) -> BinaryCount {
        let mut s = BinaryScan::default();
        for c in chunks {
            s.feed(c);
        }
        s.count()
    }

    #[test]
    fn counts_nul_and_invalid_sequences() {
        assert!(scan(&[b"plain text\n", "caf\u{e9}".as_bytes()]).is_text());
        assert_eq!(
            scan(&[b"\xff\xfe\x00ok"]),
            BinaryCount { nul: 1, invalid: 2 }
        );
    }

    #[test]
    fn a_character_split_across_chunks_is_text() {
        let e_acute = "\u{e9}".as_bytes();
        assert!(scan(&[&[b'a', e_acute[0]], &[e_acute[1], b'b']]).is_text());
        // Unfinished at the very end: invalid.
        assert_eq!(scan(&[b"caf\xc3"]).invalid, 1);
    }

    #[test]
    fn notices_name_what_was_replaced() {
        let n = BinaryCount { nul: 1, invalid: 3 };
        assert_eq!(
            n.notice("output").unwrap(),
            "[The output is not all text: 1 NUL byte and 3 byte sequences that are not UTF-8 are shown as \u{FFFD}.]"
        );
        let one = BinaryCount { nul: 0, invalid: 1 };
        assert_eq!(
            one.notice("file").unwrap(),
            "[The file is not all text: 1 byte sequence that is not UTF-8 is shown as \u{FFFD}.]"
        );
        assert_eq!(BinaryCount::default().notice("file"), None);
    }
}
