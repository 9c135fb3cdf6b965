//! Redaction throughput on 50 MB of generated code-like text, side by side
//! with the naive approach (every rule's regex over the whole text).
//!
//! Cases, all with the built-in rules (`defaults: true`):
//! - `redact/toolgate/code-with-secrets`: `Redactor::redact` on text with a
//!   secret every ~100 KB (and the keyword noise real code has: `token`,
//!   `secret`, URLs);
//! - `redact/toolgate-stream/code-with-secrets`: the same through
//!   `StreamRedactor` in 64 KB chunks;
//! - `redact/naive/code-with-secrets`: each rule's regex (`regex` crate)
//!   over the whole text, spans collected — what a redactor without a
//!   keyword prefilter does;
//! - `redact/toolgate/no-keyword-hits`: code-like text in which no keyword
//!   of any rule occurs (checked before timing);
//! - `redact/toolgate-gitleaks/code-with-secrets` and
//!   `redact/toolgate-gitleaks-stream/code-with-secrets`: the same text with
//!   gitleaks' stock config (8.30.1, as shipped for `[extend] useDefault`)
//!   imported instead of the built-in rules.
//!
//! `TOOLGATE_BENCH_CORPUS=DIR cargo bench --bench redact -- --test` writes
//! the code-with-secrets text to `DIR/corpus.txt`, the clean text to
//! `DIR/clean.txt` and the rules as POSIX
//! extended regexes to `DIR/patterns.ere`, for the GNU grep comparison in
//! docs/performance.md; and the 22 formats of [`GREP_FORMATS`] both as
//! `DIR/patterns22.ere` and as a policy of those rules alone,
//! `DIR/policy22.yaml`, for `benches/redact_grep/run.py`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use regex_syntax::hir::{Class, Hir, HirKind, Look};
use toolgate::policy::redact::{
    default_rules, gitleaks, syntax::ascii_perl_classes, LazyRedactor, Redactor,
};

const SIZE: usize = 50 * 1024 * 1024;
const SECRET_EVERY: usize = 100 * 1024;

/// xorshift64: deterministic, dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn chars(&mut self, set: &str, n: usize) -> String {
        let set = set.as_bytes();
        (0..n)
            .map(|_| set[(self.next() % set.len() as u64) as usize] as char)
            .collect()
    }
}

const WORDS: &[&str] = &[
    "fn", "let", "mut", "return", "if", "else", "match", "struct", "impl", "self", "value",
    "count", "index", "buffer", "result", "error", "config", "name", "data", "items", "len",
    "push", "iter", "map", "filter", "collect", "string", "format", "write", "read", "file",
    "path", "options", "handler", "request", "response", "client", "server", "query", "update",
    "delete", "create", "list", "node", "tree", "parent", "child", "state", "event", "source",
    "target", "offset", "limit", "total", "width", "height", "color", "style", "render", "layout",
    "print", "Vec", "String", "Option", "Some", "None", "Ok", "Err", "u64", "usize", "i32", "bool",
    "true", "false", "for", "in", "while", "loop", "break", "continue", "pub", "use", "mod",
    "crate", "super", "const", "static", "where", "trait", "type", "enum",
];
/// Words real code has that wake some rules (keywords), for the realistic case.
const NOISY: &[&str] = &[
    "token",
    "secret",
    "api_key",
    "password",
    "https://docs.rs/serde",
    "Asia/Tokyo",
    "task",
];
const SEPARATORS: &[&str] = &[
    "(", ");\n    ", ".", " = ", ", ", " ", "_", "[0]", " {\n", "}\n", " + ", " == ", "\n\n// ",
    "::",
];

/// One generated secret of a rotating built-in format.
fn secret(rng: &mut Rng, i: usize) -> String {
    const A: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const U: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    match i % 6 {
        0 => format!("let t = \"ghp_{}\";\n", rng.chars(A, 36)),
        1 => format!(
            "aws_access_key_id = AKIA{}\n",
            rng.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
        ),
        2 => format!("password = \"{}\"\n", rng.chars(A, 16)),
        3 => format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
            rng.chars(A, 64),
            rng.chars(A, 64)
        ),
        4 => format!(
            "Authorization: Bearer eyJ{}.eyJ{}.{}\n",
            rng.chars(U, 30),
            rng.chars(U, 60),
            rng.chars(U, 43)
        ),
        _ => format!(
            "DATABASE_URL=postgres://app:{}@db:5432/app\n",
            rng.chars(A, 12)
        ),
    }
}

