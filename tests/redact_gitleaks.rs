//! Differential test against gitleaks itself: with gitleaks' stock config
//! imported (`defaults: false`), toolgate must redact every secret gitleaks
//! 8.30.1 finds, on texts generated from that config's own rules.
//!
//! For each rule, samples are generated from its regex (random members of
//! each class, repetitions short and long, long ones well past toolgate's
//! repetition caps), each in a file of its own with a keyword of the rule on
//! the line before when the sample has none (gitleaks wants one in the file,
//! toolgate near the match). gitleaks scans the folder (`gitleaks dir`, no
//! decoding: toolgate does not decode base64 in tool output); every secret
//! it reports must be gone from toolgate's output. The binary comes from
//! `tests/gitleaks/install.sh`; without it this test fails and says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex_syntax::hir::{Class, Hir, HirKind};
use toolgate::policy::redact::{gitleaks, LazyRedactor};

const STOCK: &str = include_str!("../src/policy/redact/data/gitleaks-8.30.1.toml");

/// Samples per rule.
const SAMPLES: u64 = 6;

fn gitleaks_binary() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/gitleaks/.venv/gitleaks");
    let ok = Command::new(&bin)
        .arg("version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "8.30.1");
    assert!(
        ok,
        "gitleaks 8.30.1 is not installed at {}: run `bash tests/gitleaks/install.sh` (CI runs it from .ci/run)",
        bin.display()
    );
    bin
}

/// A small deterministic generator (the test must give the same texts on
/// every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Characters a class offers, preferring letters and digits (what secrets
/// are made of), then other printable ASCII, then anything.
fn pick(class: &Class, rng: &mut Rng) -> String {
    let mut members: Vec<char> = Vec::new();
    match class {
        Class::Unicode(u) => {
            for r in u.ranges() {
                let (a, b) = (r.start() as u32, (r.end() as u32).min(0x7e));
                members.extend((a..=b).filter_map(char::from_u32));
            }
            if members.is_empty() {
                members.push(u.ranges()[0].start());
            }
        }
        Class::Bytes(bc) => {
            for r in bc.ranges() {
                members.extend((r.start()..=r.end().min(0x7e)).map(char::from));
            }
            if members.is_empty() {
                members.push('x');
            }
        }
    }
    let alnum: Vec<char> = members
        .iter()
        .copied()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let printable: Vec<char> = members
        .iter()
        .copied()
        .filter(|c| c.is_ascii_graphic())
        .collect();
    let pool = if !alnum.is_empty() && rng.below(8) != 0 {
        alnum
    } else if !printable.is_empty() {
        printable
    } else {
        members
    };
    pool[rng.below(pool.len() as u64) as usize].to_string()
}

/// A random member of `hir`'s language (look-arounds are left to the
/// surrounding text). `long`: unbounded repetitions inside the secret (a
/// capture group, or anywhere in a regex without one) run far past
/// toolgate's caps; those around it stay short (toolgate caps them, and
/// `check` lists each rule where a longer one would be missed).
fn sample(hir: &Hir, rng: &mut Rng, long: bool, secret: bool, out: &mut String) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(l) => out.push_str(&String::from_utf8_lossy(&l.0)),
        HirKind::Class(c) => out.push_str(&pick(c, rng)),
        HirKind::Capture(c) => sample(&c.sub, rng, long, true, out),
        HirKind::Concat(subs) => subs.iter().for_each(|s| sample(s, rng, long, secret, out)),
        HirKind::Alternation(subs) => {
            let i = rng.below(subs.len() as u64) as usize;
            sample(&subs[i], rng, long, secret, out)
        }
        HirKind::Repetition(rep) => {
            let n = match rep.max {
                None if long && secret => rep.min as u64 + 300 + rng.below(600),
                None => rep.min as u64 + rng.below(12),
                Some(max) => rep.min as u64 + rng.below((max - rep.min).min(40) as u64 + 1),
            };
            for _ in 0..n {
                sample(&rep.sub, rng, long, secret, out);
            }
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Finding {
    #[serde(rename = "RuleID")]
    rule_id: String,
    secret: String,
    file: String,
}

#[test]
fn toolgate_finds_every_secret_gitleaks_finds() {
    let bin = gitleaks_binary();
    let import = gitleaks::parse(STOCK).expect("the stock config loads");
    let dir = tempfile::tempdir().unwrap();
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    for (ri, rule) in import.rules.iter().enumerate() {
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&rule.regex)
            .unwrap_or_else(|e| panic!("rule {}: {e}", rule.id));
        for n in 0..SAMPLES {
            let mut rng = Rng(0x9e3779b97f4a7c15 ^ ((ri as u64) << 8) ^ n);
            let mut secret = String::new();
            let long = n >= SAMPLES - 2;
            // In a regex with groups, only the groups are the secret.
            let whole = hir.properties().explicit_captures_len() == 0;
            sample(&hir, &mut rng, long, whole, &mut secret);
            let lower = secret.to_lowercase();
            let mut text = String::from("output of a tool\n");
            if !rule.keywords.is_empty() && !rule.keywords.iter().any(|k| lower.contains(k)) {
                text.push_str(&format!("# {}\n", rule.keywords[0]));
            }
            text.push_str(&format!(" {secret} \nend\n"));
            let name = format!("{}-{n}.txt", rule.id);
            std::fs::write(dir.path().join(&name), &text).unwrap();
            texts.insert(name, text);
        }
    }
    let report = dir.path().join("report.json");
    let out = Command::new(&bin)
        .args([
            "dir",
            "--no-banner",
            "--log-level",
            "error",
            "--max-decode-depth",
            "0",
        ])
        .arg("--config")
        .arg(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("src/policy/redact/data/gitleaks-8.30.1.toml"),
        )
        .arg("--report-format")
        .arg("json")
        .arg("--report-path")
        .arg(&report)
        .arg(dir.path())
        .output()
        .expect("gitleaks runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "gitleaks failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let findings: Vec<Finding> =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();

    let lazy = LazyRedactor::with_imports(false, Vec::new(), import.rules.clone(), Vec::new())
        .expect("the stock config's rules load");
    let r = lazy.get();
    let mut missed = Vec::new();
    let mut found = 0;
    for f in &findings {
        let name = Path::new(&f.file)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let Some(text) = texts.get(&name) else {
            continue;
        };
        let redacted = r.redact(text);
        if f.secret.is_empty() || !redacted.contains(f.secret.as_str()) {
            found += 1;
        } else {
            missed.push(format!("{name}: {} found {:?}", f.rule_id, f.secret));
        }
    }
    eprintln!(
        "gitleaks 8.30.1 found {} secrets in {} generated texts ({} rules); toolgate redacted {found}",
        findings.len(),
        texts.len(),
        import.rules.len()
    );
    assert!(
        findings.len() as u64 > import.rules.len() as u64 * SAMPLES / 2,
        "gitleaks found only {} secrets: the generator is broken",
        findings.len()
    );
    assert!(
        missed.is_empty(),
        "toolgate left {} of {} secrets gitleaks finds:\n{}",
        missed.len(),
        findings.len(),
        missed.join("\n")
    );
}
