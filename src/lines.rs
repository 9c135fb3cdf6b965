//! Newline-delimited messages read with a bound on their length: MCP's
//! stdio transport, from a client (`serve/stdio_in.rs`) and from an upstream
//! server (`upstream/stdio.rs`). An over-long line is dropped rather than
//! buffered — the rest of it is skipped as it arrives — so memory stays
//! within the limit whatever the peer sends.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What [`Lines::next`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line, taken with [`Lines::take`] (without its `\n` or `\r\n`).
    Read,
    /// A line longer than the limit: dropped, and its rest is skipped.
    TooLong,
    /// The end of the input; `partial` when it cut a line short (dropped).
    End {
        /// Whether an unfinished line was dropped.
        partial: bool,
    },
}

/// A buffered reader of lines up to a maximum length.
pub struct Lines<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of an over-long line is skipped (kept here: a
    /// read can be dropped mid-line by a `select!`).
    discarding: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of at most `max` bytes (newline included) from `read`.
    pub fn new(read: R, max: usize) -> Self {
        Lines {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            discarding: false,
            max,
        }
    }

    /// The longest line kept, in bytes.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Changes the longest line kept (tests use small limits).
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// Reads on to the end of the next line. Cancellation-safe: a line read
    /// in part stays buffered for the next call. After [`Line::Read`], take
    /// the line with [`Lines::take`] before reading on.
    pub async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                let partial = !self.line.is_empty();
                self.line.clear();
                return Ok(Line::End { partial });
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |i| i + 1);
            let mut too_long = false;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len() + take > self.max {
                self.line.clear();
                self.discarding = newline.is_none();
                too_long = true;
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if too_long {
                return Ok(Line::TooLong);
            }
            if newline.is_some() && !self.discarding && !self.line.is_empty() {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                return Ok(Line::Read);
            }
        }
    }

    /// The line [`Lines::next`] read; give the buffer back with
    /// [`Lines::recycle`] to keep its allocation.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.line)
    }

    /// Hands back a buffer from [`Lines::take`], emptied, for the next line.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.line = buf;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize, chunk: usize) -> Vec<Result<Vec<u8>, Line>> {
        // A reader that hands out `chunk` bytes at a time, so lines and
        // limits fall across reads.
        let (mut tx, rx) = tokio::io::duplex(chunk.max(1));
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for part in input.chunks(chunk.max(1)) {
                tx.write_all(part).await.unwrap();
            }
        });
        let mut lines = Lines::new(rx, max);
        let mut out = Vec::new();
        loop {
            match lines.next().await.unwrap() {
                Line::Read => {
                    let line = lines.take();
                    out.push(Ok(line.clone()));
                    lines.recycle(line);
                }
                end @ Line::End { .. } => {
                    out.push(Err(end));
                    break;
                }
                other => out.push(Err(other)),
            }
        }
        writer.await.unwrap();
        out
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_the_same_in_any_chunking() {
        let input = b"a\r\n\nfirst long line!\nbc\nlast";
        for chunk in [1, 2, 3, 7, 64] {
            let got = all(input, 8, chunk).await;
            assert_eq!(
                got,
                vec![
                    Ok(b"a".to_vec()),
                    Ok(b"".to_vec()),
                    Err(Line::TooLong),
                    Ok(b"bc".to_vec()),
                    Err(Line::End { partial: true }),
                ],
                "chunk {chunk}"
            );
        }
        // An unfinished line over the limit is dropped as too long first.
        assert_eq!(
            all(b"unfinished-and-long", 8, 4).await,
            vec![Err(Line::TooLong), Err(Line::End { partial: false })]
        );
        assert_eq!(
            all(b"x\n", 8, 1).await,
            vec![Ok(b"x".to_vec()), Err(Line::End { partial: false })]
        );
        // Exactly at the limit (newline included) is kept; one more is not.
        assert_eq!(all(b"1234567\n", 8, 3).await[0], Ok(b"1234567".to_vec()));
        assert_eq!(all(b"12345678\n", 8, 3).await[0], Err(Line::TooLong));
    }
}