fn code(size: usize, noisy: bool, secrets: bool) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut text = String::with_capacity(size + 4096);
    let mut next_secret = SECRET_EVERY / 2;
    let mut n = 0;
    while text.len() < size {
        if secrets && text.len() >= next_secret {
            text.push_str(&secret(&mut rng, n));
            n += 1;
            next_secret += SECRET_EVERY;
        }
        let word = if noisy && rng.next().is_multiple_of(200) {
            rng.pick(NOISY)
        } else {
            rng.pick(WORDS)
        };
        text.push_str(word);
        text.push_str(rng.pick(SEPARATORS));
    }
    text
}

/// Each built-in rule as a `regex::Regex`, with the same ASCII Perl classes.
fn naive_rules() -> Vec<(regex::Regex, bool)> {
    default_rules()
        .iter()
        .map(|r| {
            let pattern = ascii_perl_classes(&r.regex).expect("built-in rules parse");
            let grouped = r.secret_group != toolgate::policy::redact::SecretGroup::Whole;
            (
                regex::Regex::new(&pattern).expect("built-in rules compile"),
                grouped,
            )
        })
        .collect()
}

fn naive(rules: &[(regex::Regex, bool)], text: &str) -> usize {
    let mut spans = Vec::new();
    for (re, grouped) in rules {
        if *grouped {
            for caps in re.captures_iter(text) {
                if let Some(m) = caps.get(1) {
                    spans.push((m.start(), m.end()));
                }
            }
        } else {
            spans.extend(re.find_iter(text).map(|m| (m.start(), m.end())));
        }
    }
    spans.sort_unstable();
    spans.len()
}

fn bench(c: &mut Criterion) {
    let redactor = Redactor::compile(true, &[]).expect("built-in rules compile");
    let with_secrets = code(SIZE, true, true);
    let clean = code(SIZE, false, false);
    let lower = clean.to_ascii_lowercase();
    for rule in default_rules() {
        for k in &rule.keywords {
            assert!(!lower.contains(k.as_str()), "keyword {k} in the clean text");
        }
    }
    assert!(redactor.matching_rules(&clean).is_empty());
    let redacted = redactor.redact(&with_secrets);
    let found = redacted.matches("[REDACTED:").count();
    assert!(found >= SIZE / SECRET_EVERY, "only {found} redactions");
    if let Ok(dir) = std::env::var("TOOLGATE_BENCH_CORPUS") {
        write_corpus(&dir, &with_secrets, &clean);
    }

    let stock = gitleaks::parse(gitleaks::DEFAULT_CONFIG).expect("the stock config loads");
    let imported = LazyRedactor::with_imports(false, Vec::new(), stock.rules, Vec::new())
        .expect("the stock config's rules load");
    let imported = imported.get();
    // The stock config has no rule for one of the six formats (a Postgres
    // URL's password), and its `jwt` wants a delimiter after the token:
    // about 375 redactions.
    let found = imported.redact(&with_secrets).matches("[REDACTED:").count();
    assert!(
        found >= SIZE / SECRET_EVERY / 2,
        "only {found} redactions with the stock config"
    );

    let naive_rules = naive_rules();
    let mut g = c.benchmark_group("redact");
    g.throughput(Throughput::Bytes(SIZE as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("toolgate/code-with-secrets", |b| {
        b.iter(|| black_box(redactor.redact(black_box(&with_secrets))).len())
    });
    g.bench_function("toolgate-stream/code-with-secrets", |b| {
        b.iter(|| stream(&redactor, &with_secrets))
    });
    g.bench_function("toolgate-gitleaks/code-with-secrets", |b| {
        b.iter(|| black_box(imported.redact(black_box(&with_secrets))).len())
    });
    g.bench_function("toolgate-gitleaks-stream/code-with-secrets", |b| {
        b.iter(|| stream(imported, &with_secrets))
    });
    g.bench_function("toolgate/no-keyword-hits", |b| {
        b.iter(|| black_box(redactor.redact(black_box(&clean))).len())
    });
    g.bench_function("naive/code-with-secrets", |b| {
        b.iter(|| naive(&naive_rules, black_box(&with_secrets)))
    });
    g.finish();
}

/// Redacts `text` through a stream in 64 KB chunks; the output's length.
fn stream(redactor: &Redactor, text: &str) -> usize {
    let mut s = redactor.stream();
    let mut out = 0;
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + 64 * 1024).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        out += s.push(&text[at..end]).len();
        at = end;
    }
    out + s.finish().len()
}

