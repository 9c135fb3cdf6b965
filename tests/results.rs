//! After-rules on results (`results:`) end to end: real tool runs through
//! `toolgate call`, and the batch termination vote through the library.

#[path = "common/run.rs"]
mod run;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

fn policy() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results/policy.yaml")
}

/// Runs one call with the results policy in `dir`; its one result.
fn call(dir: &Path, tool: &str, args: Value) -> (Output, Value) {
    let policy = policy();
    let args = args.to_string();
    let o = run::run_toolgate(
        dir,
        &[
            "call",
            "--policies",
            policy.to_str().unwrap(),
            "--tool",
            tool,
            "--args",
            &args,
        ],
        b"",
    );
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let result = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout} {}", String::from_utf8_lossy(&o.stderr)));
    (o, result)
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_failing_test_summary_terminates_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("run-tests.sh"),
        "echo 'running 3 tests'\necho 'test result: FAILED. 1 passed; 2 failed'\nexit 101\n",
    )
    .unwrap();
    let (o, r) = call(dir.path(), "bash", json!({"command": "sh run-tests.sh"}));
    assert_eq!(o.status.code(), Some(1), "the command failed");
    assert_eq!(r["terminate"], true, "{r}");
    assert_eq!(r["is_error"], true);
    let t = texts(&r);
    assert!(t[0].contains("test result: FAILED"), "{t:?}");
    assert!(t[0].ends_with("Command exited with code 101"), "{t:?}");
    assert_eq!(
        t.last().unwrap(),
        "Tests failed: stop and report which ones."
    );
    assert_eq!(
        r["details"]["resultRule"],
        json!({"id": "stop-on-failed-tests", "actions": ["terminate", "note"]})
    );

    // The same script passing: no rule, no note, no record.
    std::fs::write(
        dir.path().join("run-tests.sh"),
        "echo 'test result: ok. 3 passed'\n",
    )
    .unwrap();
    let (_, r) = call(dir.path(), "bash", json!({"command": "sh run-tests.sh"}));
    assert_eq!(r["terminate"], false);
    assert_eq!(texts(&r), ["test result: ok. 3 passed\n"]);
    assert_eq!(r["details"], json!({}));
}

#[test]
fn a_large_listing_is_replaced_and_made_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..100 {
        std::fs::write(
            dir.path().join(format!("file-with-a-long-name-{i:03}.txt")),
            "",
        )
        .unwrap();
    }
    let (o, r) = call(dir.path(), "ls", json!({"path": "."}));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(r["is_error"], true);
    assert_eq!(
        texts(&r),
        ["The listing is too large. List a narrower path or use a pattern."]
    );
    let record = &r["details"]["resultRule"];
    assert_eq!(record["id"], "listing-too-large");
    assert_eq!(record["replaced"], true);
    assert!(record["originalBytes"].as_u64().unwrap() > 2048, "{record}");

    // A small listing is left alone.
    let small = tempfile::tempdir().unwrap();
    std::fs::write(small.path().join("a.txt"), "").unwrap();
    let (o, r) = call(small.path(), "ls", json!({"path": "."}));
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(texts(&r), ["a.txt"]);
}

#[test]
fn exit_codes_match_only_the_listed_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "echo bad input; exit 3"}),
    );
    assert_eq!(r["is_error"], true, "a non-zero exit stays an error");
    assert_eq!(
        texts(&r),
        [
            "bad input\n\n\nCommand exited with code 3",
            "Exit 3 or 4 means the input was bad."
        ]
    );
    assert_eq!(r["details"]["resultRule"]["id"], "exit-three");
    for command in ["exit 5", "echo fine"] {
        let (_, r) = call(dir.path(), "bash", json!({ "command": command }));
        assert!(r["details"].get("resultRule").is_none(), "{command}: {r}");
    }
    // Printing the status line is not exiting with it.
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "echo 'Command exited with code 3'"}),
    );
    assert!(r["details"].get("resultRule").is_none(), "{r}");
}

#[test]
fn redact_all_hides_the_content_and_the_details() {
    let dir = tempfile::tempdir().unwrap();
    let (o, r) = call(
        dir.path(),
        "bash",
        json!({"command": "printenv HOME; seq 1 5000"}),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(texts(&r), ["[REDACTED:hide-env]"]);
    assert_eq!(r["is_error"], false);
    // The output was truncated to a file whose path would lead to it: gone.
    assert_eq!(
        r["details"],
        json!({"resultRule": {"id": "hide-env", "actions": ["redact_all"], "replaced": true,
            "originalBytes": r["details"]["resultRule"]["originalBytes"]}})
    );
    assert!(r["details"].get("fullOutputPath").is_none());
}

#[test]
fn contains_and_is_error_and_lines_over() {
    let dir = tempfile::tempdir().unwrap();
    let (o, r) = call(
        dir.path(),
        "bash",
        json!({"command": "printf 'Password: '"}),
    );
    assert_eq!(o.status.code(), Some(1), "the rule made it an error");
    assert_eq!(r["is_error"], true);
    assert_eq!(r["details"]["resultRule"]["id"], "password-prompt");

    let (_, r) = call(dir.path(), "bash", json!({"command": "seq 1 50"}));
    assert_eq!(r["details"]["resultRule"]["id"], "long-output");
    assert_eq!(
        texts(&r).last().unwrap(),
        "That is a lot of output; filter it next time."
    );
    // `is_error: false` in the condition: the same output from a failing
    // command does not match.
    let (_, r) = call(dir.path(), "bash", json!({"command": "seq 1 50; exit 1"}));
    assert!(r["details"].get("resultRule").is_none(), "{r}");
    let (_, r) = call(dir.path(), "bash", json!({"command": "seq 1 40"}));
    assert!(r["details"].get("resultRule").is_none(), "{r}");
}

#[test]
fn the_batch_ends_only_when_every_result_asks_to() {
    let dir = tempfile::tempdir().unwrap();
    let policy = toolgate::Policy::load(
        policy(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tool-manifests"),
    )
    .unwrap();
    let ws = toolgate::Workspace::new(dir.path()).unwrap();
    let executor = toolgate::Executor::try_new(policy, ws).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let batch = |commands: &[&str]| {
        let calls = commands
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut call = toolgate::ToolCall::new("bash", json!({ "command": c }));
                call.id = format!("c{i}");
                call
            })
            .collect();
        runtime.block_on(executor.run_batch(calls, Default::default()))
    };
    let one = batch(&["echo ALL DONE", "echo hello"]);
    assert_eq!(
        one.results.iter().map(|r| r.terminate).collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(one.results[0].result_rule.as_deref(), Some("done-marker"));
    assert!(!one.terminate, "one ordinary result keeps the batch going");
    let all = batch(&["echo ALL DONE", "echo ALL DONE too"]);
    assert!(all.terminate, "every result asked to end the batch");
}
