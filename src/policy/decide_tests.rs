//! Tests of gathering a call's facts.

use super::*;
use crate::{load_policy, CompileOptions, ConfigPaths};

fn setup() -> (tempfile::TempDir, Workspace, Policy) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let embedded = ConfigPaths {
        policies: None,
        manifests: None,
    };
    let policy = load_policy(&embedded, &CompileOptions::default()).unwrap();
    (dir, ws, policy)
}

fn call(tool: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: tool.to_string(),
        arguments,
    }
}

/// The roots are resolved for calls with path or command facts,
/// and those calls are still held to them.
#[test]
fn roots_are_resolved_where_paths_are_checked() {
    let (_dir, ws, policy) = setup();
    for c in [
        call("read", serde_json::json!({"path": "../outside.txt"})),
        call("bash", serde_json::json!({"command": "cat ../outside.txt"})),
    ] {
        let facts = gather(&policy, &ws, &c);
        assert!(!facts.roots.is_empty(), "{}: roots not resolved", c.name);
        let v = policy.evaluate(&ws, &c);
        assert_eq!(v.decision, Decision::Deny, "{}: {v:?}", c.name);
        assert_eq!(v.rule.as_deref(), Some("paths.roots"), "{}: {v:?}", c.name);
    }
    let inside = call("read", serde_json::json!({"path": "a.txt"}));
    assert_eq!(policy.evaluate(&ws, &inside).decision, Decision::Allow);
}
