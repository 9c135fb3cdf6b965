//! Every limit and every kind of malformed input through the command-line
//! front-ends — `eval`, `call` and `hook` — on the real binary: over a limit
//! is a deny (or an error result) naming the limit, malformed input is a
//! usage error or a deny, and nothing crashes.

#[path = "common/run.rs"]
mod common_run;

use std::path::Path;
use std::process::Output;

use common_run::run_toolgate as run;
use serde_json::{json, Value};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A workspace whose `policy.yaml` is the embedded default with `limits`.
fn workspace(limits: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let policy = format!("version: 1\nextends: [\"builtin:default\"]\nlimits:\n{limits}");
    std::fs::write(dir.path().join("policy.yaml"), policy).unwrap();
    dir
}

/// `[[[…1…]]]`, `depth` arrays deep, as JSON text.
fn nested_text(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

fn eval_call(dir: &Path, call: &str) -> Output {
    run(
        dir,
        &["eval", "--policies", "policy.yaml", "--call", "-"],
        call.as_bytes(),
    )
}

fn call_batch(dir: &Path, batch: &str) -> Output {
    run(
        dir,
        &["call", "--policies", "policy.yaml", "--batch", "-"],
        batch.as_bytes(),
    )
}

/// The one verdict `eval` printed, after checking it exited 0.
fn verdict(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let mut v = lines(o);
    assert_eq!(v.len(), 1, "{}", stdout(o));
    v.remove(0)
}

fn assert_denied_by(v: &Value, rule: &str) {
    assert_eq!(v["decision"], "deny", "{v}");
    assert_eq!(v["rule"], rule, "{v}");
    assert!(v["reason"].as_str().unwrap_or("").contains(rule), "{v}");
}

#[test]
fn bad_limits_are_load_errors_with_positions() {
    let dir = workspace(
        "  max_argument_depth: 0\n  max_command_nesting: 1000\n  max_argument_bytes: lots\n",
    );
    let o = run(dir.path(), &["check", "--policies", "policy.yaml"], b"");
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("policy.yaml:4:23: error: `max_argument_depth` must be more than 0"),
        "{out}"
    );
    assert!(
        out.contains("policy.yaml:5:24: error: `max_command_nesting` must be at most 64"),
        "{out}"
    );
    assert!(
        out.contains("policy.yaml:6:23: error: `lots` is not a size"),
        "{out}"
    );
}

#[test]
fn eval_denies_each_argument_and_command_limit() {
    let dir = workspace("  max_argument_bytes: 1KB\n");
    let big = json!({"name": "write", "arguments": {"path": "a.txt", "content": "x".repeat(2000)}});
    assert_denied_by(
        &verdict(&eval_call(dir.path(), &big.to_string())),
        "limits.max_argument_bytes",
    );
    let deep = format!(
        r#"{{"name": "read", "arguments": {{"path": "a", "x": {}}}}}"#,
        nested_text(50)
    );
    assert_denied_by(
        &verdict(&eval_call(dir.path(), &deep)),
        "limits.max_argument_depth",
    );
    let dir = workspace("  max_output_lines: 2000\n");
    let long =
        json!({"name": "bash", "arguments": {"command": format!("echo {}", "y".repeat(70_000))}});
    assert_denied_by(
        &verdict(&eval_call(dir.path(), &long.to_string())),
        "limits.max_command_bytes",
    );
    let nested = format!("{}ls{}", "( ".repeat(20), " )".repeat(20));
    let deep_cmd = json!({"name": "bash", "arguments": {"command": nested}});
    assert_denied_by(
        &verdict(&eval_call(dir.path(), &deep_cmd.to_string())),
        "limits.max_command_nesting",
    );
    let slow = json!({"name": "bash", "arguments": {"command": "$[".repeat(30_000)}});
    assert_denied_by(
        &verdict(&eval_call(dir.path(), &slow.to_string())),
        "commands.too_complex",
    );
    // Over a limit is a deny even where the policy would allow what it
    // cannot analyze.
    let lax = tempfile::tempdir().unwrap();
    std::fs::write(
        lax.path().join("policy.yaml"),
        "version: 1\ncommands:\n  unparsed: allow\n  default: allow\n",
    )
    .unwrap();
    assert_denied_by(
        &verdict(&eval_call(lax.path(), &long.to_string())),
        "limits.max_command_bytes",
    );
}

