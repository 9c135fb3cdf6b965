//! `toolgate check` and `toolgate redact` with gitleaks imports: warnings for
//! rules that cannot run, errors (with positions) for broken files, and the
//! streaming filter.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redact")
}

fn toolgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(fixtures())
        .output()
        .expect("toolgate runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn check(policy: &str, format: &str) -> Output {
    toolgate(&[
        "check",
        "--policies",
        policy,
        "--manifests",
        "../../../tool-manifests",
        "--format",
        format,
    ])
}

#[test]
fn check_lists_unsupported_gitleaks_rules_as_warnings() {
    let o = check("policy.yaml", "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for (line, rule, reason) in [
        (35, "lookahead-token", "look-around"),
        (40, "backreference-quoted", "backreferences"),
        (45, "possessive-key", "possessive"),
    ] {
        let prefix = format!("gitleaks.toml:{line}:9: warning: rule `{rule}` is skipped: it cannot run here: invalid regex: ");
        let found = out.lines().find(|l| l.contains(&prefix));
        assert!(found.is_some_and(|l| l.contains(reason)), "{rule}: {out}");
    }
    assert!(
        out.contains("warning: rule `pkcs12-file` is skipped"),
        "{out}"
    );
    assert!(out.contains("ok: policy"), "{out}");

    let o = check("policy.yaml", "github");
    assert!(
        stdout(&o).contains("::warning file=gitleaks.toml,line=35,col=9,"),
        "{}",
        stdout(&o)
    );
    let o = check("policy.yaml", "json");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(4), "{v}");
}

#[test]
fn strict_policies_refuse_unsupported_rules() {
    let o = check("strict.yaml", "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("gitleaks.toml:35:9: error: rule `lookahead-token` is skipped"),
        "{out}"
    );
    assert!(out.contains("3 errors"), "{out}");
}

#[test]
fn broken_gitleaks_files_fail_the_load_with_positions() {
    let o = check("broken.yaml", "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "broken-gitleaks.toml:9:1: error: invalid gitleaks config: unknown field `regx`"
        ),
        "{out}"
    );
    assert!(
        out.contains("broken.yaml:3:36: error: gitleaks config `missing.toml`"),
        "{out}"
    );
}

#[test]
fn redact_uses_imported_rules_and_streams() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["redact", "--policies", "policy.yaml"])
        .current_dir(fixtures())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let acme = format!("acme_{}", "k3j5h7g9f1d3s5a7p9o1i3u5y7t9r1e3");
    let mut stdin = child.stdin.take().unwrap();
    // Far more than one read: the filter must not need it all at once. A
    // writer thread, because output comes back while input still goes in.
    let line = "fn main() { println!(\"hello\"); }\n".repeat(10_000);
    let input = format!("{line}key = {acme}\n{line}");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let o = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out, format!("{line}key = [REDACTED:acme-api-key]\n{line}"));
}

#[test]
fn policy_redaction_errors_point_at_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("gitleaks.toml"),
        dir.path().join("gitleaks.toml"),
    )
    .unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "version: 1\nredact:\n  allowlist: { regexes: ['(unclosed'] }\n  rules:\n    - { id: acme-api-key, regex: 'acme_[a-z]{8}', keywords: [acme_] }\n  gitleaks: [gitleaks.toml]\n",
    )
    .unwrap();
    let o = check(policy.to_str().unwrap(), "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(
            "p.yaml:3:14: error: redact.allowlist: allowlist regex `(unclosed`: unclosed group"
        ),
        "{out}"
    );
    assert!(
        out.contains("gitleaks.toml:13:1: error: gitleaks rule `acme-api-key`: duplicate rule id: a rule of the policy already uses it"),
        "{out}"
    );
}

/// An imported rule is only checked at load and built when a scan first
/// needs it. One whose automaton is over the size limit fails closed: the
/// text its regex could reach around its keyword is redacted, and `check`
/// says so.
#[test]
fn an_imported_rule_too_large_to_build_fails_closed() {
    // A class of 450 scattered characters, 300 times: a short regex whose
    // automaton is megabytes. (Hex escapes without letters: the importer
    // takes `{…}` with letters in it for literal braces.)
    let class: String = (0x100u32..0x1000)
        .step_by(2)
        .map(|c| format!("{c:X}"))
        .filter(|h| h.bytes().all(|b| b.is_ascii_digit()))
        .map(|h| format!("\\x{{{h}}}"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("huge.toml"),
        format!("[[rules]]\nid = \"huge-automaton\"\nregex = '''k=[{class}]{{300}}'''\nkeywords = [\"k=\"]\n"),
    )
    .unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "version: 1\nredact:\n  defaults: true\n  gitleaks: [huge.toml]\n",
    )
    .unwrap();
    let policy = policy.to_str().unwrap();
    let o = check(policy, "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("warning: redaction rule `huge-automaton` cannot run, so the text around its keywords is redacted whole: regex is too large; simplify it"),
        "{out}"
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["redact", "--policies", policy])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (before, after) = ("x".repeat(1500), "y".repeat(1500));
    let input = format!("{before} k=abc {after}\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    // Its regex reaches 2 + 3 * 300 bytes from the keyword, at 1501, and
    // an imported rule's window is wider by the keyword context.
    let reach = 902 + toolgate::policy::redact::KEYWORD_CONTEXT;
    let expected = format!(
        "{}[REDACTED:huge-automaton]{}",
        &input[..1501 - reach],
        &input[1501 + reach..]
    );
    assert_eq!(String::from_utf8(o.stdout).unwrap(), expected);
}

#[test]
fn check_lists_each_imported_rule_that_reuses_a_built_in_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("fidelity/clash.gitleaks.toml"),
        dir.path().join("clash.toml"),
    )
    .unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        "version: 1\nredact:\n  defaults: true\n  gitleaks: [clash.toml]\n",
    )
    .unwrap();
    let o = check(policy.to_str().unwrap(), "human");
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    for (line, id) in [(3, "jwt"), (9, "private-key"), (15, "github-pat")] {
        let expected = format!(
            "clash.toml:{line}:1: warning: gitleaks rule `{id}` has the id of a built-in rule: both run, and what either finds is redacted as `[REDACTED:{id}]`"
        );
        assert!(out.contains(&expected), "missing {expected:?} in\n{out}");
    }
}
