//! Streaming command output with bounded memory (Pi's `OutputAccumulator`).
//!
//! A command may print gigabytes. What the model sees is the *tail* (where
//! errors and results are), cut to the policy's line and byte limits; what a
//! person may need later is everything, so once the output outgrows the
//! limits it is streamed to a temp file and the notice names that file.
//! Memory holds at most the output up to the limits plus a rolling tail of a
//! few times the byte limit.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde_json::{json, Value};

use super::binary::{mask_nul, BinaryCount, BinaryScan};
use super::RunLimits as Limits;
use crate::text::{format_size, truncate_tail, TruncatedBy, Truncation};

/// What a snapshot of the output shows: the tail kept for the model, and how
/// it relates to the whole output.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The kept tail, with totals for the *whole* output, not just the tail.
    pub truncation: Truncation,
    /// The file holding the full output, when the output was cut.
    pub full_output_path: Option<PathBuf>,
    /// Bytes of the last line (shown when only its end is kept).
    pub last_line_bytes: usize,
    /// The byte limit in force, for the notice.
    pub max_bytes: usize,
    /// The line limit in force, for details.
    pub max_lines: usize,
    /// NUL bytes and invalid UTF-8 in the *whole* output so far.
    pub binary: BinaryCount,
}

impl Snapshot {
    /// The text with Pi's truncation notice, or `empty_text` when there was
    /// no output at all.
    pub fn render(&self, empty_text: &str) -> String {
        let t = &self.truncation;
        let mut text = if t.content.is_empty() {
            empty_text.to_string()
        } else {
            t.content.clone()
        };
        if let Some(notice) = self.binary.notice("output") {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&notice);
        }
        if !t.truncated() {
            return text;
        }
        let file = self
            .full_output_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "(unavailable)".to_string());
        let end = t.total_lines;
        let start = (t.total_lines + 1).saturating_sub(t.output_lines);
        let notice = if t.last_line_partial {
            format!(
                "[Showing last {} of line {end} (line is {}). Full output: {file}]",
                format_size(t.output_bytes),
                format_size(self.last_line_bytes)
            )
        } else if t.truncated_by == Some(TruncatedBy::Lines) {
            format!(
                "[Showing lines {start}-{end} of {}. Full output: {file}]",
                t.total_lines
            )
        } else {
            format!(
                "[Showing lines {start}-{end} of {} ({} limit). Full output: {file}]",
                t.total_lines,
                format_size(self.max_bytes)
            )
        };
        text.push_str("\n\n");
        text.push_str(&notice);
        text
    }

    /// `{truncation, fullOutputPath}` when the output was cut, `{}` otherwise.
    pub fn details(&self) -> Value {
        let t = &self.truncation;
        if !t.truncated() {
            return json!({});
        }
        json!({
            "truncation": {
                "truncated": true,
                "truncatedBy": match t.truncated_by {
                    Some(TruncatedBy::Bytes) => "bytes",
                    _ => "lines",
                },
                "totalLines": t.total_lines,
                "totalBytes": t.total_bytes,
                "outputLines": t.output_lines,
                "outputBytes": t.output_bytes,
                "lastLinePartial": t.last_line_partial,
                "maxLines": self.max_lines,
                "maxBytes": self.max_bytes,
            },
            "fullOutputPath": self.full_output_path.as_ref().map(|p| p.display().to_string()),
        })
    }
}

/// Where the full output goes once it outgrows the limits.
#[derive(Debug)]
struct Spill {
    path: PathBuf,
    /// `None` after a write failed: the file then ends early, and the notice
    /// still names it (the model gets what there is).
    writer: Option<BufWriter<File>>,
}

/// Collects a command's output as it arrives.
#[derive(Debug)]
pub struct OutputAccumulator {
    max_lines: usize,
    max_bytes: usize,
    /// How much tail to keep; trimmed back to this when it doubles.
    rolling_bytes: usize,
    temp_prefix: String,
    /// Everything so far, until the output is spilled to a file.
    head: Vec<u8>,
    tail: Vec<u8>,
    tail_starts_at_line: bool,
    total_bytes: usize,
    completed_lines: usize,
    current_line_bytes: usize,
    previous_line_bytes: usize,
    spill: Option<Spill>,
    binary: BinaryScan,
}