/// The built-in formats of the whole-process comparison with GNU grep: the
/// token formats with a fixed prefix and bounded repetitions that GNU
/// grep's DFA handles without blowing up (the others, e.g. `jwt`'s
/// `{10,2048}`, take it minutes on the corpus), including three of the
/// corpus's six secret formats (GitHub PAT, AWS key id, the private key's
/// `BEGIN` line).
const GREP_FORMATS: [&str; 22] = [
    "aws-access-key-id",
    "google-api-key",
    "gcp-oauth-client-secret",
    "alibaba-access-key-id",
    "digitalocean-token",
    "stripe-webhook-secret",
    "square-access-token",
    "shopify-token",
    "huggingface-access-token",
    "replicate-api-token",
    "perplexity-api-key",
    "nvidia-api-key",
    "crates-io-api-token",
    "rubygems-api-key",
    "docker-hub-pat",
    "sendgrid-api-key",
    "linear-api-key",
    "new-relic-user-api-key",
    "github-pat",
    "github-app-token",
    "github-refresh-token",
    "private-key",
];

/// Writes the corpus and the rules as POSIX EREs (one per line) for
/// `grep -E -o -f patterns.ere corpus.txt`; likewise the [`GREP_FORMATS`]
/// alone, and a policy of just those rules (same regexes and keywords, no
/// allowlists or block continuation: what grep is given).
fn write_corpus(dir: &str, text: &str, clean: &str) {
    std::fs::create_dir_all(dir).expect("corpus dir");
    std::fs::write(format!("{dir}/corpus.txt"), text).expect("corpus");
    std::fs::write(format!("{dir}/clean.txt"), clean).expect("clean corpus");
    let mut patterns = String::new();
    for r in default_rules() {
        let ascii = ascii_perl_classes(&r.regex).expect("parse");
        let hir = regex_syntax::parse(&ascii).expect("parse");
        patterns.push_str(&ere(&hir));
        patterns.push('\n');
    }
    std::fs::write(format!("{dir}/patterns.ere"), patterns).expect("patterns");

    let mut patterns = String::new();
    let mut policy = String::from("version: 1\nredact:\n  defaults: false\n  rules:\n");
    for id in GREP_FORMATS {
        let r = default_rules()
            .into_iter()
            .find(|r| r.id == id)
            .expect("a built-in format");
        let ascii = ascii_perl_classes(&r.regex).expect("parse");
        patterns.push_str(&ere(&regex_syntax::parse(&ascii).expect("parse")));
        patterns.push('\n');
        let group = match r.secret_group {
            toolgate::policy::redact::SecretGroup::Index(n) => n,
            _ => 0,
        };
        // JSON is YAML.
        let rule = serde_json::json!({
            "id": r.id, "regex": r.regex, "keywords": r.keywords, "secret_group": group,
        });
        policy.push_str(&format!("    - {rule}\n"));
    }
    std::fs::write(format!("{dir}/patterns22.ere"), patterns).expect("patterns");
    std::fs::write(format!("{dir}/policy22.yaml"), policy).expect("policy");
}

