//! JSON as deep as a parser hands over (serde_json refuses more than 128
//! levels) goes through every recursive walk toolgate has — coercion,
//! validation and its error text, the policy's checks, redaction of JSON
//! values — on a thread with a quarter of a tokio worker's stack. Values
//! deeper than that never reach toolgate: every front-end parses with
//! serde_json's limit (tests/limits.rs, tests/mcp_robustness.rs).

use serde_json::{json, Value};
use toolgate::policy::limits::ARGUMENT_DEPTH_CEILING;
use toolgate::{load_policy, CompileOptions, ConfigPaths, Executor, ToolCall, Workspace};

/// 512 KiB: tokio's worker threads have 2 MiB.
const SMALL_STACK: usize = 512 << 10;

fn deep_text(depth: usize, leaf: &str) -> String {
    format!("{}{leaf}{}", "[".repeat(depth), "]".repeat(depth))
}

fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(SMALL_STACK)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no overflow, no panic");
}

#[test]
fn the_deepest_parsable_arguments_fit_in_a_small_stack() {
    on_small_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        // The depth limit at its ceiling, so every walk sees the deep value.
        std::fs::write(
            dir.path().join("policy.yaml"),
            format!(
                "version: 1\nextends: [\"builtin:default\"]\nlimits:\n  max_argument_depth: {ARGUMENT_DEPTH_CEILING}\n"
            ),
        )
        .unwrap();
        let paths = ConfigPaths {
            policies: Some(dir.path().join("policy.yaml")),
            manifests: None,
        };
        let policy = load_policy(&paths, &CompileOptions::default()).unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let policy = std::sync::Arc::new(policy);
        let executor = Executor::new(policy.clone(), ws.clone());
        let within = ARGUMENT_DEPTH_CEILING as usize - 2;
        for depth in [within, 127] {
            let edits: Value = serde_json::from_str(&deep_text(depth, "\"x\"")).unwrap();
            let args = json!({"path": "a.txt", "edits": edits});
            // The executor's own preflight: prepare, coerce, validate, limits.
            match executor.preflight(&ToolCall::new("edit", args)) {
                Err(refused) if refused.verdict.is_some() => {
                    let rule = refused
                        .verdict
                        .as_ref()
                        .and_then(|v| v.rule().map(str::to_string));
                    assert_eq!(rule.as_deref(), Some("limits.max_argument_depth"));
                    assert!(depth > within, "{}", refused.text())
                }
                Err(refused) => {
                    let text = refused.text();
                    assert!(text.contains("Validation failed"), "{text:.200}")
                }
                Ok((call, _)) => panic!("deep edits validated: {:.100}", call.arguments),
            }
            let call = ToolCall {
                id: String::new(),
                name: "bash".into(),
                arguments: json!({"command": edits}),
            };
            let verdict = policy.evaluate(&ws, &call);
            assert_eq!(verdict.decision.as_str(), "deny");
            let mut output: Value = serde_json::from_str(&deep_text(
                depth,
                "\"ghp_0123456789abcdefghij0123456789abcdef\"",
            ))
            .unwrap();
            assert!(policy.redactor().redact_json(&mut output));
        }
    });
}