impl OutputAccumulator {
    /// An empty accumulator with the policy's limits; a spill file is named
    /// `<temp_prefix>-XXXX.log` in the system temp directory.
    pub fn new(limits: &Limits, temp_prefix: &str) -> OutputAccumulator {
        let max_lines = usize::try_from(limits.max_output_lines).unwrap_or(usize::MAX);
        let max_bytes = usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX);
        OutputAccumulator {
            max_lines,
            max_bytes,
            rolling_bytes: max_bytes.saturating_mul(2).max(1),
            temp_prefix: temp_prefix.to_string(),
            head: Vec::new(),
            tail: Vec::new(),
            tail_starts_at_line: true,
            total_bytes: 0,
            completed_lines: 0,
            current_line_bytes: 0,
            previous_line_bytes: 0,
            spill: None,
            binary: BinaryScan::default(),
        }
    }

    /// Adds a chunk as it arrived from the process.
    pub fn append(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.total_bytes += data.len();
        self.binary.feed(data);
        let mut line_start = 0;
        for (i, _) in data.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            self.previous_line_bytes = self.current_line_bytes + (i - line_start);
            self.current_line_bytes = 0;
            self.completed_lines += 1;
            line_start = i + 1;
        }
        self.current_line_bytes += data.len() - line_start;

        self.tail.extend_from_slice(data);
        if self.tail.len() > self.rolling_bytes.saturating_mul(2) {
            self.trim_tail();
        }
        if self.spill.is_some() || self.over_limits() {
            self.spill_write(data);
        } else {
            self.head.extend_from_slice(data);
        }
    }

    /// Lines so far (a trailing newline does not start a line).
    pub fn total_lines(&self) -> usize {
        self.completed_lines + usize::from(self.current_line_bytes > 0)
    }

    /// The tail as the model would see it now. When the output is cut, the
    /// full-output file is created (if it was not yet) so the notice can name it.
    pub fn snapshot(&mut self) -> Snapshot {
        let bytes = if self.tail_starts_at_line {
            &self.tail[..]
        } else {
            // The first kept line is a fragment; show from the next whole line,
            // unless the tail is the end of one over-long line.
            // A newline that is the tail's last byte ends the over-long line
            // itself: skipping past it showed nothing at all.
            match self.tail.iter().position(|b| *b == b'\n') {
                Some(i) if i + 1 < self.tail.len() => &self.tail[i + 1..],
                _ => &self.tail[..],
            }
        };
        let text = String::from_utf8_lossy(bytes);
        let text = mask_nul(&text);
        let mut truncation = truncate_tail(&text, self.max_lines, self.max_bytes);
        let total_lines = self.total_lines();
        let cut = total_lines > self.max_lines || self.total_bytes > self.max_bytes;
        truncation.truncated_by = match (cut, truncation.truncated_by) {
            (false, _) => None,
            (true, Some(by)) => Some(by),
            (true, None) if self.total_bytes > self.max_bytes => Some(TruncatedBy::Bytes),
            (true, None) => Some(TruncatedBy::Lines),
        };
        truncation.total_lines = total_lines;
        truncation.total_bytes = self.total_bytes;
        if cut {
            self.ensure_spill();
        }
        Snapshot {
            truncation,
            full_output_path: self.spill.as_ref().map(|s| s.path.clone()),
            last_line_bytes: if self.current_line_bytes > 0 {
                self.current_line_bytes
            } else {
                self.previous_line_bytes
            },
            max_bytes: self.max_bytes,
            max_lines: self.max_lines,
            binary: self.binary.count(),
        }
    }

    /// Flushes the full-output file, if there is one.
    pub fn finish(&mut self) {
        if let Some(spill) = &mut self.spill {
            if let Some(w) = &mut spill.writer {
                if w.flush().is_err() {
                    spill.writer = None;
                }
            }
        }
    }

    fn over_limits(&self) -> bool {
        self.total_bytes > self.max_bytes || self.total_lines() > self.max_lines
    }

    fn trim_tail(&mut self) {
        let mut start = self.tail.len() - self.rolling_bytes;
        // Do not start inside a UTF-8 sequence (at most 3 continuation bytes).
        let limit = (start + 3).min(self.tail.len());
        while start < limit && self.tail[start] & 0xc0 == 0x80 {
            start += 1;
        }
        self.tail_starts_at_line = self.tail[start - 1] == b'\n';
        self.tail.drain(..start);
    }

    fn ensure_spill(&mut self) {
        if self.spill.is_some() {
            return;
        }
        // The file may hold secrets the after-hook redacts from what the model
        // sees; tempfile creates it 0600, and it lies outside the workspace.
        let created = tempfile::Builder::new()
            .prefix(&format!("{}-", self.temp_prefix))
            .suffix(".log")
            .tempfile()
            .and_then(|f| f.keep().map_err(|e| e.error));
        let head = std::mem::take(&mut self.head);
        self.spill = match created {
            Ok((file, path)) => {
                let mut writer = BufWriter::new(file);
                let writer = writer.write_all(&head).ok().map(|_| writer);
                Some(Spill { path, writer })
            }
            // No temp directory: the model still gets the tail, without a file.
            Err(_) => None,
        };
    }

    fn spill_write(&mut self, data: &[u8]) {
        self.ensure_spill();
        if let Some(spill) = &mut self.spill {
            if let Some(w) = &mut spill.writer {
                // A small buffered write to a local temp file; not worth a
                // blocking-pool round trip per chunk.
                if w.write_all(data).is_err() {
                    spill.writer = None;
                }
            }
        }
    }
}

