//! The built-in `bash` tool: Pi's texts, truncation with the full-output
//! file, progress, and that timeouts, cancellation and a dropped call kill
//! the whole process group.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolgate::tools::{builtin, Content, Progress, ToolContext, ToolError, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

fn context(dir: &std::path::Path) -> ToolContext {
    let policy = load_policy(&ConfigPaths::default(), &CompileOptions::default()).unwrap();
    toolgate::executor::standalone_context(dir, &policy).unwrap()
}

async fn bash(ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = builtin("bash").unwrap();
    tool.execute(ctx, args).await
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [Content::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

/// Processes of group `pgid` that are still running (zombies do not count:
/// they are dead, waiting for a parent that may never reap them here).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut live = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return live;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parens.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.len() > 2 && fields[2] == pgid.to_string() && !matches!(fields[0], "Z" | "X") {
            live.push(pid);
        }
    }
    live
}

async fn assert_group_gone(pgid: i32) {
    let start = Instant::now();
    loop {
        let live = live_members(pgid);
        if live.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "process group {pgid} still has live members {live:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The leader's pid (= the group id) from the first output line.
fn leader_pid(message: &str) -> i32 {
    message.lines().next().unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn output_and_a_clean_exit() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(&ctx, json!({"command": "echo hello"})).await.unwrap();
    assert_eq!(text(&out), "hello\n");
}

#[tokio::test]
async fn stderr_is_merged_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(
        &ctx,
        json!({"command": "echo a; echo b >&2; echo c; echo d >&2"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "a\nb\nc\nd\n");
}

#[tokio::test]
async fn no_output_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(&ctx, json!({"command": "true"})).await.unwrap();
    assert_eq!(text(&out), "(no output)");
    let err = bash(&ctx, json!({"command": "exit 2"})).await.unwrap_err();
    assert_eq!(err.message, "(no output)\n\nCommand exited with code 2");
}

#[tokio::test]
async fn a_failed_exit_is_an_error_with_the_output_and_code() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let err = bash(&ctx, json!({"command": "echo out; echo err >&2; exit 3"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "out\nerr\n\n\nCommand exited with code 3");
}

#[tokio::test]
async fn runs_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(&ctx, json!({"command": "pwd"})).await.unwrap();
    let expected = format!("{}\n", dir.path().canonicalize().unwrap().display());
    assert_eq!(text(&out), expected);
}

#[tokio::test]
async fn invalid_utf8_and_nul_bytes_do_not_break_anything() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(&ctx, json!({"command": r"printf '\xff\xfe\000ok'"}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "\u{fffd}\u{fffd}\u{fffd}ok\n\n[The output is not all text: 1 NUL byte and \
         2 byte sequences that are not UTF-8 are shown as \u{fffd}.]"
    );
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_the_full_output_file_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let out = bash(&ctx, json!({"command": "seq 1 4000"})).await.unwrap();
    let file = out.details["fullOutputPath"].as_str().unwrap().to_string();
    let expected_tail: String = (2001..=4000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        text(&out),
        format!("{expected_tail}\n\n[Showing lines 2001-4000 of 4000. Full output: {file}]")
    );
    let full = std::fs::read_to_string(&file).unwrap();
    let expected_full: String = (1..=4000).map(|i| format!("{i}\n")).collect();
    assert_eq!(full, expected_full);
    assert_eq!(out.details["truncation"]["truncatedBy"], "lines");
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn the_byte_limit_notices_match_pi() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    // 500 lines of 209 characters: 243 fit in 50 KB.
    let out = bash(
        &ctx,
        json!({"command": "for i in $(seq 1 500); do printf '%0209d\\n' $i; done"}),
    )
    .await
    .unwrap();
    let file = out.details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(
        text(&out).ends_with(&format!(
            "\n\n[Showing lines 258-500 of 500 (50.0KB limit). Full output: {file}]"
        )),
        "{}",
        &text(&out)[text(&out).len() - 200..]
    );
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 500 * 210);
    std::fs::remove_file(file).unwrap();

    // One 60000-byte line: only its end is shown.
    let out = bash(
        &ctx,
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' x"}),
    )
    .await
    .unwrap();
    let file = out.details["fullOutputPath"].as_str().unwrap().to_string();
    assert_eq!(
        text(&out),
        format!(
            "{}\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {file}]",
            "x".repeat(51200)
        )
    );
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn the_policy_limits_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = context(dir.path());
    ctx.limits.max_output_lines = 3;
    let err = bash(&ctx, json!({"command": "seq 1 10; exit 1"}))
        .await
        .unwrap_err();
    let file = err.details["fullOutputPath"].as_str().unwrap().to_string();
    assert_eq!(
        err.message,
        format!("8\n9\n10\n\n[Showing lines 8-10 of 10. Full output: {file}]\n\nCommand exited with code 1")
    );
    std::fs::remove_file(file).unwrap();
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let started = Instant::now();
    let err = bash(
        &ctx,
        json!({"command": "echo $$; sleep 1000 & sleep 1000; wait", "timeout": 0.5}),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let pgid = leader_pid(&err.message);
    assert_eq!(
        err.message,
        format!("{pgid}\n\n\nCommand timed out after 0.5 seconds")
    );
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn the_policy_timeout_caps_the_argument_and_applies_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = context(dir.path());
    ctx.limits.timeout = Duration::from_millis(300);
    let err = bash(&ctx, json!({"command": "sleep 1000"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "Command timed out after 0.3 seconds");
    let err = bash(&ctx, json!({"command": "sleep 1000", "timeout": 60}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "Command timed out after 0.3 seconds");
    let err = bash(&ctx, json!({"command": "true", "timeout": 0}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Invalid timeout: must be a finite number of seconds"
    );
}

#[tokio::test]
async fn cancellation_aborts_and_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        cancel.cancel();
    });
    let err = bash(
        &ctx,
        json!({"command": "echo $$; (sleep 1000; echo never) & sleep 1000 | cat; wait"}),
    )
    .await
    .unwrap_err();
    let pgid = leader_pid(&err.message);
    assert_eq!(err.message, format!("{pgid}\n\n\nCommand aborted"));
    assert_group_gone(pgid).await;

    // Already cancelled: nothing runs.
    let err = bash(&ctx, json!({"command": "touch ran"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, "Command aborted");
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let call = bash(
        &ctx,
        json!({"command": "echo $$ > pid; sleep 1000 & sleep 1000; wait"}),
    );
    assert!(tokio::time::timeout(Duration::from_millis(500), call)
        .await
        .is_err());
    let pgid: i32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_group_gone(pgid).await;
}

#[tokio::test]
async fn progress_carries_the_output_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = context(dir.path());
    let updates: Arc<Mutex<Vec<ToolOutput>>> = Arc::default();
    let sink = updates.clone();
    ctx.progress = Progress::new(move |p| sink.lock().unwrap().push(p));
    let out = bash(&ctx, json!({"command": "echo one; sleep 0.4; echo two"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "one\ntwo\n");
    let updates = updates.lock().unwrap();
    assert!(
        updates[0].content.is_empty(),
        "Pi starts with an empty update"
    );
    let texts: Vec<String> = updates[1..].iter().map(|u| text(u).to_string()).collect();
    assert_eq!(texts.first().map(String::as_str), Some("one\n"));
    assert_eq!(texts.last().map(String::as_str), Some("one\ntwo\n"));
}

#[tokio::test]
async fn a_background_job_does_not_hold_the_result() {
    // Pi's behaviour: once the shell exits, output that stays quiet for a
    // moment is complete, even while a background job holds the pipe.
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let started = Instant::now();
    let out = bash(&ctx, json!({"command": "echo $$; sleep 3 & echo done"}))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(text(&out).ends_with("done\n"));
}
