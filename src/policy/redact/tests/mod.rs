//! Unit tests for the redactor engine and the built-in rules.

use super::builtin::spec;
use super::*;
use std::sync::OnceLock;

mod builtin;
mod caps;
mod engine;
mod generated;
mod gitleaks;
mod io;
mod json;
mod lazy;
mod prefix;
mod reuse;
mod short;
mod simd;
mod streaming;

// Secrets are assembled from parts at run time: a literal that looks like a
// real token would trip secret scanners (GitHub push protection) on this file.
const ALNUM: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const UPPER_B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &str = "0123456789abcdef";
const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";
const B64: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
const URLSAFE: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

/// `n` characters from `alphabet`, spread out (step 7) so every token mixes
/// cases and digits rather than repeating one character.
fn gen(alphabet: &str, n: usize, seed: usize) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    (0..n)
        .map(|i| chars[(i * 7 + seed) % chars.len()])
        .collect()
}

fn defaults() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| Redactor::compile(true, &[]).expect("built-in rules compile"))
}

fn rule(id: &str, regex: &str, keywords: &[&str], secret_group: usize) -> RedactRuleSpec {
    spec(id, regex, keywords, secret_group)
}

fn compile_errors(rules: &[RedactRuleSpec]) -> Vec<RedactRuleError> {
    match Redactor::compile(false, rules) {
        Ok(r) => panic!("expected errors, compiled {r:?}"),
        Err(errors) => errors,
    }
}

/// `before + secret + after` becomes `before + [REDACTED:id] + after`, and
/// `id` is the only rule that fires (a second one would be a false positive).
fn assert_redacts(id: &str, before: &str, secret: &str, after: &str) {
    let r = defaults();
    let text = format!("{before}{secret}{after}");
    assert_eq!(
        r.redact(&text),
        format!("{before}[REDACTED:{id}]{after}"),
        "rule {id} on {text:?}"
    );
    assert_eq!(r.matching_rules(&text), vec![id], "rules matching {text:?}");
}

/// Like [`assert_redacts`] where the context is also a generic assignment
/// (`X_API_KEY=`): both rules find the secret, the specific id labels it.
fn assert_redacts_assigned(id: &str, before: &str, secret: &str, after: &str) {
    let r = defaults();
    let text = format!("{before}{secret}{after}");
    assert_eq!(
        r.redact(&text),
        format!("{before}[REDACTED:{id}]{after}"),
        "rule {id} on {text:?}"
    );
    assert_eq!(
        r.matching_rules(&text),
        vec![id, "generic-secret"],
        "rules matching {text:?}"
    );
}

fn assert_untouched(text: &str) {
    let r = defaults();
    assert!(
        matches!(r.redact(text), Cow::Borrowed(_)),
        "redacted {text:?} to {:?}",
        r.redact(text)
    );
    assert!(
        r.matching_rules(text).is_empty(),
        "{:?} match {text:?}",
        r.matching_rules(text)
    );
}
