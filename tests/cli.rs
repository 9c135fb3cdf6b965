//! The command line as CI and scripts use it: exit codes, output formats,
//! and load errors that name `FILE:LINE:COL` and the culprit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn toolgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(root().join("tests/fixtures"))
        .output()
        .expect("toolgate runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `toolgate check` on one broken fixture, from `tests/fixtures`: its stdout.
fn check_output(policies: &str, manifests: &str) -> String {
    let o = toolgate(&["check", "--policies", policies, "--manifests", manifests]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "check must fail on {policies}: {}",
        stdout(&o)
    );
    stdout(&o)
}

/// Every broken policy in `tests/fixtures/errors/` gives exactly the
/// diagnostics in the `.expected` file beside it (positions, messages, help
/// lines, the count), and the broken manifests theirs. After a deliberate
/// change of wording, `TOOLGATE_BLESS=1 cargo test --test cli` rewrites the
/// snapshots; review the diff like any other change.
#[test]
fn broken_fixtures_give_their_snapshot_diagnostics() {
    let fixtures = root().join("tests/fixtures");
    let mut cases: Vec<(String, String, PathBuf)> = std::fs::read_dir(fixtures.join("errors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let name = format!("errors/{}", p.file_name().unwrap().to_string_lossy());
            let snapshot = fixtures.join(format!("{name}.expected"));
            (name, "../../tool-manifests".to_string(), snapshot)
        })
        .collect();
    cases.sort();
    assert!(cases.len() >= 9, "{cases:?}");
    cases.push((
        "../../policies/examples/ci-readonly.yaml".to_string(),
        "bad-manifests".to_string(),
        fixtures.join("bad-manifests/check.expected"),
    ));
    let bless = std::env::var_os("TOOLGATE_BLESS").is_some();
    let mut failures = Vec::new();
    for (policies, manifests, snapshot) in &cases {
        let actual = check_output(policies, manifests);
        if bless {
            std::fs::write(snapshot, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(snapshot).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with TOOLGATE_BLESS=1 to write it)",
                snapshot.display()
            )
        });
        if actual != expected {
            failures.push(format!(
                "{policies}: differs from {}\n--- expected\n{expected}--- actual\n{actual}",
                snapshot.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_policy_extends_the_exec_table() {
    let eval = |command: &str| {
        let args = serde_json::json!({ "command": command }).to_string();
        let o = toolgate(&[
            "eval",
            "--policies",
            "exec-extend.yaml",
            "--manifests",
            "../../tool-manifests",
            "--tool",
            "bash",
            "--args",
            &args,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["decision"].as_str().unwrap().to_string()
    };
    assert_eq!(eval("mytool run"), "allow");
    // A listed option's value is a program: judged, and unparsed (ask).
    assert_eq!(eval("mytool --hook=./x.sh run"), "ask");
    assert_eq!(eval("mytool --hook 'rm -rf ~' run"), "deny");
    assert_eq!(eval("mytool -vx 'curl evil.example' run"), "deny");
    // A command-kind option is analyzed like `bash -c`.
    assert_eq!(eval("sort --my-filter 'echo hi' x"), "allow");
    assert_eq!(eval("sort --my-filter 'rm -rf ~' x"), "deny");
    // The shipped entries stay.
    assert_eq!(eval("sort --compress-program=sh x"), "ask");
    assert_eq!(eval("MYTOOL_HOOK='rm -rf ~' mytool run"), "deny");
    assert_eq!(eval("MYTOOL_HOOK=pwd mytool run"), "allow");
    assert_eq!(eval("export MYTOOL_HOOK='rm -rf ~'; mytool run"), "deny");
    assert_eq!(eval("MYTOOL_PLUGIN_DIR=x mytool run"), "ask");
}

#[test]
fn check_formats_json_and_github() {
    let o = toolgate(&[
        "check",
        "--policies",
        "errors/typo.yaml",
        "--manifests",
        "../../tool-manifests",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json output");
    assert_eq!(json["ok"], false);
    assert_eq!(json["errors"][0]["line"], 4);
    assert_eq!(json["errors"][0]["col"], 1);
    assert_eq!(json["errors"][0]["file"], "errors/typo.yaml");

    let o = toolgate(&[
        "check",
        "--policies",
        "errors/typo.yaml",
        "--manifests",
        "../../tool-manifests",
        "--format",
        "github",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).starts_with("::error file=errors/typo.yaml,line=4,col=1,title=toolgate::unknown field `comands` — did you mean `commands`?"), "{}", stdout(&o));
}

#[test]
fn every_shipped_policy_checks_clean() {
    for policy in [
        "../../policies/default.yaml",
        "../../policies/examples/ci-readonly.yaml",
        "../../policies/examples/strict.yaml",
        "../../policies/examples/results.yaml",
    ] {
        let o = toolgate(&[
            "check",
            "--policies",
            policy,
            "--manifests",
            "../../tool-manifests",
        ]);
        assert_eq!(o.status.code(), Some(0), "{policy}: {}", stdout(&o));
        assert!(stdout(&o).starts_with("ok: policy "), "{}", stdout(&o));
    }
}

#[test]
fn embedded_default_needs_no_folders() {
    let empty = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "eval",
            "--tool",
            "bash",
            "--args",
            r#"{"command":"rm -fr build"}"#,
        ])
        .current_dir(empty.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["rule"], "no-recursive-delete");
}

#[test]
fn eval_prints_the_contract_json() {
    let o = toolgate(&[
        "eval",
        "--policies",
        "../../policies/default.yaml",
        "--manifests",
        "../../tool-manifests",
        "--tool",
        "read",
        "--args",
        r#"{"path":"errors/typo.yaml"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        "{\"decision\":\"allow\",\"reason\":\"Tool read is allowed\",\"rule\":null,\"terminate\":false}\n"
    );
}

#[test]
fn eval_jsonl_batch_answers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    std::fs::write(
        &calls,
        concat!(
            r#"{"name":"bash","arguments":{"command":"cargo test"}}"#,
            "\n",
            r#"{"name":"bash","arguments":{"command":"git push origin main"}}"#,
            "\n",
            "\n",
            r#"{"name":"read","arguments":{"path":"../../../../etc/passwd"}}"#,
            "\n",
            r#"{"name":"nosuchtool","arguments":{}}"#,
            "\n",
        ),
    )
    .unwrap();
    let o = toolgate(&["eval", "--calls", calls.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decisions: Vec<&str> = lines
        .iter()
        .map(|l| l["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["allow", "ask", "deny", "ask"]);
    assert_eq!(lines[2]["rule"], "paths.roots");
    assert_eq!(lines[3]["rule"], "tools.unknown");
}

#[test]
fn eval_usage_and_config_errors_exit_2() {
    let o = toolgate(&["eval", "--tool", "read", "--args", "not json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--args is not valid JSON"));
    assert!(o.stdout.is_empty());

    let o = toolgate(&[
        "eval",
        "--policies",
        "errors/typo.yaml",
        "--tool",
        "read",
        "--args",
        "{}",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("errors/typo.yaml:4:1"));
    assert!(
        o.stdout.is_empty(),
        "a broken policy must not produce a verdict"
    );

    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.jsonl");
    std::fs::write(&calls, "{\"name\":\"ls\",\"arguments\":{}}\n{broken\n").unwrap();
    let o = toolgate(&["eval", "--calls", calls.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("calls.jsonl:2:"));
    assert!(o.stdout.is_empty(), "no half answers");
}

#[test]
fn profiles_select_the_active_tools() {
    let o = toolgate(&[
        "eval",
        "--profile",
        "readonly",
        "--tool",
        "write",
        "--args",
        r#"{"path":"x","content":"y"}"#,
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["reason"], "Tool write not found");

    let o = toolgate(&["eval", "--profile", "nope", "--tool", "ls", "--args", "{}"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown profile `nope`"));
}

#[test]
fn policy_tests_pass_and_fail_with_exit_codes() {
    let o = toolgate(&[
        "test",
        "--policies",
        "../../policies/default.yaml",
        "../../policies/tests/default.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).trim_end().ends_with(" passed, 0 failed"),
        "{}",
        stdout(&o)
    );

    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("wrong.yaml");
    std::fs::write(&t, "tests:\n  - name: rm is fine\n    tool: bash\n    args: { command: \"rm -rf /\" }\n    decision: allow\n").unwrap();
    let o = toolgate(&[
        "test",
        "--policies",
        "../../policies/default.yaml",
        t.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("FAIL") && out.contains("rm is fine: expected allow, got deny"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("0 passed, 1 failed"), "{out}");
}

#[test]
fn policy_tests_state_the_result_rule_for_an_output() {
    let o = toolgate(&[
        "test",
        "--policies",
        "../../policies/examples/results.yaml",
        "../../policies/examples/tests/results.yaml",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).trim_end().ends_with("8 passed, 0 failed"),
        "{}",
        stdout(&o)
    );

    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("wrong.yaml");
    std::fs::write(
        &t,
        "tests:\n  - name: passing tests stop\n    tool: bash\n    args: { command: \"cargo test\" }\n    decision: allow\n    output: \"test result: ok\"\n    result_rule: stop-on-failed-tests\n  - name: output nobody checks\n    tool: bash\n    args: { command: \"ls\" }\n    decision: allow\n    output: \"x\"\n",
    )
    .unwrap();
    let o = toolgate(&[
        "test",
        "--policies",
        "../../policies/examples/results.yaml",
        t.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("passing tests stop: expected result rule stop-on-failed-tests, got null"),
        "{out}"
    );
    assert!(out.contains("no `result_rule` to check"), "{out}");
    assert!(out.trim_end().ends_with("0 passed, 2 failed"), "{out}");
}

#[test]
fn schemas_are_json_schema_documents() {
    for kind in ["policy", "manifest"] {
        let o = toolgate(&["schema", kind]);
        assert_eq!(o.status.code(), Some(0));
        let schema: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            schema["$schema"]
                .as_str()
                .unwrap_or_default()
                .contains("json-schema.org"),
            "{schema}"
        );
        let props = schema["properties"].as_object().unwrap();
        let want = if kind == "policy" {
            "commands"
        } else {
            "effects"
        };
        assert!(props.contains_key(want), "{kind} schema lacks {want}");
    }
    // The policy language of issue 14 is described.
    let o = toolgate(&["schema", "policy"]);
    let text = stdout(&o);
    for key in [
        "inline_code",
        "variables",
        "unless",
        "operands_under",
        "exact",
    ] {
        assert!(
            text.contains(&format!("\"{key}\"")),
            "policy schema lacks {key}"
        );
    }
}

/// A plain-string pattern with `--` is read differently than before (it
/// used to be dropped): `toolgate check` says so, and still loads it.
#[test]
fn check_warns_about_a_double_dash_pattern() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.yaml");
    std::fs::write(
        &file,
        "version: 1\ncommands:\n  deny: [\"git checkout --\", { pattern: \"git restore --\" }]\n",
    )
    .unwrap();
    let o = toolgate(&[
        "check",
        "--policies",
        file.to_str().unwrap(),
        "--manifests",
        "../../tool-manifests",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("warning: command pattern `git checkout --`"),
        "{out}"
    );
    assert!(!out.contains("`git restore --`"), "{out}");
}

#[test]
fn redact_filters_stdin() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("redact")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("token={token}\nplain line\n").as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains(&token), "{out}");
    assert!(
        out.contains("[REDACTED:github-pat]") && out.ends_with("plain line\n"),
        "{out}"
    );
}

/// `toolgate eval … | head -1`: the reader closing its end is not an error.
/// Every subcommand that prints ends quietly with 0 when stdout is closed.
#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let calls: String = (0..20_000)
        .map(|i| format!("{{\"name\":\"read\",\"arguments\":{{\"path\":\"f{i}.txt\"}}}}\n"))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["eval", "--calls", "-"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(calls.as_bytes());
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("\"decision\":\"allow\""), "{first}");
    // The read end is closed here, long before 20,000 verdicts are written.
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout_of(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", stdout_of(&out.stderr));

    for args in [&["schema", "policy"][..], &["check"][..], &["test"][..]] {
        let child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(args)
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = child;
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            stdout_of(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            stdout_of(&out.stderr)
        );
    }
}

fn stdout_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
