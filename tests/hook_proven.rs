//! Proven policies (`config::proven`): a hook process that finds a stamp for
//! the exact policy bytes skips their examples and compiles rule regexes on
//! first use — and decides exactly as a full check does; a policy whose
//! examples fail is denied whatever stamps exist that toolgate did not make
//! for those bytes with this build.
//!
//! Real processes: the release-or-debug `toolgate` binary as Claude Code's
//! PreToolUse hook, with the team-policy bench fixture.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use toolgate::config::proven;
use toolgate::{load_policy, CompileOptions, ConfigPaths, ToolCall, Workspace};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn team_policy() -> PathBuf {
    root().join("benches/fixtures/team-policy/policies")
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// Runs `toolgate hook claude` with `payload` on stdin; returns the answer's
/// `permissionDecision` and reason.
fn hook(policies: &Path, state: &Path, ws: &Path, payload: &Value) -> (String, String) {
    let mut child = Command::new(bin())
        .args(["hook", "claude", "--policies"])
        .arg(policies)
        .arg("--manifests")
        .arg(root().join("tool-manifests"))
        .env("TOOLGATE_STATE_DIR", state)
        .current_dir(ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = &v["hookSpecificOutput"];
    (
        h["permissionDecision"].as_str().unwrap_or("").to_string(),
        h["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

fn bash(ws: &Path, command: &str) -> Value {
    json!({"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": command}, "tool_use_id": "t"})
}

fn write(ws: &Path, path: &str, content: &str) -> Value {
    json!({"session_id": "s", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Write",
           "tool_input": {"file_path": ws.join(path), "content": content}, "tool_use_id": "t"})
}

/// Calls every rule of the team policy decides, and some none does.
fn cases(ws: &Path) -> Vec<(Value, &'static str)> {
    vec![
        (bash(ws, "ls -la"), "allow"),
        (bash(ws, "git reset --hard"), "deny"),
        (bash(ws, "psql -h db.prod.internal -U app"), "deny"),
        (bash(ws, "grep -r production docs"), "allow"),
        (bash(ws, "deploy --api_key=abcd1234efgh"), "deny"),
        (bash(ws, "kubectl get pods --context prod"), "ask"),
        (bash(ws, "git push --force"), "deny"),
        (
            write(ws, "src/k.rs", "-----BEGIN RSA PRIVATE KEY-----\nMIIE"),
            "deny",
        ),
        (
            write(ws, "config.py", "KEY = 'AKIAIOSFODNN7EXAMPLE'"),
            "deny",
        ),
        (write(ws, "src/ok.rs", "fn main() {}"), "allow"),
    ]
}

fn stamps(state: &Path) -> usize {
    std::fs::read_dir(state.join("proven")).map_or(0, |d| d.count())
}

/// A copy of the team policy with one example that fails: the private-key
/// rule's `match` example no longer matches.
fn broken_policy(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(team_policy().join("team.yaml")).unwrap();
    let broken = text.replace(
        "content: \"-----BEGIN RSA PRIVATE KEY-----\\nMIIE\"",
        "content: \"-----BEGIN RSA PUBLIC KEY-----\"",
    );
    assert_ne!(
        text, broken,
        "the fixture's example moved; update this test"
    );
    let p = dir.join("policies");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("team.yaml"), broken).unwrap();
    p
}

fn loaded(policies: &Path) -> toolgate::config::Loaded {
    toolgate::config::load(&ConfigPaths {
        policies: Some(policies.to_path_buf()),
        manifests: Some(root().join("tool-manifests")),
    })
    .unwrap()
}

/// The stamp name toolgate would use for `policies` under `build` and `key`.
fn stamp_name(policies: &Path, build: &str, key: &[u8; 32]) -> String {
    proven::stamp_name(key, &proven::digest_for(build, &loaded(policies)))
}

fn assert_denied_for_example(policies: &Path, state: &Path, ws: &Path) {
    let (decision, reason) = hook(policies, state, ws, &bash(ws, "ls -la"));
    assert_eq!(decision, "deny", "{reason}");
    assert!(
        reason.contains("should match `when`, but does not"),
        "the example failure is named: {reason}"
    );
}

#[test]
fn a_stamp_is_made_once_and_proven_starts_decide_exactly_as_full_checks() {
    let ws = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let state = state.path().join("state");
    let mut first = Vec::new();
    for (i, (payload, want)) in cases(ws.path()).iter().enumerate() {
        let got = hook(&team_policy(), &state, ws.path(), payload);
        assert_eq!(got.0, *want, "{payload}: {}", got.1);
        if i == 0 {
            assert_eq!(stamps(&state), 1, "the first passing start stamps");
        }
        first.push(got);
    }
    // Now every start finds the stamp: same decisions and reasons.
    for ((payload, _), want) in cases(ws.path()).iter().zip(&first) {
        assert_eq!(&hook(&team_policy(), &state, ws.path(), payload), want);
    }
    assert_eq!(stamps(&state), 1, "one stamp for one policy text");
}

#[test]
fn a_failing_policy_is_denied_even_with_a_pass_of_another_build_or_other_bytes() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // The passing policy is stamped first.
    hook(&team_policy(), &state, ws.path(), &bash(ws.path(), "ls"));
    assert_eq!(stamps(&state), 1);
    let broken = broken_policy(dir.path());
    let key = proven::key(&state, None).unwrap();
    // A pass of these exact bytes by another build of toolgate.
    let other = stamp_name(&broken, "toolgate 0.0.1 1:2:3:4.5", &key);
    std::fs::write(state.join("proven").join(other), "").unwrap();
    assert_denied_for_example(&broken, &state, ws.path());
    assert_denied_for_example(&broken, &state, ws.path());
    // Failing starts never stamp.
    assert_eq!(stamps(&state), 2);
}

#[test]
fn stamps_cannot_be_forged_without_the_key_nor_from_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let broken = broken_policy(dir.path());
    let build = proven::build_id_of(&bin()).unwrap();
    let key = proven::key(&state, None).unwrap();
    // A name an agent could compute without the key: the digest itself, or
    // a MAC under a key of its own.
    let digest = proven::digest_for(&build, &loaded(&broken));
    let plain: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let forged = stamp_name(&broken, &build, &[7u8; 32]);
    for name in [&plain, &forged] {
        std::fs::write(state.join("proven").join(name), "").unwrap();
    }
    assert_denied_for_example(&broken, &state, ws.path());
    // A state directory inside the workspace (key and all written by the
    // agent) is not used at all.
    let inside = ws.path().join(".toolgate-state");
    let agent_key = proven::key(&inside, None).unwrap();
    let name = stamp_name(&broken, &build, &agent_key);
    std::fs::write(inside.join("proven").join(name), "").unwrap();
    assert_denied_for_example(&broken, &inside, ws.path());
    // The real name, made with the real key, is what a stamp is: with it the
    // broken bytes would be trusted — which is why the key must stay where
    // the agent cannot read it (SECURITY.md).
    let real = stamp_name(&broken, &build, &key);
    std::fs::write(state.join("proven").join(real), "").unwrap();
    let (decision, _) = hook(&broken, &state, ws.path(), &bash(ws.path(), "ls -la"));
    assert_eq!(
        decision, "allow",
        "the stamp is consulted: this is the path the other cases refuse"
    );
}

#[test]
fn rules_compiled_on_first_use_decide_as_rules_compiled_at_load() {
    let paths = ConfigPaths {
        policies: Some(team_policy()),
        manifests: None,
    };
    let full = load_policy(&paths, &CompileOptions::default()).unwrap();
    // A fresh lazy policy per call, as in a hook process: each call meets
    // regexes not yet compiled, so each goes through the prefilter.
    let lazy = || {
        load_policy(
            &paths,
            &CompileOptions {
                proven: true,
                ..CompileOptions::default()
            },
        )
        .unwrap()
    };
    let ws = tempfile::tempdir().unwrap();
    let w = Workspace::new(ws.path()).unwrap();
    let commands = [
        "ls -la",
        "git reset --hard",
        "psql -h db.prod.internal -U app",
        "mysql --host=production-replica",
        "echo prod",
        "PASSWORD=hunter2hunter2 ./run",
        "deploy --api_key=$API_KEY",
        "kubectl get pods --context prod",
        "kubectl get pods --context staging",
        "cargo test && psql -h production",
        // The prefilter's hard cases: a rule whose regex matches must never
        // be skipped (any ASCII case, Unicode case folding under `(?i)`).
        "PSQL -h PROD-db",
        "mysql --host=PRODUCTION",
        "deploy --ſecret=abcdefgh12",
        "deploy --TOKEN=abcdefgh12",
        "mongosh --host prod.internal",
        "kubectl get pods --context=production",
        "\u{212A}ubectl get pods --context prod",
    ];
    let mut calls: Vec<ToolCall> = commands
        .iter()
        .map(|c| ToolCall::new("bash", json!({ "command": c })))
        .collect();
    for content in [
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "AKIAIOSFODNN7EXAMPLE",
        "fn main() {}",
    ] {
        calls.push(ToolCall::new(
            "write",
            json!({ "path": "src/a.rs", "content": content }),
        ));
    }
    let mut denied = 0;
    for call in &calls {
        let (a, b) = (full.evaluate(&w, call), lazy().evaluate(&w, call));
        assert_eq!(a, b, "{call:?}");
        denied += usize::from(a.decision.as_str() == "deny");
    }
    assert!(denied >= 13, "the cases reach the rules: {denied} denied");
    assert!(!toolgate::policy::rules::compile_failed());
}
