//! `toolgate call` end to end: the real binary, real files, real processes,
//! on the embedded default policy.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Runs `toolgate call ARGS` in `dir` (which has no policies/ folder, so the
/// embedded default policy and manifests apply), with `stdin` as input.
fn call_in(dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("call")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolgate runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("toolgate finishes")
}

fn results(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn an_unknown_tool_is_an_error_result_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let o = call_in(dir.path(), &["--tool", "nope", "--args", "{}"], "");
    assert_eq!(o.status.code(), Some(1));
    let r = results(&o);
    assert_eq!(r.len(), 1);
    assert_eq!(text(&r[0]), "Tool nope not found");
    assert_eq!(r[0]["is_error"], true);
    assert_eq!(r[0]["terminate"], false);
    assert_eq!(r[0]["details"], serde_json::json!({}));
}

#[test]
fn bad_arguments_are_usage_errors_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["--tool", "read", "--args", "{not json"],
        vec!["--tool", "read", "--args", "[1]"],
        vec!["--batch", "-"],
    ] {
        let o = call_in(dir.path(), &args, "{\"calls\": 5}");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(o.stdout.is_empty(), "nothing on stdout for a usage error");
        assert!(!o.stderr.is_empty());
    }
}

#[test]
fn a_message_cut_for_length_runs_none_of_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let batch = r#"{"stop_reason": "length", "calls": [
        {"id": "a", "name": "write", "arguments": {"path": "x.txt", "content": "hi"}}]}"#;
    let o = call_in(dir.path(), &["--batch", "-"], batch);
    assert_eq!(o.status.code(), Some(1));
    let r = results(&o);
    assert!(text(&r[0]).starts_with("Tool call \"write\" was not executed"));
    assert!(!dir.path().join("x.txt").exists(), "nothing ran");
}

#[test]
fn a_batch_prints_results_in_source_order_and_events_as_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let batch = r#"[
        {"id": "one", "name": "nope", "arguments": {}},
        {"name": "read", "arguments": {"path": 5, "bogus": true, "limit": "x"}},
        {"id": "three", "name": "nope2", "arguments": {}}]"#;
    let events = dir.path().join("events.jsonl");
    let o = call_in(
        dir.path(),
        &["--batch", "-", "--events", events.to_str().unwrap()],
        batch,
    );
    let r = results(&o);
    let ids: Vec<_> = r.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["one", "call-2", "three"], "ids kept or numbered");
    let log = std::fs::read_to_string(&events).unwrap();
    let kinds: Vec<String> = log
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            format!("{}:{}", e["type"].as_str().unwrap(), e_id(&e))
        })
        .collect();
    assert_eq!(kinds[0], "tool_execution_start:one");
    assert_eq!(kinds[1], "tool_execution_end:one");
    assert_eq!(kinds.len(), 9, "{kinds:?}");
    assert_eq!(
        &kinds[6..],
        ["tool_result:one", "tool_result:call-2", "tool_result:three"]
    );
}

fn e_id(e: &Value) -> String {
    e["id"]
        .as_str()
        .or_else(|| e["result"]["id"].as_str())
        .unwrap_or("?")
        .to_string()
}
