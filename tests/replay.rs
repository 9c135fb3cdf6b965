//! `toolgate replay` against recorded calls in every input format it reads
//! (tests/replay/*: written from each tool's documented format), with the
//! policy in force when they were recorded (tests/replay/old) and a
//! proposed one (tests/replay/new) that loosens `npm install` and tightens
//! `git push` and `curl`.

#[path = "common/run.rs"]
mod run;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replay")
}

fn replay(args: &[&str]) -> Output {
    let mut all = vec!["replay", "--policies", "new"];
    all.extend_from_slice(args);
    run::run_toolgate(&data(), &all, b"")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn counts(v: &Value) -> (u64, u64, u64) {
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (n("total"), n("loosened"), n("tightened"))
}

#[test]
fn a_decision_log_is_compared_with_the_decisions_it_recorded() {
    let out = replay(&["--format", "json", "decision-log.jsonl"]);
    assert_eq!(out.status.code(), Some(1), "npm install was loosened");
    let v = json(&out);
    // Seven calls reached the policy; the unknown tool never did.
    assert_eq!(counts(&v), (7, 2, 2));
    assert_eq!(v["skipped"], 1);
    let change = &v["changes"][0];
    assert_eq!(
        (change["from"].as_str(), change["to"].as_str()),
        (Some("ask"), Some("allow"))
    );
    assert_eq!(change["rule"], "commands.allow[npm install]");
    // Both recorded `npm install`s: one group, counted twice, examples in
    // recorded order.
    assert_eq!(change["count"], 2);
    assert_eq!(
        change["examples"][0]["arguments"]["command"],
        "npm install left-pad"
    );
    let rules: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"push-needs-review") && rules.contains(&"no-network"),
        "{rules:?}"
    );
}

#[test]
fn every_input_format_is_decided_as_it_would_be_live() {
    // (file, calls, loosened, tightened)
    let cases = [
        ("eval-calls.jsonl", 5, 1, 1),
        // Bash npm install, two Reads (package.json allowed, .env denied
        // under both), git push, and Claude's own TodoWrite (tools.unknown).
        ("claude-transcript.jsonl", 5, 1, 1),
        // curl and git push (argv form) tightened; the patch and `ls -la` not.
        ("codex-rollout.jsonl", 4, 0, 2),
        // Claude, Codex and Gemini payloads; the PostToolUse repeats a call.
        ("hook-payloads.jsonl", 3, 1, 2),
        // One pretty-printed payload.
        ("hook-payload.json", 1, 0, 1),
    ];
    for (file, total, loosened, tightened) in cases {
        let out = replay(&["--baseline", "old", "--format", "json", file]);
        let v = json(&out);
        assert_eq!(counts(&v), (total, loosened, tightened), "{file}: {v}");
        let expected = if loosened > 0 { 1 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "{file}");
    }
    // Several inputs make one report.
    let all: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let mut args = vec!["--baseline", "old", "--format", "json"];
    args.extend(all);
    assert_eq!(counts(&json(&replay(&args))), (18, 3, 7));
}

/// The (from, to, rule, count) of each change.
fn changes(v: &Value) -> Vec<(String, String, String, u64)> {
    v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("from"), s("to"), s("rule"), c["count"].as_u64().unwrap())
        })
        .collect()
}

#[test]
fn a_gateway_log_is_decided_as_the_callers_it_recorded() {
    let who = |more: &[&str]| {
        let mut args = vec!["replay", "--policies", "who", "--format", "json"];
        args.extend_from_slice(more);
        args.push("gateway-log.jsonl");
        json(&run::run_toolgate(&data(), &args, b""))
    };
    // Recorded callers: ci-nightly's push is now denied by the rule scoped to
    // `ci-*`; alice's and the anonymous push still ask; the `reader` token's
    // profile still sees no `bash` (a replay as nobody would loosen it).
    let v = who(&[]);
    assert_eq!(counts(&v), (5, 0, 1), "{v}");
    let ask_deny = |rule: &str, n| ("ask".to_string(), "deny".to_string(), rule.to_string(), n);
    assert_eq!(changes(&v), vec![ask_deny("ci-no-push", 1)]);
    // --identity decides the line that recorded no caller as that one, and
    // never overrides a recorded caller.
    let v = who(&["--identity", "ci-deploy"]);
    assert_eq!(changes(&v), vec![ask_deny("ci-no-push", 2)], "{v}");
    // Its profile comes from its token: `reader` sees no bash.
    let v = who(&["--identity", "reader"]);
    assert_eq!(
        changes(&v),
        vec![ask_deny("ci-no-push", 1), ask_deny("tools.active", 1)],
        "{v}"
    );
}

