//! Audit mode (`mode: audit` on a command entry, a rule or a whole policy
//! file): what an audit entry would decide is recorded with the verdict and
//! never changes it.

#[path = "common/run.rs"]
mod run;

use std::path::Path;

use serde_json::{json, Value};
use toolgate::{load_policy, CompileOptions, ConfigPaths, Policy, ToolCall, Workspace};

fn manifests() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests")
}

fn compile(files: &[(&str, &str)], enforce_audit: bool) -> Result<Policy, String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let paths = ConfigPaths {
        policies: Some(dir.path().to_path_buf()),
        manifests: Some(manifests()),
    };
    let options = CompileOptions {
        enforce_audit,
        ..CompileOptions::default()
    };
    load_policy(&paths, &options).map_err(|d| d.to_human())
}

/// A workspace holding what the shell corpus describes.
fn corpus_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    for f in [
        "Cargo.lock",
        ".env",
        "src/main.rs",
        "secrets/key.txt",
        "docs/readme.md",
    ] {
        let p = ws.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x\n").unwrap();
    }
    ws
}

fn bash(command: &str) -> ToolCall {
    ToolCall::new("bash", json!({ "command": command }))
}

const BASE: &str = "version: 1\ntools: { active: [read, write, bash] }\ncommands:\n  allow: [ls, curl, git push]\n  default: ask\n  unparsed: deny\n";

#[test]
fn an_audit_entry_is_recorded_and_never_decides() {
    let policy = compile(
        &[(
            "policy.yaml",
            &format!("{BASE}  deny:\n    - {{ pattern: curl, id: no-network, reason: \"no network\", mode: audit }}\n    - {{ pattern: \"git push --force\", mode: audit }}\n"),
        )],
        false,
    )
    .unwrap();
    let ws = Workspace::new(corpus_workspace().path()).unwrap();
    let v = policy.evaluate(&ws, &bash("curl https://example.com && ls"));
    assert_eq!(v.decision, toolgate::Decision::Allow, "{v:?}");
    assert_eq!(v.rule.as_deref(), Some("commands.allow[curl]"));
    assert_eq!(v.audit.len(), 1, "{v:?}");
    assert_eq!(v.audit[0].decision, toolgate::Decision::Deny);
    assert_eq!(v.audit[0].rule, "no-network");
    assert!(v.audit[0].reason.contains("no network"));
    // The JSON verdict carries it; a verdict without audit findings has no key.
    let j = serde_json::to_value(&v).unwrap();
    assert_eq!(j["audit"][0]["rule"], "no-network");
    assert!(serde_json::to_value(policy.evaluate(&ws, &bash("ls")))
        .unwrap()
        .get("audit")
        .is_none());
    // Flags fold as for enforced entries.
    let v = policy.evaluate(&ws, &bash("git push -f origin main"));
    assert_eq!(v.decision, toolgate::Decision::Allow);
    assert_eq!(v.audit[0].rule, "commands.deny[git push --force]");

    // Enforced, the same policy denies.
    let enforced = compile(
        &[(
            "policy.yaml",
            &format!("{BASE}  deny:\n    - {{ pattern: curl, id: no-network, reason: \"no network\", mode: audit }}\n"),
        )],
        true,
    )
    .unwrap();
    let v = enforced.evaluate(&ws, &bash("curl https://example.com"));
    assert_eq!(
        (v.decision, v.rule.as_deref()),
        (toolgate::Decision::Deny, Some("no-network"))
    );
    assert!(v.audit.is_empty());
}

#[test]
fn an_audit_rule_is_recorded_and_never_decides() {
    let rule = "rules:\n  - id: no-env-example\n    tools: [write]\n    when: { arg: path, glob: \"**/*.example\" }\n    decision: deny\n    mode: audit\n    examples: { match: [{ path: a.example, content: x }], not_match: [{ path: a.txt, content: x }] }\n";
    let policy = compile(&[("policy.yaml", &format!("{BASE}{rule}"))], false).unwrap();
    let ws = Workspace::new(corpus_workspace().path()).unwrap();
    let call = ToolCall::new("write", json!({"path": "conf/a.example", "content": "x"}));
    let v = policy.evaluate(&ws, &call);
    assert_eq!(v.decision, toolgate::Decision::Allow, "{v:?}");
    assert_eq!(v.audit[0].rule, "no-env-example");
    assert_eq!(v.audit[0].decision, toolgate::Decision::Deny);
    let enforced = compile(&[("policy.yaml", &format!("{BASE}{rule}"))], true).unwrap();
    assert_eq!(
        enforced.evaluate(&ws, &call).decision,
        toolgate::Decision::Deny
    );
}