/// `text\n\nstatus`, or just `status` when there is no text.
pub fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(lines: u64, bytes: u64) -> Limits {
        Limits {
            max_output_lines: lines,
            max_output_bytes: bytes,
            ..Limits::default()
        }
    }

    #[test]
    fn small_output_is_kept_whole_without_a_file() {
        let mut acc = OutputAccumulator::new(&limits(10, 100), "t");
        acc.append(b"a\nb\n");
        let snap = acc.snapshot();
        assert_eq!(snap.render("(no output)"), "a\nb\n");
        assert!(snap.full_output_path.is_none());
        assert_eq!(acc.total_lines(), 2);
    }

    #[test]
    fn line_limit_keeps_the_tail_and_spills_everything() {
        let mut acc = OutputAccumulator::new(&limits(3, 1000), "t");
        for i in 1..=10 {
            acc.append(format!("l{i}\n").as_bytes());
        }
        let snap = acc.snapshot();
        acc.finish();
        let path = snap.full_output_path.clone().unwrap();
        assert_eq!(
            snap.render(""),
            format!(
                "l8\nl9\nl10\n\n[Showing lines 8-10 of 10. Full output: {}]",
                path.display()
            )
        );
        let full = std::fs::read_to_string(&path).unwrap();
        assert_eq!(full.lines().count(), 10);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn an_overlong_last_line_shows_its_end() {
        let mut acc = OutputAccumulator::new(&limits(10, 8), "t");
        acc.append(b"0123456789abcdef");
        let snap = acc.snapshot();
        let text = snap.render("");
        assert!(
            text.starts_with("89abcdef\n\n[Showing last 8B of line 1 (line is 16B)."),
            "{text}"
        );
        if let Some(p) = snap.full_output_path {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn the_rolling_tail_stays_bounded_and_starts_on_a_line() {
        let mut acc = OutputAccumulator::new(&limits(5, 64), "t");
        for i in 0..10_000 {
            acc.append(format!("line number {i}\n").as_bytes());
        }
        assert!(acc.tail.len() <= 4 * 64 + 32);
        assert!(acc.head.is_empty());
        let snap = acc.snapshot();
        acc.finish();
        assert!(snap.truncation.content.ends_with("line number 9999"));
        assert_eq!(snap.truncation.total_lines, 10_000);
        if let Some(p) = snap.full_output_path {
            assert_eq!(
                std::fs::metadata(&p).unwrap().len() as usize,
                acc.total_bytes
            );
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn an_overlong_last_line_ending_in_a_newline_shows_its_end() {
        let mut acc = OutputAccumulator::new(&limits(10, 8), "t");
        acc.append(&[b'a'; 100]);
        acc.append(b"END\n");
        let snap = acc.snapshot();
        let text = snap.render("");
        assert!(
            text.starts_with("aaaaaEND\n\n[Showing last 8B of line 1 (line is 103B)."),
            "{text}"
        );
        if let Some(p) = snap.full_output_path {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut acc = OutputAccumulator::new(&limits(10, 100), "t");
        acc.append(&[0xff, 0xfe, b'o', b'k', 0]);
        assert_eq!(
            acc.snapshot().render(""),
            "\u{fffd}\u{fffd}ok\u{fffd}\n\n[The output is not all text: 1 NUL byte and \
             2 byte sequences that are not UTF-8 are shown as \u{fffd}.]"
        );
    }
}