#[test]
fn a_policy_compared_with_itself_changes_nothing() {
    let out = run::run_toolgate(
        &data(),
        &[
            "replay",
            "--policies",
            "old",
            "--baseline",
            "old",
            "--format",
            "json",
            "eval-calls.jsonl",
            "claude-transcript.jsonl",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["changed"], 0);
    assert_eq!(v["changes"], serde_json::json!([]));
}

#[test]
fn fail_on_any_also_fails_on_tightening() {
    let tightened_only = ["--baseline", "old", "codex-rollout.jsonl"];
    assert_eq!(replay(&tightened_only).status.code(), Some(0));
    let mut args = vec!["--fail-on", "any"];
    args.extend(tightened_only);
    assert_eq!(replay(&args).status.code(), Some(1));
}

#[test]
fn calls_without_a_recorded_decision_need_a_baseline() {
    let out = replay(&["claude-transcript.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("claude-transcript.jsonl:3") && err.contains("--baseline"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn unreadable_lines_fail_the_run_unless_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    std::fs::write(
        &log,
        "{\"name\":\"bash\",\"arguments\":{\"command\":\"npm install\"}}\nnot json at all\n{\"hello\":1}\n",
    )
    .unwrap();
    let log = log.to_str().unwrap();
    let out = replay(&["--baseline", "old", "--format", "json", log]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("log.jsonl:2: not JSON"), "{err}");
    assert!(
        err.contains("log.jsonl:3: a JSON line of no known format"),
        "{err}"
    );
    assert!(err.contains("2 input lines could not be read"), "{err}");
    // The report of what was read is still printed.
    assert_eq!(counts(&json(&out)), (1, 1, 0));

    let out = replay(&[
        "--baseline",
        "old",
        "--format",
        "json",
        "--skip-invalid",
        log,
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the loosened call still fails the run"
    );
    assert_eq!(json(&out)["skipped"], 2);
}

#[test]
fn an_incomplete_last_line_is_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("live.jsonl");
    std::fs::write(
        &log,
        "{\"name\":\"bash\",\"arguments\":{\"command\":\"ls\"}}\n{\"name\":\"bash\",\"argu",
    )
    .unwrap();
    let out = replay(&[
        "--baseline",
        "old",
        "--format",
        "json",
        log.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("live.jsonl:2: the last line is incomplete")
    );
    assert_eq!(json(&out)["skipped"], 1);
}

#[test]
fn configuration_and_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.yaml"),
        "version: 1\ncommands:\n  allow: 3\n",
    )
    .unwrap();
    let broken = dir.path().join("broken.yaml");
    let out = run::run_toolgate(
        &data(),
        &[
            "replay",
            "--policies",
            broken.to_str().unwrap(),
            "decision-log.jsonl",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.yaml:3"));
    assert_eq!(replay(&[]).status.code(), Some(2));
    let out = replay(&["no-such-file.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-file.jsonl"));
}

#[test]
fn examples_are_limited_and_redacted() {
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
    let calls = format!(
        "{{\"name\":\"bash\",\"arguments\":{{\"command\":\"npm install --token {token}\"}}}}\n\
         {{\"name\":\"bash\",\"arguments\":{{\"command\":\"npm install a\"}}}}\n"
    );
    let out = run::run_toolgate(
        &data(),
        &[
            "replay",
            "--policies",
            "new",
            "--baseline",
            "old",
            "--format",
            "json",
            "--examples",
            "1",
            "-",
        ],
        calls.as_bytes(),
    );
    let v = json(&out);
    assert_eq!(v["changes"][0]["count"], 2);
    let examples = v["changes"][0]["examples"].as_array().unwrap();
    assert_eq!(examples.len(), 1);
    let shown = examples[0]["arguments"]["command"].as_str().unwrap();
    assert!(
        !shown.contains(&token) && shown.contains("REDACTED"),
        "{shown}"
    );
}

#[test]
fn markdown_and_github_formats() {
    let out = replay(&[
        "--baseline",
        "old",
        "--format",
        "markdown",
        "eval-calls.jsonl",
    ]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("### toolgate replay"), "{md}");
    assert!(
        md.contains("| **loosened** | ask | allow | ` rule commands.allow[npm install] ` | 1 |"),
        "{md}"
    );
    assert!(md.contains("<details>"), "{md}");

    let out = replay(&[
        "--baseline",
        "old",
        "--format",
        "github",
        "eval-calls.jsonl",
    ]);
    let gh = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = gh.lines().collect();
    assert!(
        lines[0].starts_with(
            "::error title=toolgate replay::1 call ask -> allow (rule commands.allow[npm install])"
        ),
        "{gh}"
    );
    assert!(
        lines[1].starts_with(
            "::warning title=toolgate replay::1 call allow -> ask (rule push-needs-review)"
        ),
        "{gh}"
    );
    assert!(
        lines[2].starts_with("::notice title=toolgate replay::5 calls replayed: 2 changed"),
        "{gh}"
    );
}

/// A 200 MB log streamed through stdin under a 100 MB address-space limit
/// (one malloc arena, so the limit counts memory, not per-thread
/// reservations): replay keeps counts and a few examples, never the log.
#[test]
fn a_large_log_replays_in_constant_memory() {
    let lines: usize = 100_000;
    let content = "x".repeat(2000);
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("ulimit -v 100000 && exec \"$0\" replay --policies new --format json -")
        .arg(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(data())
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut written = 0usize;
        for i in 0..lines {
            let decision = if i % 10 == 0 { "ask" } else { "allow" };
            let line = format!(
                "{{\"time\":\"2026-11-24T09:00:00.000Z\",\"id\":\"{i}\",\"tool\":\"write\",\"decision\":\"{decision}\",\"rule\":null,\"reason\":\"\",\"policy_version\":\"v\",\"duration_ms\":0.1,\"is_error\":false,\"result_rule\":null,\"arguments\":{{\"path\":\"out/{i}.txt\",\"content\":\"{content}\"}}}}\n"
            );
            written += line.len();
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
        written
    });
    let out = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        written > 200_000_000,
        "toolgate stopped reading after {written} bytes: {stderr}"
    );
    let v = json(&out);
    // Writes are `commands.default`-free: the new policy allows them, so the
    // recorded asks are loosened.
    assert_eq!(
        v["total"],
        lines as u64,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["loosened"], (lines / 10) as u64);
}

/// Replays `lines` (written to a file of their own) with `args`, once as is
/// and once with `--no-memo`: the two outputs must be the same bytes.
fn replay_both_ways(args: &[&str], lines: &[String]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let mut all = vec!["replay", "--format", "json"];
    all.extend_from_slice(args);
    all.push(log.to_str().unwrap());
    let remembered = run::run_toolgate(&data(), &all, b"");
    all.insert(1, "--no-memo");
    let afresh = run::run_toolgate(&data(), &all, b"");
    assert_eq!(
        String::from_utf8_lossy(&remembered.stdout),
        String::from_utf8_lossy(&afresh.stdout),
        "{}",
        String::from_utf8_lossy(&remembered.stderr)
    );
    assert_eq!(remembered.status.code(), afresh.status.code());
    json(&remembered)
}

#[test]
fn calls_alike_but_for_their_caller_are_each_decided_as_theirs() {
    // The same command again and again, recorded for different callers: a
    // remembered decision must never pass from one caller to another.
    let line = |command: &str, identity: &str, profile: &str| {
        format!(
            "{{\"time\":\"t\",\"id\":\"1\",\"tool\":\"bash\",\"decision\":\"ask\",\"policy_version\":\"v\",\"arguments\":{{\"command\":\"{command}\"}},\"identity\":{identity},\"profile\":{profile}}}"
        )
    };
    let push = "git push origin main";
    let lines = [
        line(push, "\"ci-nightly\"", "null"),
        line(push, "\"alice\"", "null"),
        line(push, "null", "null"),
        line(push, "\"ci-nightly\"", "null"),
        line(push, "\"alice\"", "null"),
        line("ls", "\"reader\"", "\"readonly\""),
        line("ls", "\"reader\"", "null"),
        line("ls", "\"reader\"", "\"readonly\""),
        line("ls", "null", "null"),
        line("ls", "\"reader\"", "null"),
    ];
    let v = replay_both_ways(&["--policies", "who"], &lines);
    // ci-nightly's pushes are denied, alice's and the anonymous one still
    // ask; `reader` with its read-only profile has no bash, without a
    // profile (and nobody) may run `ls`.
    assert_eq!(counts(&v), (10, 3, 4), "{v}");
    let tightened: Vec<_> = changes(&v).into_iter().filter(|c| c.1 == "deny").collect();
    let ask_deny = |rule: &str, n| ("ask".to_string(), "deny".to_string(), rule.to_string(), n);
    assert_eq!(
        tightened,
        vec![ask_deny("ci-no-push", 2), ask_deny("tools.active", 2)]
    );
    // --identity decides the caller-less lines as that caller.
    let v = replay_both_ways(&["--policies", "who", "--identity", "ci-deploy"], &lines);
    assert_eq!(counts(&v), (10, 3, 5), "{v}");
}

#[test]
fn calls_alike_but_for_their_folder_are_each_decided_as_theirs() {
    // Claude Code hook payloads reading the same absolute file from two
    // working directories: from inside the workspace the file is a relative
    // path in it; from the other folder it is outside the roots.
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::write(
        open.join("policy.yaml"),
        "version: 1\ntools:\n  active: [read, write, edit, bash]\n  unknown: ask\npaths:\n  roots: [\"/\"]\ncommands:\n  default: allow\n",
    )
    .unwrap();
    let payload = |cwd: &str| {
        format!(
            "{{\"session_id\":\"s\",\"cwd\":\"{cwd}\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Read\",\"tool_input\":{{\"file_path\":\"/home/dev/app/notes.txt\"}},\"tool_use_id\":\"t\"}}"
        )
    };
    let lines = [
        payload("/home/dev/app"),
        payload("/home/dev/other"),
        payload("/home/dev/app"),
        payload("/home/dev/other"),
    ];
    let v = replay_both_ways(
        &["--policies", "who", "--baseline", open.to_str().unwrap()],
        &lines,
    );
    assert_eq!(counts(&v), (4, 0, 2), "{v}");
    assert_eq!(
        changes(&v),
        vec![(
            "allow".to_string(),
            "deny".to_string(),
            "paths.roots".to_string(),
            2
        )]
    );
}