#[test]
fn eval_refuses_malformed_input_with_a_usage_error() {
    let dir = workspace("  max_output_lines: 2000\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"\x01\x02 not json at all".to_vec()),
        ("invalid UTF-8", b"{\"name\": \"read\xff\"}".to_vec()),
        (
            "wrong type of name",
            br#"{"name": 5, "arguments": {}}"#.to_vec(),
        ),
        (
            "arguments not an object",
            br#"{"name": "read", "arguments": [1]}"#.to_vec(),
        ),
        ("a JSON string", br#""read""#.to_vec()),
        ("empty", Vec::new()),
        (
            "nested past the parser's limit",
            format!(
                r#"{{"name": "read", "arguments": {{"x": {}}}}}"#,
                nested_text(100_000)
            )
            .into_bytes(),
        ),
    ];
    for (what, input) in cases {
        let o = run(
            dir.path(),
            &["eval", "--policies", "policy.yaml", "--call", "-"],
            &input,
        );
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{what}: nothing on stdout");
        assert!(
            stderr(&o).starts_with("toolgate: "),
            "{what}: {}",
            stderr(&o)
        );
    }
    // One bad line in a JSONL file: nothing is decided.
    let calls = "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n}{\n";
    let o = run(
        dir.path(),
        &["eval", "--policies", "policy.yaml", "--calls", "-"],
        calls.as_bytes(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("-:2:"), "{}", stderr(&o));
}

#[test]
fn call_turns_each_limit_into_an_error_result() {
    let dir = workspace("  max_argument_bytes: 1KB\n  max_batch_calls: 3\n");
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let batch = json!([
        {"id": "big", "name": "write", "arguments": {"path": "b.txt", "content": "x".repeat(2000)}},
        {"id": "long", "name": "bash", "arguments": {"command": format!("echo {}", "y".repeat(900))}},
        {"id": "ok", "name": "read", "arguments": {"path": "a.txt"}},
    ]);
    let o = call_batch(dir.path(), &batch.to_string());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = lines(&o);
    assert_eq!(r.len(), 3);
    assert!(
        r[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("limits.max_argument_bytes"),
        "{}",
        r[0]
    );
    assert!(!dir.path().join("b.txt").exists(), "the write did not run");
    assert_eq!(r[2]["is_error"], false, "{}", r[2]);

    // Deep arguments: an error result, the call not run.
    let deep = format!(
        r#"[{{"id": "d", "name": "write", "arguments": {{"path": "c.txt", "content": "x", "x": {}}}}}]"#,
        nested_text(60)
    );
    let r = lines(&call_batch(dir.path(), &deep));
    assert!(r[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("limits.max_argument_depth"));
    assert!(!dir.path().join("c.txt").exists());

    // Four calls where three are allowed: none runs.
    let calls: Vec<Value> = (0..4)
        .map(|i| json!({"id": i.to_string(), "name": "write", "arguments": {"path": format!("w{i}.txt"), "content": "x"}}))
        .collect();
    let o = call_batch(dir.path(), &Value::Array(calls).to_string());
    assert_eq!(o.status.code(), Some(1));
    let r = lines(&o);
    assert_eq!(r.len(), 4);
    for result in &r {
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("4 tool calls, over the limit of 3"), "{text}");
    }
    assert!(
        !dir.path().join("w0.txt").exists(),
        "no call of the batch ran"
    );

    // A long command: the policy denies it before bash sees it.
    let dir = workspace("  max_command_bytes: 100\n");
    let o = call_batch(
        dir.path(),
        &json!([{"id": "c", "name": "bash", "arguments": {"command": format!("touch z; echo {}", "y".repeat(200))}}]).to_string(),
    );
    let r = lines(&o);
    assert!(r[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("limits.max_command_bytes"));
    assert!(!dir.path().join("z").exists());
}

#[test]
fn call_refuses_malformed_batches_with_a_usage_error() {
    let dir = workspace("  max_output_lines: 2000\n");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"\x00\x01garbage".to_vec()),
        ("invalid UTF-8", b"[{\"name\": \"read\xfe\"}]".to_vec()),
        ("wrong type of calls", br#"{"calls": "read"}"#.to_vec()),
        ("a call without a name", br#"[{"arguments": {}}]"#.to_vec()),
        (
            "nested past the parser's limit",
            format!(
                r#"[{{"name": "read", "arguments": {{"x": {}}}}}]"#,
                nested_text(100_000)
            )
            .into_bytes(),
        ),
    ];
    for (what, input) in cases {
        let o = run(
            dir.path(),
            &["call", "--policies", "policy.yaml", "--batch", "-"],
            &input,
        );
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{what}: nothing on stdout");
    }
}

/// Runs `toolgate hook claude` on `input` in a fresh workspace.
fn hook(input: &[u8], limits: &str) -> Output {
    let dir = workspace(limits);
    run(
        dir.path(),
        &[
            "hook",
            "claude",
            "--policies",
            "policy.yaml",
            "--workspace",
            ".",
        ],
        input,
    )
}

fn pre_tool_use(tool: &str, tool_input: &str) -> Vec<u8> {
    format!(
        r#"{{"hook_event_name": "PreToolUse", "tool_name": "{tool}", "tool_input": {tool_input}, "cwd": null}}"#
    )
    .into_bytes()
}

fn hook_denial(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("one JSON answer");
    let out = &v["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{v}");
    out["permissionDecisionReason"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn hook_denies_each_argument_and_command_limit() {
    let deep = format!(r#"{{"file_path": {}}}"#, nested_text(50));
    let reason = hook_denial(&hook(
        &pre_tool_use("Read", &deep),
        "  max_output_lines: 2000\n",
    ));
    assert!(reason.contains("limits.max_argument_depth"), "{reason}");

    let big = json!({"file_path": "a.txt", "content": "x".repeat(3000)}).to_string();
    let reason = hook_denial(&hook(
        &pre_tool_use("Write", &big),
        "  max_argument_bytes: 2KB\n",
    ));
    assert!(reason.contains("limits.max_argument_bytes"), "{reason}");

    let long = json!({"command": format!("echo {}", "y".repeat(70_000))}).to_string();
    let reason = hook_denial(&hook(
        &pre_tool_use("Bash", &long),
        "  max_output_lines: 2000\n",
    ));
    assert!(reason.contains("limits.max_command_bytes"), "{reason}");

    let nested = json!({"command": format!("{}ls", "sudo ".repeat(30))}).to_string();
    let reason = hook_denial(&hook(
        &pre_tool_use("Bash", &nested),
        "  max_output_lines: 2000\n",
    ));
    assert!(reason.contains("limits.max_command_nesting"), "{reason}");
}

#[test]
fn hook_denies_malformed_input_with_exit_2() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"\x00\x01garbage".to_vec()),
        (
            "invalid UTF-8",
            b"{\"hook_event_name\": \"PreToolUse\xff\"}".to_vec(),
        ),
        (
            "nested past the parser's limit",
            pre_tool_use("Read", &format!(r#"{{"x": {}}}"#, nested_text(100_000))),
        ),
        ("a JSON array", b"[1, 2]".to_vec()),
    ];
    for (what, input) in cases {
        let o = hook(&input, "  max_output_lines: 2000\n");
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{what}");
        assert!(
            stderr(&o).contains("the call is denied"),
            "{what}: {}",
            stderr(&o)
        );
    }
    // A known event with a field of the wrong type: the CLI's own deny.
    let reason = hook_denial(&hook(
        br#"{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": [1]}"#,
        "  max_output_lines: 2000\n",
    ));
    assert!(reason.contains("must be a JSON object"), "{reason}");
}
