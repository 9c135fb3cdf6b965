//! `toolgate explain`: the reasoning behind one call, which must always
//! agree with the verdict `eval` gives.

#[path = "common/run.rs"]
mod run;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use toolgate::{load_policy, CompileOptions, ConfigPaths, ToolCall, Workspace};

fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests")
}

const BASE: &str = "version: 1
tools: { active: [read, write, bash] }
paths:
  roots: [\".\"]
  deny: [\"**/.env\"]
commands:
  allow: [ls, cat, echo]
  ask: [git push]
  deny:
    - { pattern: \"rm -rf\", id: no-rm, reason: \"no recursive deletes\" }
  default: ask
";

const TEAM: &str = "version: 1
commands:
  deny:
    - { pattern: \"git push --force\", id: team-no-force }
    - { pattern: curl, mode: audit }
";

/// A workspace with a `.env`, a symlink to it, and the two policy layers.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    std::fs::write(ws.join(".env"), "SECRET=1\n").unwrap();
    std::os::unix::fs::symlink(".env", ws.join("notes.txt")).unwrap();
    std::fs::create_dir(ws.join("policies")).unwrap();
    std::fs::write(ws.join("policies/a-base.yaml"), BASE).unwrap();
    std::fs::write(ws.join("policies/b-team.yaml"), TEAM).unwrap();
    dir
}

fn explain(dir: &Path, tool: &str, args: Value) -> Value {
    explain_with(dir, tool, args, &[])
}

/// [`explain`] with more flags (`--identity`, `--profile`).
fn explain_with(dir: &Path, tool: &str, args: Value, more: &[&str]) -> Value {
    let manifests = manifests();
    let args = args.to_string();
    let mut argv = vec![
        "explain",
        "--policies",
        "policies",
        "--manifests",
        manifests.to_str().unwrap(),
        "--tool",
        tool,
        "--args",
        &args,
        "--format",
        "json",
    ];
    argv.extend_from_slice(more);
    let out = run::run_toolgate(dir, &argv, b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_compound_command_shows_each_simple_command_and_the_deciding_finding() {
    let dir = setup();
    let v = explain(
        dir.path(),
        "bash",
        json!({"command": "FOO=1 timeout 5 rm -fr build && git push --force origin main; echo \"rm -rf /\""}),
    );
    assert_eq!(v["decision"], "deny");
    let words: Vec<Value> = v["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["words"].clone())
        .collect();
    // The prefix is gone, the wrapper and the command it runs are separate,
    // and the quoted string is one word of echo, not a command.
    assert_eq!(
        words,
        vec![
            json!(["timeout", "5", "rm", "-fr", "build"]),
            json!(["rm", "-fr", "build"]),
            json!(["git", "push", "--force", "origin", "main"]),
            json!(["echo", "rm -rf /"]),
        ]
    );
    let findings = v["findings"].as_array().unwrap();
    let decided = &findings[v["decided_by"].as_u64().unwrap() as usize];
    assert_eq!(decided["rule"], "no-rm");
    assert_eq!(v["rule"], "no-rm");
    assert!(decided["file"].as_str().unwrap().ends_with("a-base.yaml"));
    assert_eq!(decided["line"], 10, "the line of the rm -rf entry");
    // The push from the second layer is found too, with its own file and line.
    let push = findings
        .iter()
        .find(|f| f["rule"] == "team-no-force")
        .expect("the team rule's finding");
    assert!(push["file"].as_str().unwrap().ends_with("b-team.yaml"));
    assert_eq!(push["line"], 4);
    assert!(
        v["why"].as_str().unwrap().contains("first of 2 at `deny`"),
        "{}",
        v["why"]
    );
    // Each command lists its own findings.
    assert_eq!(v["commands"][1]["findings"][0]["rule"], "no-rm");
    assert_eq!(
        v["commands"][3]["findings"][0]["rule"],
        "commands.allow[echo]"
    );
}

#[test]
fn a_symlinked_path_shows_where_it_leads() {
    let dir = setup();
    let v = explain(dir.path(), "read", json!({"path": "notes.txt"}));
    assert_eq!(
        (v["decision"].as_str(), v["rule"].as_str()),
        (Some("deny"), Some("paths.deny[**/.env]"))
    );
    let p = &v["paths"][0];
    assert_eq!(p["raw"], "notes.txt");
    assert_eq!(p["through_symlink"], true);
    assert!(p["lexical"].as_str().unwrap().ends_with("/notes.txt"));
    assert!(p["real"].as_str().unwrap().ends_with("/.env"));
    assert_eq!(v["findings"][0]["line"], 5, "the deny glob's line");
}

#[test]
fn audit_entries_and_inactive_tools_are_explained() {
    let dir = setup();
    let v = explain(
        dir.path(),
        "bash",
        json!({"command": "curl https://example.com"}),
    );
    assert_eq!(
        v["decision"], "ask",
        "curl is on no enforced list: commands.default"
    );
    assert_eq!(v["audit"][0]["rule"], "commands.deny[curl]");
    let v = explain(dir.path(), "grep", json!({"pattern": "x"}));
    assert_eq!(
        (v["status"].as_str(), v["decision"].as_str()),
        (Some("inactive"), Some("deny"))
    );
    assert!(v["why"].as_str().unwrap().contains("not in the active set"));
    let v = explain(dir.path(), "ls", json!({}));
    assert_eq!(v["status"], "inactive");
}

/// A layer with callers: `ci-*` may not push (a rule scoped with
/// `identities:`), and the `reader` token's profile sees only `read`.
const WHO: &str = "version: 1
tools:
  profiles:
    readonly: [read]
auth:
  tokens:
    - { id: reader, sha256: \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\", profile: readonly }
rules:
  - id: ci-no-push
    identities: [\"ci-*\"]
    tools: [bash]
    when: { arg: command, matches: \"git push\" }
    decision: deny
    reason: CI never pushes
";

#[test]
fn an_identity_decides_as_that_caller() {
    let dir = setup();
    std::fs::write(dir.path().join("policies/c-who.yaml"), WHO).unwrap();
    let push = json!({"command": "git push origin main"});
    // Nobody in particular: the command list asks.
    let v = explain(dir.path(), "bash", push.clone());
    assert_eq!(
        (v["decision"].as_str(), v["identity"].as_null()),
        (Some("ask"), Some(()))
    );
    // A CI caller: the scoped rule denies, and says so.
    let v = explain_with(
        dir.path(),
        "bash",
        push.clone(),
        &["--identity", "ci-nightly"],
    );
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["rule"], "ci-no-push");
    assert_eq!(v["identity"], json!({"id": "ci-nightly", "profile": null}));
    let f = &v["findings"][v["decided_by"].as_u64().unwrap() as usize];
    assert_eq!(
        (f["file"].as_str(), f["line"].as_u64()),
        (Some("policies/c-who.yaml"), Some(9))
    );
    // Another caller: the rule does not apply.
    let v = explain_with(dir.path(), "bash", push.clone(), &["--identity", "alice"]);
    assert_eq!(v["decision"], "ask", "{v}");
    // The `reader` token's profile (from auth.tokens) sees only `read`.
    let v = explain_with(
        dir.path(),
        "bash",
        json!({"command": "ls"}),
        &["--identity", "reader"],
    );
    assert_eq!(
        (v["status"].as_str(), v["decision"].as_str()),
        (Some("inactive"), Some("deny")),
        "{v}"
    );
    assert_eq!(v["identity"]["profile"], "readonly");
    let v = explain_with(
        dir.path(),
        "read",
        json!({"path": "a.txt"}),
        &["--identity", "reader"],
    );
    assert_eq!(v["status"], "active", "{v}");
    // --profile names the caller's profile outright; an unknown one is an error.
    let v = explain_with(
        dir.path(),
        "bash",
        json!({"command": "ls"}),
        &["--identity", "alice", "--profile", "readonly"],
    );
    assert_eq!(v["status"], "inactive", "{v}");
    let out = run::run_toolgate(
        dir.path(),
        &[
            "explain",
            "--policies",
            "policies",
            "--tool",
            "bash",
            "--args",
            "{}",
            "--identity",
            "x",
            "--profile",
            "nope",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_human_format_marks_the_deciding_finding() {
    let dir = setup();
    let out = run::run_toolgate(
        dir.path(),
        &[
            "explain",
            "--policies",
            "policies",
            "--manifests",
            manifests().to_str().unwrap(),
            "--tool",
            "bash",
            "--args",
            r#"{"command":"ls && rm -rf /"}"#,
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("=> deny by no-rm"), "{text}");
    let marked: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("=> ") && l.contains(". "))
        .collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(
        marked[0].contains("no-rm") && marked[0].contains("a-base.yaml:10"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = setup();
    let out = run::run_toolgate(dir.path(), &["explain", "--policies", "policies"], b"");
    assert_eq!(out.status.code(), Some(2));
    let out = run::run_toolgate(
        dir.path(),
        &["explain", "--tool", "bash", "--args", "[1]"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Explain never disagrees with the verdict: over the whole shell corpus,
/// its decision, rule and reason are `evaluate`'s, and the finding it marks
/// as deciding is the verdict's.
#[test]
fn explain_agrees_with_evaluate_over_the_shell_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let policy = load_policy(
        &ConfigPaths {
            policies: Some(root.join("policy.yaml")),
            manifests: Some(manifests()),
        },
        &CompileOptions::default(),
    )
    .unwrap();
    let corpus: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root.join("shell.yaml")).unwrap()).unwrap();
    let dir = setup();
    let ws = Workspace::new(dir.path()).unwrap();
    let mut n = 0;
    for case in corpus["cases"].as_sequence().unwrap() {
        let call = ToolCall::new(
            "bash",
            json!({"command": case["command"].as_str().unwrap()}),
        );
        let v = policy.evaluate(&ws, &call);
        let e = policy.explain(&ws, &call, None);
        assert_eq!(
            (e.decision, &e.rule, &e.reason),
            (v.decision, &v.rule, &v.reason),
            "{call:?}"
        );
        if let Some(i) = e.decided_by {
            assert_eq!(Some(&e.findings[i].rule), v.rule.as_ref(), "{call:?}");
        }
        n += 1;
    }
    assert!(n > 100);
}
