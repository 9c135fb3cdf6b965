//! Short texts take the fast paths: the scanner visits only the rules a
//! text touched, and the prefilter checks the last positions (all of a
//! short text) with the sieve rather than the automaton alone. Both must
//! find exactly what the slow paths find: visiting every rule's state, and
//! the automaton alone over the whole text, unanchored.

use super::streaming::atoms;
use super::*;
use proptest::prelude::*;

/// The built-in set with no sieve, fingerprint or class prefixes: the
/// automaton alone finds keywords, and rules without keywords run over all text.
fn automaton_defaults() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Redactor::compile(true, &[]).expect("built-in rules compile");
        if let Some(k) = &mut r.keywords {
            k.drop_sieve();
        }
        r
    })
}

/// Checks `text` on the fast paths against the slow ones.
fn check(text: &str) -> Result<(), TestCaseError> {
    let fast = defaults();
    // The keywords found are the automaton's alone.
    if let Some(k) = &fast.keywords {
        let (mut sieved, mut exact) = (Vec::new(), Vec::new());
        let hay = text.as_bytes();
        k.scan(hay, 0, hay.len(), |at, rules| {
            sieved.push((at, rules.to_vec()))
        });
        k.scan_exact(hay, 0, hay.len(), |at, rules| {
            exact.push((at, rules.to_vec()))
        });
        sieved.sort_by_key(|h| h.0);
        exact.sort_by_key(|h| h.0);
        prop_assert_eq!(sieved, exact, "{:?}", text);
    }
    let spans = fast.spans(text);
    // The same spans in the same order as visiting every rule gives.
    prop_assert_eq!(&spans, &fast.spans_visiting_every_rule(text), "{:?}", text);
    let redacted = fast.redact(text);
    let slow = automaton_defaults();
    prop_assert_eq!(&redacted, &slow.redact(text), "{:?}", text);
    prop_assert_eq!(
        fast.matching_rules(text),
        slow.matching_rules(text),
        "{:?}",
        text
    );
    // Borrowed exactly when nothing was found.
    prop_assert_eq!(matches!(redacted, Cow::Borrowed(_)), spans.is_empty());
    Ok(())
}

/// Every length up to past the prefilter's block and fingerprint widths (8,
/// 11, 32, 64), with a keyword, a secret or a near miss starting at every
/// offset, in lower and upper case.
#[test]
fn short_texts_at_every_length_and_offset_redact_like_the_slow_paths() {
    let secrets = [
        format!("ghp_{}", gen(ALNUM, 36, 1)),
        format!("AKIA{}", gen(UPPER_B32, 16, 2)),
        format!("SK{}", gen(HEX, 32, 5)),
        "password=hunter2hunter2".to_string(),
        "postgres://app:s3cretPass@db:5432/x".to_string(),
        "-----BEGIN RSA PRIVATE KEY-----\nabc".to_string(),
    ];
    let fillers = [
        "hello world, plain text here! ",
        "aaaaaaaaaaaaaaaaaaaaaaaaa",
        "é日本 x",
    ];
    let mut texts: Vec<String> = vec![String::new(), "hello".into(), "text".into()];
    for filler in fillers {
        let filler: String = filler.chars().cycle().take(80).collect();
        for len in 0..=70 {
            let cut: String = filler.chars().take(len).collect();
            texts.push(cut.clone());
            for piece in secrets.iter().map(String::as_str).chain([
                "ghp_", "ghp", "gh", "token", "TOKEN", "Secret", "sk-", "AKIA", "://",
            ]) {
                // The piece starting at `len`, and cut off at the end.
                texts.push(format!("{cut}{piece}"));
                for keep in [1, 2, 3, 4] {
                    if let Some((i, _)) = piece.char_indices().nth(keep) {
                        texts.push(format!("{cut}{}", &piece[..i]));
                    }
                }
                texts.push(format!("{cut}{}", piece.to_uppercase()));
            }
        }
    }
    let mut changed = 0;
    for text in &texts {
        check(text).unwrap();
        changed += usize::from(defaults().redact(text) != *text);
    }
    // Both kinds were there, so the comparison means something.
    assert!(changed > 100 && changed < texts.len() - 100, "{changed}");
}

/// One redactor, its scanners reused across short texts in any order.
#[test]
fn reused_scanners_on_short_texts_find_what_new_ones_find() {
    let atoms = atoms();
    let shared = Redactor::compile(true, &[]).unwrap();
    for round in 0..3 {
        for (i, a) in atoms.iter().enumerate() {
            let b = &atoms[(i * 7 + round) % atoms.len()];
            for text in [
                a.clone(),
                format!("{a}{b}"),
                format!("{b} {a}"),
                "hello".into(),
            ] {
                assert_eq!(
                    shared.spans(&text),
                    shared.spans_visiting_every_rule(&text),
                    "{text:?}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn short_mixed_texts_redact_like_the_slow_paths(
        picks in prop::collection::vec(0usize..26, 0..4),
        noise in prop::collection::vec("[a-zA-Z_ .:/=\\-]{0,12}", 0..4),
        cut in 0usize..80,
    ) {
        let atoms = atoms();
        let text: String = picks
            .iter()
            .zip(noise.iter().chain(std::iter::repeat(&String::new())))
            .map(|(&i, n)| format!("{n}{}", atoms[i % atoms.len()]))
            .collect();
        let end = (0..=cut.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        check(&text[..end])?;
        check(&text)?;
    }
}

/// A text that is one secret of a rule's shortest length and nothing else:
/// the search span is exactly the shortest match, which the scanner must
/// still search (it skips only spans shorter than that), with and without
/// the prefilter's windows.
#[test]
fn secrets_of_the_shortest_length_alone_are_redacted() {
    let discord = format!(
        "MT{}.{}.{}",
        gen(ALNUM, 22, 1),
        gen(URLSAFE, 6, 2),
        gen(URLSAFE, 27, 3)
    );
    let cases = [
        ("discord-bot-token", discord),
        ("twilio-api-key", format!("SK{}", gen(HEX, 32, 5))),
        (
            "aws-access-key-id",
            format!("AKIA{}", gen(UPPER_B32, 16, 2)),
        ),
    ];
    for (id, secret) in &cases {
        for r in [defaults(), automaton_defaults()] {
            assert_eq!(r.redact(secret), format!("[REDACTED:{id}]"), "{secret}");
            // One byte short of the shape: nothing.
            let short = &secret[..secret.len() - 1];
            assert_eq!(r.redact(short), *short, "{short}");
        }
    }
}
