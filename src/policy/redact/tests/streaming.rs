//! Streaming gives exactly what redacting the whole text gives, for any
//! split, in bounded memory.

use super::*;
use proptest::prelude::*;

/// Pieces that make interesting texts when strung together: secrets of
/// several shapes, their prefixes and keywords alone, block markers, and
/// multi-byte characters to split in the middle of.
pub(super) fn atoms() -> Vec<String> {
    let pem = (0..3).map(|i| gen(B64, 64, i) + "\n").collect::<String>();
    vec![
        format!("ghp_{}", gen(ALNUM, 36, 1)),
        format!("AKIA{}", gen(UPPER_B32, 16, 2)),
        format!("-----BEGIN RSA PRIVATE KEY-----\n{pem}-----END RSA PRIVATE KEY-----"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{pem}"),
        format!(
            "eyJ{}.eyJ{}.{}",
            gen(URLSAFE, 20, 1),
            gen(URLSAFE, 40, 2),
            gen(URLSAFE, 43, 3)
        ),
        "password=hunter2hunter2".to_string(),
        "postgres://app:s3cretPass@db:5432/x".to_string(),
        format!(
            "MT{}.{}.{}",
            gen(ALNUM, 22, 1),
            gen(URLSAFE, 6, 2),
            gen(URLSAFE, 38, 3)
        ),
        format!("SK{}", gen(HEX, 32, 5)),
        format!(
            "xoxb-{}-{}-{}",
            gen(DIGITS, 11, 1),
            gen(DIGITS, 12, 2),
            gen(ALNUM, 24, 3)
        ),
        format!("sk-ant-api03-{}AA", gen(URLSAFE, 93, 7)),
        "ghp_".into(),
        "token".into(),
        "secret: ".into(),
        "://".into(),
        "-----BEGIN".into(),
        "PRIVATE KEY-----".into(),
        "-----END RSA PRIVATE KEY-----".into(),
        " ".into(),
        "\n".into(),
        "é".into(),
        "日本".into(),
        "=".into(),
        "\"".into(),
        "plain words ".into(),
        gen(ALNUM, 40, 9),
    ]
}

pub(super) fn streamed(r: &Redactor, text: &str, cuts: &[usize]) -> String {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut c = c % (text.len() + 1);
            while !text.is_char_boundary(c) {
                c -= 1;
            }
            c
        })
        .collect();
    cuts.sort_unstable();
    let mut stream = r.stream();
    let mut out = String::new();
    let mut at = 0;
    for c in cuts {
        out.push_str(&stream.push(&text[at..c]));
        at = c;
    }
    out.push_str(&stream.push(&text[at..]));
    out.push_str(&stream.finish());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn any_split_redacts_like_the_whole(
        picks in prop::collection::vec(0usize..26, 0..40),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let atoms = atoms();
        let text: String = picks.iter().map(|&i| atoms[i % atoms.len()].as_str()).collect();
        let whole = defaults().redact(&text).into_owned();
        prop_assert_eq!(streamed(defaults(), &text, &cuts), whole);
    }
}

#[test]
fn every_chunk_size_redacts_like_the_whole() {
    let atoms = atoms();
    let text: String = atoms.join(" ") + &atoms.join("");
    let whole = defaults().redact(&text).into_owned();
    assert!(whole.contains("[REDACTED:private-key]"), "{whole}");
    for size in 1..=9 {
        let cuts: Vec<usize> = (1..text.len() / size + 1).map(|i| i * size).collect();
        assert_eq!(
            streamed(defaults(), &text, &cuts),
            whole,
            "chunks of {size}"
        );
    }
}

#[test]
fn a_secret_split_across_chunks_is_redacted() {
    let token = format!("ghp_{}", gen(ALNUM, 36, 1));
    let mut s = defaults().stream();
    let mut out = s.push("token: ");
    out += &s.push(&token[..10]);
    out += &s.push(&token[10..]);
    out += &s.push(" done\n");
    out += &s.finish();
    assert_eq!(out, "token: [REDACTED:github-pat] done\n");
}

#[test]
fn clean_text_is_emitted_with_a_bounded_hold_back() {
    let r = defaults();
    let line = "let value = compute(index, buffer);\n";
    let mut s = r.stream();
    let mut out = String::new();
    for _ in 0..2000 {
        out += &s.push(line);
        assert!(
            s.held_back() <= r.max_hold_back() + line.len(),
            "held {} > {}",
            s.held_back(),
            r.max_hold_back()
        );
    }
    out += &s.finish();
    assert_eq!(out, line.repeat(2000));
}

#[test]
fn a_long_private_key_streams_in_constant_memory() {
    let r = defaults();
    let mut s = r.stream();
    let mut out = s.push("key:\n-----BEGIN PRIVATE KEY-----\n");
    let body = gen(B64, 64, 3) + "\n";
    let mut most = 0;
    for _ in 0..20_000 {
        out += &s.push(&body);
        most = most.max(s.held_back());
    }
    out += &s.push("-----END PRIVATE KEY-----\nafter\n");
    out += &s.finish();
    assert_eq!(out, "key:\n[REDACTED:private-key]\nafter\n");
    assert!(
        most < 4 * 1024,
        "held back up to {most} bytes of a 1.3 MB key"
    );
}

#[test]
fn redact_io_passes_invalid_utf8_through() {
    let token = format!("ghp_{}", gen(ALNUM, 36, 1));
    let mut input = b"a \xff\xfe b ".to_vec();
    input.extend_from_slice(token.as_bytes());
    // A multi-byte character cut at the very end of the input.
    input.extend_from_slice(b" \xc3");
    let mut out = Vec::new();
    redact_io(defaults(), &input[..], &mut out).unwrap();
    assert_eq!(out, b"a \xff\xfe b [REDACTED:github-pat] \xc3".to_vec());
}

#[test]
fn redact_io_reads_in_chunks_and_keeps_split_characters() {
    // A reader that hands out three bytes at a time splits `é` and tokens.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(3).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let token = format!("AKIA{}", gen(UPPER_B32, 16, 2));
    let text = format!("é {token} é\n");
    let mut out = Vec::new();
    redact_io(defaults(), Trickle(text.as_bytes()), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "é [REDACTED:aws-access-key-id] é\n"
    );
}

/// Rules that stress the incremental decisions: unbounded (capped)
/// repetitions, a rule without keywords, a short keyword (no sieve), a
/// secret group, overlaps, `\b` at chunk edges.
fn stress() -> &'static Redactor {
    use std::sync::OnceLock;
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        Redactor::compile(
            false,
            &[
                rule("kv", r"k=[ab]+", &["k="], 0),
                rule("aab", r"a{2,5}b", &[], 0),
                rule("beq", r"(?i)b=(a+)", &["b="], 1),
                rule("word", r"\bab\b", &["ab"], 0),
                rule("long", r"x[ab ]{0,40}y", &["x"], 0),
            ],
        )
        .expect("stress rules compile")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_split_redacts_like_the_whole_with_tricky_rules(
        text in "[abkxyB= \né]{0,400}",
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = stress().redact(&text).into_owned();
        prop_assert_eq!(streamed(stress(), &text, &cuts), whole);
    }
}
