//! toolgate as a library: decide calls with a policy, then run one through
//! the whole pipeline. Builds without the command line or the MCP server:
//!
//! ```sh
//! cargo run --example embed --no-default-features
//! ```

use serde_json::json;
use toolgate::{Decision, Executor, Policy, ToolCall, Workspace};

/// The policy: the embedded default, plus one rule of our own.
const POLICY: &str = r#"
version: 1
extends: ["builtin:default"]
rules:
  - id: no-notes-dir
    tools: [write]
    when: { arg: path, glob: "notes/**" }
    decision: deny
    reason: Notes are written by people only.
"#;

pub fn main() -> Result<(), toolgate::Error> {
    let policy = Policy::from_yaml(POLICY)?;
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("hello.txt"), "hello from the workspace\n")?;
    let ws = Workspace::new(dir.path())?;

    // Decide without running.
    let verdict = policy.evaluate(&ws, &ToolCall::new("bash", json!({"command": "rm -rf /"})));
    assert_eq!(verdict.decision(), Decision::Deny);
    println!(
        "rm -rf /            -> {:?} by {:?}",
        verdict.decision(),
        verdict.rule()
    );
    let verdict = policy.evaluate(
        &ws,
        &ToolCall::new("write", json!({"path": "notes/a.md", "content": "x"})),
    );
    assert_eq!(verdict.decision(), Decision::Deny);
    assert_eq!(verdict.rule(), Some("no-notes-dir"));
    println!(
        "write notes/a.md    -> {:?}: {}",
        verdict.decision(),
        verdict.reason()
    );
    let verdict = policy.evaluate(&ws, &ToolCall::new("read", json!({"path": "hello.txt"})));
    assert_eq!(verdict.decision(), Decision::Allow);

    // Run through the pipeline: validation, the before-hook, the tool, the
    // after-hook (redaction, limits).
    let executor = Executor::new(policy, ws);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result =
        runtime.block_on(executor.run(ToolCall::new("read", json!({"path": "hello.txt"}))));
    assert!(!result.is_error, "{result:?}");
    println!("read hello.txt      -> {}", result.text());
    let refused =
        runtime.block_on(executor.run(ToolCall::new("read", json!({"path": "../../etc/passwd"}))));
    assert!(refused.is_error);
    println!("read ../../etc/passwd -> {}", refused.text());
    Ok(())
}
