//! Fidelity of imported gitleaks rules, case by case, from data files in
//! `tests/fixtures/redact/fidelity/*.toml` (long tokens and keys, keyword
//! placement, line allowlists, clashes with built-in ids, the built-ins'
//! false positives).
//!
//! A case is a text, a rule set and the `[REDACTED:id]` labels expected in
//! the output, in order. Secrets are generated, not written out (a literal
//! token would trip secret scanners on this repository): `<<KIND LEN>>` in a
//! text becomes LEN characters of KIND (`alnum`, `b64`, `b64url`, `hex`,
//! `upper`, `lower`, `digits`, `b32`, or `pem`: LEN lines of 64 base64 characters).
//! Each generated value must be gone from the output entirely (no 12
//! characters of it left), unless written `<<KIND LEN keep>>`: then it must
//! survive untouched. Every case is also streamed in several chunk sizes,
//! which must give the same output.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toolgate::policy::redact::{gitleaks, LazyRedactor, RedactRuleSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// `stock` (gitleaks 8.30.1's default config imported, no built-in
    /// rules), `stock+defaults`, `defaults`, or a gitleaks file in this
    /// folder (imported alone), optionally `+defaults`.
    rules: String,
    text: String,
    labels: Vec<String>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redact/fidelity")
}

/// The stock config toolgate ships for `[extend] useDefault`.
pub const STOCK: &str = include_str!("../src/policy/redact/data/gitleaks-8.30.1.toml");

fn import(text: &str) -> Vec<RedactRuleSpec> {
    match gitleaks::parse(text) {
        Ok(i) => i.rules,
        Err(e) => panic!("gitleaks config does not load: {e:?}"),
    }
}

fn redactor(rules: &str) -> LazyRedactor {
    let (file, defaults) = match rules.strip_suffix("+defaults") {
        Some(f) => (f, true),
        None => (rules, false),
    };
    let imported = match file {
        "defaults" => Vec::new(),
        "stock" => import(STOCK),
        path => import(&std::fs::read_to_string(dir().join(path)).expect("case's config reads")),
    };
    let defaults = defaults || file == "defaults";
    LazyRedactor::with_imports(defaults, Vec::new(), imported, Vec::new())
        .unwrap_or_else(|e| panic!("rules `{rules}` load: {e:?}"))
}

/// A deterministic, well-mixed string (entropy thresholds must pass).
fn generate(kind: &str, len: usize, seed: &mut u64) -> String {
    let alphabet: &str = match kind {
        "alnum" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "b64" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
        "b64url" => "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
        "hex" => "0123456789abcdef",
        "upper" => "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "lower" => "abcdefghijklmnopqrstuvwxyz0123456789",
        "digits" => "0123456789",
        "b32" => "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
        "pem" => {
            let lines: Vec<String> = (0..len).map(|_| generate("b64", 64, seed)).collect();
            return lines.join("\n");
        }
        other => panic!("unknown placeholder kind `{other}`"),
    };
    let chars: Vec<char> = alphabet.chars().collect();
    (0..len)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            chars[((*seed >> 33) % chars.len() as u64) as usize]
        })
        .collect()
}

/// The text with placeholders filled, and the generated values (with
/// whether each must be kept).
fn expand(text: &str, seed: u64) -> (String, Vec<(String, bool)>) {
    let mut seed = seed;
    let mut out = String::new();
    let mut values = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<<") {
        out.push_str(&rest[..open]);
        let close = rest[open..].find(">>").expect("placeholder closes") + open;
        let spec: Vec<&str> = rest[open + 2..close].split_whitespace().collect();
        let len: usize = spec[1].parse().expect("placeholder length");
        let keep = spec.get(2) == Some(&"keep");
        let value = generate(spec[0], len, &mut seed);
        out.push_str(&value);
        values.push((value, keep));
        rest = &rest[close + 2..];
    }
    out.push_str(rest);
    (out, values)
}

fn labels(out: &str) -> Vec<String> {
    out.match_indices("[REDACTED:")
        .map(|(i, m)| {
            let from = i + m.len();
            out[from..from + out[from..].find(']').unwrap()].to_string()
        })
        .collect()
}

fn streamed(r: &toolgate::policy::redact::Redactor, text: &str, chunk: usize) -> String {
    let mut s = r.stream();
    let mut out = String::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + chunk).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push_str(&s.push(&text[at..end]));
        at = end;
    }
    out + &s.finish()
}

fn run_file(path: &Path) -> Vec<String> {
    let file: File = toml::from_str(&std::fs::read_to_string(path).expect("case file reads"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut failures = Vec::new();
    for (i, case) in file.case.iter().enumerate() {
        let lazy = redactor(&case.rules);
        let r = lazy.get();
        let (text, values) = expand(&case.text, 0x5eed + i as u64);
        let out = r.redact(&text).into_owned();
        let mut fail = |why: String| {
            failures.push(format!(
                "{} / {}: {why}\n  output: {:?}",
                path.file_name().unwrap().to_string_lossy(),
                case.name,
                if out.len() > 600 { &out[..600] } else { &out }
            ))
        };
        if labels(&out) != case.labels {
            fail(format!(
                "labels {:?}, expected {:?}",
                labels(&out),
                case.labels
            ));
        }
        for (value, keep) in &values {
            if *keep {
                if !out.contains(value.as_str()) {
                    fail(format!("`{value}` should have been kept"));
                }
            } else if let Some(left) = value
                .as_bytes()
                .windows(12.min(value.len()))
                .find(|w| out.as_bytes().windows(w.len()).any(|o| o == *w))
            {
                fail(format!(
                    "part of a secret survives: `{}`",
                    String::from_utf8_lossy(left)
                ));
            }
        }
        for chunk in [1, 7, 64, 1000, 65536] {
            if streamed(r, &text, chunk) != out {
                fail(format!(
                    "streaming in chunks of {chunk} gives another output"
                ));
            }
        }
    }
    failures
}

#[test]
fn fidelity_cases() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("fidelity folder")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with(".cases.toml")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no case files in {}", dir().display());
    let failures: Vec<String> = files.iter().flat_map(|f| run_file(f)).collect();
    assert!(
        failures.is_empty(),
        "{} failing case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
