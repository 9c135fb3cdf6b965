//! Redacting text that arrives in pieces (a command's output, progress
//! updates, stdin) in constant memory, with the same result as redacting the
//! whole text at once.
//!
//! A [`StreamRedactor`] emits text as soon as no secret can start in it: it
//! holds back at most the longest match of any rule (plus the longest
//! keyword), so a secret split across chunks is still redacted. A private-key
//! block is the exception that proves the rule: once its `BEGIN` line is
//! seen, `[REDACTED:private-key]` is emitted and the body is swallowed piece
//! by piece (each piece a line or less), so a block of any length costs no
//! memory.

use std::io::{self, Read, Write};

use super::scan::{Scanner, Span};
use super::Redactor;

/// Turns spans, in order, into output: text between redactions and one
/// marker per group of overlapping (or joined) spans.
#[derive(Default)]
pub(super) struct Emitter {
    /// Text before this has been written out or redacted.
    emitted: usize,
    /// End of the last redaction, while a later span may still join it.
    group_end: Option<usize>,
}

impl Emitter {
    /// Writes out `span` (the next in start order) from `buf`, which starts at `base`.
    pub fn span(&mut self, r: &Redactor, span: &Span, buf: &str, base: usize, out: &mut String) {
        if let Some(end) = self.group_end {
            if span.start < end || (span.joins && span.start == end) {
                let end = end.max(span.end);
                self.group_end = Some(end);
                self.emitted = self.emitted.max(end);
                return;
            }
        }
        debug_assert!(span.start >= self.emitted, "span before emitted text");
        out.push_str(&buf[self.emitted - base..span.start - base]);
        out.push_str("[REDACTED:");
        out.push_str(&r.rules[span.rule as usize].id);
        out.push(']');
        self.group_end = Some(span.end);
        self.emitted = span.end;
    }

    /// Writes out the text up to `upto` that no redaction covers.
    pub fn text_until(&mut self, upto: usize, buf: &str, base: usize, out: &mut String) {
        if upto > self.emitted {
            out.push_str(&buf[self.emitted - base..upto - base]);
            self.emitted = upto;
        }
    }
}

/// The order spans are merged in: by start, the longest first, then by rule
/// order, so a group is labelled by the rule whose match starts first (a
/// specific format before a generic rule listed after it).
pub(super) fn sort_spans(spans: &mut [Span]) {
    spans.sort_unstable_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(a.rule.cmp(&b.rule))
            .then(a.joins.cmp(&b.joins))
    });
}

/// Redacts a text that arrives in chunks; see the module docs. Made by
/// [`Redactor::stream`].
pub struct StreamRedactor<'r> {
    redactor: &'r Redactor,
    scanner: Scanner,
    /// The text from `base` on that is still needed.
    buf: String,
    base: usize,
    /// Final spans that start at or after the frontier, not written out yet.
    pending: Vec<Span>,
    emitter: Emitter,
}

/// Text kept before the frontier, so `\b` and `^` there see their neighbour
/// (more for line allowlists: [`Redactor::look_behind`]).
pub(super) const LOOK_BEHIND: usize = 4;

impl<'r> StreamRedactor<'r> {
    pub(super) fn new(redactor: &'r Redactor) -> Self {
        StreamRedactor {
            redactor,
            scanner: Scanner::new(redactor),
            buf: String::new(),
            base: 0,
            pending: Vec::new(),
            emitter: Emitter::default(),
        }
    }

    /// Adds `chunk` and returns the redacted text that is safe to emit now
    /// (possibly empty: the tail is held back until it cannot be a secret).
    pub fn push(&mut self, chunk: &str) -> String {
        let mut out = String::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// Like [`StreamRedactor::push`], appending the output to `out` (so one
    /// buffer can serve every chunk).
    pub fn push_into(&mut self, chunk: &str, out: &mut String) {
        self.buf.push_str(chunk);
        self.step(false, out)
    }

    /// Ends the text and returns the rest of the redacted output.
    pub fn finish(self) -> String {
        let mut out = String::new();
        self.finish_into(&mut out);
        out
    }

    /// Like [`StreamRedactor::finish`], appending the output to `out`.
    pub fn finish_into(mut self, out: &mut String) {
        self.step(true, out)
    }

    /// Bytes held back right now: what memory the stream needs beyond a chunk.
    pub fn held_back(&self) -> usize {
        self.buf.len()
    }

    fn step(&mut self, eof: bool, out: &mut String) {
        let r = self.redactor;
        let end = self.base + self.buf.len();
        self.scanner
            .advance(r, &self.buf, self.base, eof, &mut self.pending);
        let mut frontier = self.scanner.frontier(r, end, eof).max(self.base);
        while !self.buf.is_char_boundary(frontier - self.base) {
            frontier -= 1;
        }
        sort_spans(&mut self.pending);
        let ready = self.pending.partition_point(|s| s.start < frontier);
        for span in &self.pending[..ready] {
            self.emitter.span(r, span, &self.buf, self.base, out);
        }
        self.pending.drain(..ready);
        self.emitter.text_until(frontier, &self.buf, self.base, out);
        let mut keep = frontier.saturating_sub(r.look_behind()).max(self.base);
        while !self.buf.is_char_boundary(keep - self.base) {
            keep -= 1;
        }
        self.buf.drain(..keep - self.base);
        self.base = keep;
    }
}

/// Bytes read from the input at a time by [`redact_io`].
const READ_CHUNK: usize = 64 * 1024;

/// Copies `input` to `output` with secrets redacted, in constant memory.
///
/// Invalid UTF-8 is passed through byte for byte, never replaced: no data is
/// lost, and the text on each side of it is redacted as if the stream ended
/// and restarted there (a secret is text, so none spans such bytes).
pub fn redact_io(r: &Redactor, mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    let mut stream = r.stream();
    // Bytes `..held` are an incomplete UTF-8 sequence left from the last read
    // (at most 3); each read goes in after them, so nothing is copied twice.
    let mut buf = vec![0u8; READ_CHUNK + 4];
    // One output buffer for every chunk: written out, then emptied.
    let mut out = String::with_capacity(READ_CHUNK + 256);
    let mut held = 0;
    loop {
        let n = match input.read(&mut buf[held..]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let total = held + n;
        let mut rest: &[u8] = &buf[..total];
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    stream.push_into(text, &mut out);
                    rest = &[];
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    let text = std::str::from_utf8(valid).unwrap_or_default();
                    stream.push_into(text, &mut out);
                    match e.error_len() {
                        None => {
                            rest = after;
                            break;
                        }
                        Some(bad) => {
                            let done = std::mem::replace(&mut stream, r.stream());
                            done.finish_into(&mut out);
                            write_out(&mut output, &mut out)?;
                            output.write_all(&after[..bad])?;
                            rest = &after[bad..];
                        }
                    }
                }
            }
        }
        write_out(&mut output, &mut out)?;
        held = rest.len();
        buf.copy_within(total - held..total, 0);
    }
    stream.finish_into(&mut out);
    write_out(&mut output, &mut out)?;
    // Bytes of a sequence the input cut short.
    output.write_all(&buf[..held])?;
    output.flush()
}

/// Writes `out` and empties it (keeping its memory).
fn write_out(output: &mut impl Write, out: &mut String) -> io::Result<()> {
    output.write_all(out.as_bytes())?;
    out.clear();
    Ok(())
}
