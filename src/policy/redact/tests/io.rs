//! `redact_io` on texts longer than its reads and its write buffer: the
//! same output as redacting the whole text, written as each read decides
//! it, and write errors reported.

use super::streaming::atoms;
use super::*;
use proptest::prelude::*;
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::rc::Rc;

/// Hands out the input `sizes[i % len]` bytes at a time.
struct Pieces<'a> {
    input: &'a [u8],
    sizes: Vec<usize>,
    reads: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let size = self.sizes[self.reads % self.sizes.len()].max(1);
        self.reads += 1;
        let n = self.input.len().min(size).min(buf.len());
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        Ok(n)
    }
}

/// A long text: filler between secrets of every atom, some stretches
/// longer than a read (64 KB) without any secret.
fn long_text(picks: &[(usize, usize)]) -> String {
    let atoms = atoms();
    let filler = "let value = buffer.iter().map(|x| x + 1).collect();\n";
    let mut text = String::new();
    for &(atom, gap) in picks {
        text.push_str(&filler.repeat(gap));
        text.push_str(&atoms[atom % atoms.len()]);
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn long_texts_redact_like_the_whole(
        picks in prop::collection::vec((0usize..26, 0usize..3000), 1..12),
        sizes in prop::collection::vec(1usize..200_000, 1..5),
    ) {
        let text = long_text(&picks);
        let mut out = Vec::new();
        let reader = Pieces { input: text.as_bytes(), sizes, reads: 0 };
        redact_io(defaults(), reader, &mut out).unwrap();
        prop_assert_eq!(String::from_utf8(out).unwrap(), defaults().redact(&text).into_owned());
    }
}

/// What a read makes safe to emit is written before the next read (as a
/// stream given the same pieces emits it), so a slow producer's output is
/// not held back waiting for more.
#[test]
fn each_read_is_written_before_the_next() {
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    /// Checks before each read that the output so far is what it must be.
    struct Lines {
        lines: Vec<String>,
        /// The stream's output after each number of lines.
        expected: Vec<String>,
        out: Shared,
        reads: usize,
    }
    impl Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let written = String::from_utf8(self.out.0.borrow().clone()).unwrap();
            assert_eq!(
                written, self.expected[self.reads],
                "before read {}",
                self.reads
            );
            let Some(line) = self.lines.get(self.reads) else {
                return Ok(0);
            };
            buf[..line.len()].copy_from_slice(line.as_bytes());
            self.reads += 1;
            Ok(line.len())
        }
    }
    let token = format!("ghp_{}", gen(ALNUM, 36, 1));
    let mut lines: Vec<String> = (0..300)
        .map(|i| format!("progress {i}%: {}\n", "step ".repeat(i % 20)))
        .collect();
    lines.insert(150, format!("token {token}\n"));
    let mut stream = defaults().stream();
    let mut expected = vec![String::new()];
    for line in &lines {
        let so_far = format!("{}{}", expected.last().unwrap(), stream.push(line));
        expected.push(so_far);
    }
    // Most of the text is out before the input ends, the secret redacted.
    let before_end = expected.last().unwrap().clone();
    assert!(before_end.contains("[REDACTED:github-pat]") && before_end.len() > 10_000);
    let out = Shared::default();
    let reader = Lines {
        lines: lines.clone(),
        expected,
        out: out.clone(),
        reads: 0,
    };
    redact_io(defaults(), reader, out.clone()).unwrap();
    let all = lines.concat().replace(&token, "[REDACTED:github-pat]");
    assert_eq!(String::from_utf8(out.0.take()).unwrap(), all);
}

/// A write that fails ends the copy with that error, for small pieces
/// (gathered) and large ones (written straight) alike.
#[test]
fn write_errors_are_returned() {
    struct Full(usize);
    impl Write for Full {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            let n = buf.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    for (text, room) in [
        ("short text\n".repeat(10), 5),
        ("long text\n".repeat(100_000), 70_000),
    ] {
        let err = redact_io(defaults(), text.as_bytes(), Full(room)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull, "{}", text.len());
    }
}
