//! `toolgate call` end to end: the real binary, real files, real processes,
//! on the embedded default policy.

#[path = "common/run.rs"]
mod run;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// Runs `toolgate call ARGS` in `dir` (which has no policies/ folder, so the
/// embedded default policy and manifests apply), with `stdin` as input.
fn call_in(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let args: Vec<&str> = std::iter::once("call")
        .chain(args.iter().copied())
        .collect();
    run::run_toolgate(dir, &args, stdin.as_bytes())
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

/// A permissive policy for tests that need a shell: every command allowed.
fn permissive(dir: &Path) {
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    std::fs::write(
        dir.join("policies/open.yaml"),
        "version: 1\ntools: { active: [bash, read, write, edit] }\npaths: { roots: [\".\"] }\n\
         commands: { default: allow, unparsed: allow }\nredact: { defaults: true }\n",
    )
    .unwrap();
}

#[test]
fn two_edits_of_one_file_in_one_batch_both_land() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "foo\nbar\nbaz\n").unwrap();
    let batch = r#"[
        {"id": "1", "name": "edit", "arguments": {"path": "a.txt", "oldText": "foo\n", "newText": "foo bar\n"}},
        {"id": "2", "name": "edit", "arguments": {"path": "./a.txt", "edits": "[{\"oldText\": \"baz\", \"newText\": \"BAZ\"}]"}}]"#;
    let o = call_in(dir.path(), &["--batch", "-"], batch);
    let r = results(&o);
    assert_eq!(o.status.code(), Some(0), "{r:?}");
    assert_eq!(text(&r[0]), "Successfully replaced 1 block(s) in a.txt.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "foo bar\nbar\nBAZ\n"
    );
}

#[test]
fn the_default_policy_guards_real_calls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".env"), "TOKEN=1").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "n").unwrap();
    let batch = r#"[
        {"id": "env", "name": "read", "arguments": {"path": ".env"}},
        {"id": "rm", "name": "bash", "arguments": {"command": "rm notes.txt"}},
        {"id": "rf", "name": "bash", "arguments": {"command": "ls && rm -fr ."}}]"#;
    let o = call_in(dir.path(), &["--batch", "-"], batch);
    let r = results(&o);
    assert!(r.iter().all(|r| r["is_error"] == true), "{r:?}");
    assert!(text(&r[0]).contains(".env"), "{}", text(&r[0]));
    assert!(
        text(&r[1]).starts_with("Approval required:"),
        "{}",
        text(&r[1])
    );
    assert!(
        text(&r[2]).contains("no-recursive-delete"),
        "{}",
        text(&r[2])
    );
    assert!(dir.path().join("notes.txt").exists(), "nothing was deleted");
}

#[test]
fn secrets_in_tool_output_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    // Not AWS's documented `…EXAMPLE` key: redaction allowlists that one, as gitleaks does.
    let key = concat!("AKIA", "IOSFODNN7TESTKEY");
    std::fs::write(dir.path().join("config.txt"), format!("aws_key = {key}\n")).unwrap();
    let o = call_in(
        dir.path(),
        &["--tool", "read", "--args", r#"{"path": "config.txt"}"#],
        "",
    );
    let r = results(&o);
    assert!(!text(&r[0]).contains(key), "{}", text(&r[0]));
    assert!(text(&r[0]).contains("[REDACTED:"), "{}", text(&r[0]));
}

#[test]
fn ctrl_c_aborts_the_batch_and_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    permissive(dir.path());
    let events = dir.path().join("events.jsonl");
    let child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["call", "--tool", "bash", "--events"])
        .arg(&events)
        .args([
            "--args",
            r#"{"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 300"}"#,
        ])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("bg.pid");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let background: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGINT, as a terminal's Ctrl-C sends it.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let r = results(&o);
    assert!(text(&r[0]).ends_with("Command aborted"), "{}", text(&r[0]));
    assert!(text(&r[0]).contains("started"), "{}", text(&r[0]));
    // The background sleep was in the command's process group: gone too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while process_alive(background) {
        assert!(
            std::time::Instant::now() < deadline,
            "background process {background} survived the abort"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = std::fs::read_to_string(&events).unwrap();
    assert!(
        log.lines().any(|l| l.contains("tool_execution_update")),
        "{log}"
    );
}

/// Alive and not a zombie waiting to be reaped.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
