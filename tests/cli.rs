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

fn check_error(file: &str) -> String {
    let path = format!("errors/{file}");
    let o = toolgate(&[
        "check",
        "--policies",
        &path,
        "--manifests",
        "../../tool-manifests",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "check must fail on {file}: {}",
        stdout(&o)
    );
    stdout(&o)
}

#[test]
fn typo_field_names_position_and_suggestion() {
    let out = check_error("typo.yaml");
    assert!(
        out.contains("errors/typo.yaml:4:1: error: unknown field `comands`"),
        "{out}"
    );
    assert!(out.contains("did you mean `commands`?"), "{out}");
}

#[test]
fn bad_regex_points_at_the_pattern() {
    let out = check_error("bad-regex.yaml");
    assert!(out.contains("errors/bad-regex.yaml:5:36: error: rule `no-todo`: invalid regex `(unclosed`: unclosed group"), "{out}");
}

#[test]
fn huge_regex_is_refused() {
    let out = check_error("huge-regex.yaml");
    assert!(
        out.contains("errors/huge-regex.yaml:5:36: error: rule `huge`: regex is too large"),
        "{out}"
    );
}

#[test]
fn yaml_syntax_error_has_a_position() {
    let out = check_error("syntax.yaml");
    assert!(
        out.contains("errors/syntax.yaml:4:6: error: invalid YAML"),
        "{out}"
    );
}

#[test]
fn unknown_tool_is_named_with_a_suggestion() {
    let out = check_error("unknown-tool.yaml");
    assert!(
        out.contains(
            "errors/unknown-tool.yaml:3:18: error: unknown tool `wirte` in `tools.active`"
        ),
        "{out}"
    );
    assert!(out.contains("did you mean `write`?"), "{out}");
}

#[test]
fn unknown_argument_is_a_load_error() {
    let out = check_error("unknown-arg.yaml");
    assert!(
        out.contains(
            "errors/unknown-arg.yaml:5:18: error: rule `big`: argument `contents` does not exist"
        ),
        "{out}"
    );
}

#[test]
fn failing_example_names_rule_and_example() {
    let out = check_error("failing-example.yaml");
    assert!(out.contains("errors/failing-example.yaml:9:11: error: rule `no-secrets`: example {\"path\":\"a.txt\",\"content\":\"AKIA1234\"} should match"), "{out}");
}

#[test]
fn every_error_of_a_file_is_reported() {
    let out = check_error("many.yaml");
    for expected in [
        "errors/many.yaml:3:18: error: unknown tool `bsh`",
        "errors/many.yaml:5:10: error: invalid glob `[unclosed`",
        "errors/many.yaml:7:10: error: invalid command pattern `rm -rf && ls`",
        "errors/many.yaml:11:34: error: rule `r`: `matches` needs a string argument, but `limit` is number",
        "4 errors",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

#[test]
fn exec_table_additions_are_checked_with_positions() {
    let out = check_error("bad-exec.yaml");
    for want in [
        "errors/bad-exec.yaml:6:5: error: `bin/tool` in `commands.exec_options` is not a program name",
        "errors/bad-exec.yaml:5:24: error: invalid option `hook` in `commands.exec_options.mytool`",
        "errors/bad-exec.yaml:5:32: error: invalid option `-x y` in `commands.exec_options.mytool`",
        "errors/bad-exec.yaml:7:21: error: unknown kind `banana` for `--run` in `commands.exec_options.other`",
        "help: use one of: command, program, opaque, write, argv",
        "errors/bad-exec.yaml:8:29: error: invalid variable `1BAD` in `commands.exec_env`",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
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
fn missing_extends_parent() {
    let out = check_error("missing-extends.yaml");
    assert!(
        out.contains(
            "errors/missing-extends.yaml:2:11: error: `extends` names `missing-parent.yaml`"
        ),
        "{out}"
    );
}

#[test]
fn manifest_errors_from_every_file() {
    let o = toolgate(&[
        "check",
        "--policies",
        "../../policies/examples/ci-readonly.yaml",
        "--manifests",
        "bad-manifests",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(
            "bad-manifests/lint.toml:4:1: error: invalid manifest: unknown field `execution_mod`"
        ),
        "{out}"
    );
    assert!(out.contains("did you mean `execution_mode`?"), "{out}");
    assert!(out.contains("bad-manifests/fmt.toml:10:11: error: `effects.paths` names `path`, which is not a parameter of `fmt`"), "{out}");
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