/// Prints a HIR as a POSIX extended regex (with GNU's `\b`). Case folding is
/// already spelled out as classes in the HIR; lazy repetitions print as
/// greedy, which finds the same lines.
fn ere(hir: &Hir) -> String {
    match hir.kind() {
        HirKind::Empty => "()".to_string(),
        HirKind::Literal(lit) => String::from_utf8_lossy(&lit.0)
            .chars()
            .map(|c| {
                if "\\^$.|?*+()[]{}".contains(c) {
                    format!("\\{c}")
                } else {
                    c.to_string()
                }
            })
            .collect(),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(char, char)> = class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect();
            let ascii: Vec<(char, char)> = ranges
                .iter()
                .filter(|r| r.0 <= '\x7f')
                .map(|&(a, b)| (a, b.min('\x7f')))
                .collect();
            if ranges.last().is_some_and(|r| r.1 == char::MAX) {
                // A negated class (it reaches the end of Unicode): print the
                // ASCII complement, negated. Other non-ASCII members (case
                // folding adds `ſ` to `s`, the Kelvin sign to `k`) are dropped.
                let mut negated = Vec::new();
                let mut next = '\0';
                for &(a, b) in &ascii {
                    if a > next {
                        negated.push((next, char::from_u32(a as u32 - 1).unwrap()));
                    }
                    next = char::from_u32(b as u32 + 1).unwrap_or('\x7f');
                }
                match bracket(&negated) {
                    // Only the newline is excluded, and grep sees no newlines.
                    inner if inner.is_empty() => ".".to_string(),
                    inner => format!("[^{inner}]"),
                }
            } else {
                format!("[{}]", bracket(&ascii))
            }
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges: Vec<(char, char)> = class
                .ranges()
                .iter()
                .map(|r| (r.start() as char, r.end() as char))
                .collect();
            format!("[{}]", bracket(&ranges))
        }
        HirKind::Look(look) => match look {
            Look::Start | Look::StartLF | Look::StartCRLF => "^".into(),
            Look::End | Look::EndLF | Look::EndCRLF => "$".into(),
            Look::WordAscii | Look::WordUnicode => "\\b".into(),
            Look::WordAsciiNegate | Look::WordUnicodeNegate => "\\B".into(),
            _ => String::new(),
        },
        HirKind::Repetition(rep) => {
            let sub = ere(&rep.sub);
            let sub = if matches!(rep.sub.kind(), HirKind::Literal(l) if l.0.len() > 1)
                || matches!(rep.sub.kind(), HirKind::Concat(_) | HirKind::Repetition(_))
            {
                format!("({sub})")
            } else {
                sub
            };
            match (rep.min, rep.max) {
                (0, None) => format!("{sub}*"),
                (1, None) => format!("{sub}+"),
                (0, Some(1)) => format!("{sub}?"),
                (m, None) => format!("{sub}{{{m},}}"),
                (m, Some(n)) if m == n => format!("{sub}{{{m}}}"),
                (m, Some(n)) => format!("{sub}{{{m},{n}}}"),
            }
        }
        HirKind::Capture(cap) => format!("({})", ere(&cap.sub)),
        HirKind::Concat(subs) => subs.iter().map(ere).collect(),
        HirKind::Alternation(subs) => {
            format!("({})", subs.iter().map(ere).collect::<Vec<_>>().join("|"))
        }
    }
}

/// The inside of a bracket expression: `]` first, `-` last, `^` not first;
/// control characters (tab, CR) as themselves, newline dropped (grep works
/// on lines).
fn bracket(ranges: &[(char, char)]) -> String {
    let (mut head, mut body, mut tail) = (String::new(), String::new(), String::new());
    for &(a, b) in ranges {
        for (lo, hi) in split_specials(a, b) {
            match (lo, hi) {
                (']', ']') => head.push(']'),
                ('-', '-') => tail.push('-'),
                ('\n', '\n') => {}
                (l, h) if l == h => body.push(l),
                (l, h) => {
                    body.push(l);
                    body.push('-');
                    body.push(h);
                }
            }
        }
    }
    if body.starts_with('^') {
        body = body[1..].to_string() + "^";
    }
    format!("{head}{body}{tail}")
}

/// Splits a range so `]`, `-` and newline stand alone (they need placing).
fn split_specials(a: char, b: char) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut start = a;
    for special in ['\n', '-', ']'] {
        if special >= start && special <= b {
            if special > start {
                out.push((start, char::from_u32(special as u32 - 1).unwrap()));
            }
            out.push((special, special));
            start = char::from_u32(special as u32 + 1).unwrap();
        }
    }
    if start <= b {
        out.push((start, b));
    }
    out
}

criterion_group!(benches, bench);
criterion_main!(benches);