#[test]
fn an_audit_file_makes_its_entries_audit_only_and_says_what_it_cannot_hold() {
    let audit_layer = "version: 1\nmode: audit\ncommands:\n  deny: [curl]\n  ask:\n    - { pattern: \"git push\", mode: enforce }\n";
    let policy = compile(&[("a.yaml", BASE), ("b.yaml", audit_layer)], false).unwrap();
    let ws = Workspace::new(corpus_workspace().path()).unwrap();
    let v = policy.evaluate(&ws, &bash("curl x"));
    assert_eq!(v.decision, toolgate::Decision::Allow);
    assert_eq!(v.audit[0].rule, "commands.deny[curl]");
    // `mode: enforce` on an entry overrides its file's audit mode.
    let v = policy.evaluate(&ws, &bash("git push origin main"));
    assert_eq!(v.decision, toolgate::Decision::Ask, "{v:?}");
    assert!(
        policy.summary().contains("1 audit-only (mode: audit)"),
        "{}",
        policy.summary()
    );

    let bad = "version: 1\nmode: audit\npaths:\n  deny: [\"**/x\"]\ncommands:\n  deny: [curl]\n  default: deny\n";
    let err = compile(&[("a.yaml", BASE), ("b.yaml", bad)], false).unwrap_err();
    assert!(err.contains("b.yaml:2:7"), "{err}");
    assert!(err.contains("also sets paths, commands.default"), "{err}");
}

/// The property audit mode promises: marking any one entry of the shell
/// corpus policy `mode: audit` decides every corpus case exactly as the
/// policy without that entry does (same decision, rule and reason).
#[test]
fn marking_an_entry_audit_is_the_same_as_removing_it_for_every_corpus_case() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let policy_text = std::fs::read_to_string(root.join("policy.yaml")).unwrap();
    let corpus: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root.join("shell.yaml")).unwrap()).unwrap();
    let commands: Vec<String> = corpus["cases"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap().to_string())
        .collect();
    assert!(commands.len() > 100);
    let base: serde_yaml::Value = serde_yaml::from_str(&policy_text).unwrap();
    let ws_dir = corpus_workspace();
    let ws = Workspace::new(ws_dir.path()).unwrap();
    let mut variants = 0;
    for list in ["allow", "ask", "deny"] {
        let entries = base["commands"][list].as_sequence().unwrap().clone();
        for (i, entry) in entries.iter().enumerate() {
            let pattern = entry.as_str().unwrap();
            let mut without = base.clone();
            without["commands"][list]
                .as_sequence_mut()
                .unwrap()
                .remove(i);
            let mut audited = base.clone();
            let mut e = serde_yaml::Mapping::new();
            e.insert("pattern".into(), pattern.into());
            e.insert("id".into(), format!("commands.{list}[{pattern}]").into());
            e.insert("mode".into(), "audit".into());
            audited["commands"][list].as_sequence_mut().unwrap()[i] = serde_yaml::Value::Mapping(e);
            let a = compile(
                &[("p.yaml", &serde_yaml::to_string(&without).unwrap())],
                false,
            )
            .unwrap();
            let b = compile(
                &[("p.yaml", &serde_yaml::to_string(&audited).unwrap())],
                false,
            )
            .unwrap();
            let mut recorded = 0;
            for command in &commands {
                let (va, vb) = (
                    a.evaluate(&ws, &bash(command)),
                    b.evaluate(&ws, &bash(command)),
                );
                assert_eq!(
                    (va.decision, &va.rule, &va.reason, va.terminate),
                    (vb.decision, &vb.rule, &vb.reason, vb.terminate),
                    "`{command}` with `{pattern}` ({list}) audit-only vs removed"
                );
                recorded += vb.audit.len();
            }
            // The audit entry is seen somewhere in the corpus (a test that
            // can fail: recording nothing would pass the comparison).
            if list != "allow" {
                assert!(
                    recorded > 0,
                    "`{pattern}` ({list}) recorded nothing over the corpus"
                );
            }
            variants += 1;
        }
    }
    assert!(variants >= 20, "{variants}");
}

#[test]
fn replay_enforce_audit_shows_what_switching_audit_entries_on_would_change() {
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("a.yaml"), BASE).unwrap();
    std::fs::write(
        policies.join("b.yaml"),
        "version: 1\nmode: audit\ncommands:\n  deny: [{ pattern: curl, id: no-network }]\n",
    )
    .unwrap();
    let log = dir.path().join("log.jsonl");
    std::fs::write(
        &log,
        "{\"tool\":\"bash\",\"decision\":\"allow\",\"policy_version\":\"v\",\"arguments\":{\"command\":\"curl https://example.com\"}}\n",
    )
    .unwrap();
    let args = |extra: &[&str]| {
        let mut a = vec![
            "replay".to_string(),
            "--policies".into(),
            policies.display().to_string(),
            "--manifests".into(),
            manifests().display().to_string(),
            "--format".into(),
            "json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.push(log.display().to_string());
        a
    };
    let run = |extra: &[&str]| -> Value {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = run::run_toolgate(dir.path(), &a, b"");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(run(&[])["changed"], 0);
    let v = run(&["--enforce-audit"]);
    assert_eq!(v["tightened"], 1, "{v}");
    assert_eq!(v["changes"][0]["rule"], "no-network");
}

#[test]
fn check_counts_audit_entries() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("p.yaml"),
        format!("{BASE}  deny:\n    - {{ pattern: curl, mode: audit }}\n    - wget\n"),
    )
    .unwrap();
    let out = run::run_toolgate(
        dir.path(),
        &[
            "check",
            "--policies",
            "p.yaml",
            "--manifests",
            manifests().to_str().unwrap(),
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 audit-only (mode: audit)"), "{text}");
}
