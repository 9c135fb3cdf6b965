//! The hook adapters end to end: the real binary answers payloads in each
//! agent CLI's wire format, stored as data files in
//! `tests/hooks/{claude,codex,gemini}/*.json`.
//!
//! A case file holds the CLI's input and what must come back:
//!
//! ```json
//! { "input": { …the CLI's hook JSON… },
//!   "expect": { "exit": 0, "stdout": { …the exact JSON answer… } } }
//! ```
//!
//! Instead of `input`, malformed cases give `input_text` (raw text),
//! `input_hex` (raw bytes) or `input_fill` (that many bytes of spaces).
//! `args` are added after `hook CLI`, `env` to the environment. In expected
//! JSON every key must match (no more, no fewer) and every value exactly,
//! except a string `"{{contains:TEXT}}"`, which matches any string holding
//! TEXT; `"stdout": ""` means nothing at all on stdout. `{{WS}}` is the
//! scratch workspace, `{{OUTSIDE}}` a folder outside it and `{{FIXTURES}}`
//! `tests/fixtures`, in inputs and expectations alike.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A workspace holding what the cases read, write and escape from.
struct Scratch {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn scratch() -> Scratch {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let files = [
        (".env", "API_KEY=1\n"),
        ("Cargo.lock", "# lock\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("docs/guide.md", "# Guide\n"),
        (".claude/settings.json", "{}\n"),
    ];
    for (name, text) in files {
        let path = ws.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::write(outside.path().join("notes.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink("/etc", ws.path().join("etc-link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("notes-link")).unwrap();
    Scratch { ws, outside }
}

impl Scratch {
    fn fill(&self, text: &str) -> String {
        let real = |p: &Path| p.canonicalize().unwrap().display().to_string();
        text.replace("{{WS}}", &real(self.ws.path()))
            .replace("{{OUTSIDE}}", &real(self.outside.path()))
            .replace(
                "{{FIXTURES}}",
                &root().join("tests/fixtures").display().to_string(),
            )
    }
}

/// Whether `actual` matches `expected` (see the module documentation);
/// `Err` says where it does not.
fn matches(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(e), Value::String(a)) => {
            if let Some(needle) = e
                .strip_prefix("{{contains:")
                .and_then(|r| r.strip_suffix("}}"))
            {
                if a.contains(needle) {
                    return Ok(());
                }
                return Err(format!("{at}: {a:?} does not contain {needle:?}"));
            }
            if e == a {
                Ok(())
            } else {
                Err(format!("{at}: expected {e:?}, got {a:?}"))
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            let mut ek: Vec<&String> = e.keys().collect();
            let mut ak: Vec<&String> = a.keys().collect();
            ek.sort();
            ak.sort();
            if ek != ak {
                return Err(format!("{at}: expected keys {ek:?}, got {ak:?}"));
            }
            for (k, v) in e {
                matches(v, &a[k], &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                matches(ev, av, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(format!("{at}: expected {expected}, got {actual}")),
    }
}

/// Runs one case file; `Err` describes the mismatch.
fn run_case(cli: &str, file: &Path, s: &Scratch) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let case: Value =
        serde_json::from_str(&s.fill(&text)).map_err(|e| format!("bad case file: {e}"))?;
    let stdin: Vec<u8> = if let Some(input) = case.get("input") {
        input.to_string().into_bytes()
    } else if let Some(Value::String(t)) = case.get("input_text") {
        t.clone().into_bytes()
    } else if let Some(Value::String(hex)) = case.get("input_hex") {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    } else if let Some(n) = case.get("input_fill").and_then(Value::as_u64) {
        vec![b' '; n as usize]
    } else {
        return Err("the case has no input".to_string());
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.arg("hook").arg(cli).current_dir(s.ws.path());
    for a in case
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        cmd.arg(a.as_str().unwrap());
    }
    for (k, v) in case
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        cmd.env(k, v.as_str().unwrap());
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut pipe = child.stdin.take().unwrap();
    // A refused input may be left unread; the writer must not fail the case.
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&stdin);
    });
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let expect = &case["expect"];
    let show = || format!("\n  stdout: {stdout}\n  stderr: {stderr}");
    let code = out.status.code();
    if code != expect["exit"].as_i64().map(|c| c as i32) {
        return Err(format!(
            "exit {code:?}, expected {}{}",
            expect["exit"],
            show()
        ));
    }
    match &expect["stdout"] {
        Value::String(e) if e.is_empty() => {
            if !stdout.is_empty() {
                return Err(format!("expected nothing on stdout{}", show()));
            }
        }
        want => {
            if stdout.lines().count() != 1 {
                return Err(format!("expected one line of JSON{}", show()));
            }
            let got: Value = serde_json::from_str(&stdout)
                .map_err(|e| format!("stdout is not JSON ({e}){}", show()))?;
            matches(want, &got, "stdout").map_err(|e| format!("{e}{}", show()))?;
        }
    }
    if let Some(want) = expect.get("stderr") {
        matches(want, &Value::String(stderr.clone()), "stderr")
            .map_err(|e| format!("{e}{}", show()))?;
    } else if code == Some(2) {
        return Err("an exit-2 case must say what stderr holds".to_string());
    }
    Ok(())
}

fn run_cli(cli: &str, at_least: usize) {
    let s = scratch();
    let dir = root().join("tests/hooks").join(cli);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= at_least,
        "{}: only {} cases",
        dir.display(),
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            run_case(cli, f, &s)
                .err()
                .map(|e| format!("{}: {e}", f.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} {cli} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn claude_code_payloads() {
    run_cli("claude", 40);
}

#[test]
fn codex_payloads() {
    run_cli("codex", 15);
}

#[test]
fn gemini_cli_payloads() {
    run_cli("gemini", 15);
}

#[test]
fn the_matcher_can_fail() {
    // The harness itself: a wrong expectation must be reported.
    let e = serde_json::json!({"a": "{{contains:denied}}", "b": 1});
    assert!(matches(&e, &serde_json::json!({"a": "it is denied", "b": 1}), "x").is_ok());
    assert!(matches(&e, &serde_json::json!({"a": "allowed", "b": 1}), "x").is_err());
    assert!(matches(&e, &serde_json::json!({"a": "denied", "b": 1, "c": 2}), "x").is_err());
    assert!(matches(&e, &serde_json::json!({"a": "denied", "b": 2}), "x").is_err());
}

fn install(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "install"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .args(["--bin", "toolgate"])
        .output()
        .unwrap()
}

#[test]
fn install_prints_each_clis_snippet() {
    let dir = tempfile::tempdir().unwrap();
    for (cli, want) in [
        (
            "claude",
            r#"{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"toolgate hook claude --workspace \"$CLAUDE_PROJECT_DIR\"","timeout":10}]}],"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"toolgate hook claude --workspace \"$CLAUDE_PROJECT_DIR\"","timeout":10}]}]}}"#,
        ),
        (
            "codex",
            r#"{"hooks":{"PreToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"toolgate hook codex","timeout":10}]}],"PostToolUse":[{"matcher":".*","hooks":[{"type":"command","command":"toolgate hook codex","timeout":10}]}]}}"#,
        ),
        (
            "gemini",
            r#"{"hooks":{"BeforeTool":[{"matcher":".*","hooks":[{"name":"toolgate","type":"command","command":"toolgate hook gemini --workspace \"$GEMINI_PROJECT_DIR\"","timeout":10000}]}],"AfterTool":[{"matcher":".*","hooks":[{"name":"toolgate","type":"command","command":"toolgate hook gemini --workspace \"$GEMINI_PROJECT_DIR\"","timeout":10000}]}]}}"#,
        ),
    ] {
        let o = install(&[cli], dir.path());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(got, serde_json::from_str::<Value>(want).unwrap(), "{cli}");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "printing must not write anything"
    );
}

#[test]
fn install_write_merges_keeps_a_backup_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let original = r#"{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"./lint.sh"}]}]}}"#;
    std::fs::write(&file, original).unwrap();

    let o = install(&["claude", "--write"], dir.path());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(merged["model"], "opus");
    let pre = merged["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(
        pre[0]["hooks"][0]["command"], "./lint.sh",
        "the user's hook stays first"
    );
    assert_eq!(pre[1]["matcher"], "*");
    assert_eq!(merged["hooks"]["PostToolUse"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".claude/settings.json.bak")).unwrap(),
        original
    );

    let again = install(&["claude", "--write"], dir.path());
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing was changed"));
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(after, merged);
    assert!(!dir.path().join(".claude/settings.json.bak.1").exists());
}

#[test]
fn install_write_refuses_a_file_it_cannot_read_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(".gemini/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{ not json").unwrap();
    let o = install(&["gemini", "--write"], dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not valid JSON"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    assert_eq!(
        std::fs::read_dir(file.parent().unwrap()).unwrap().count(),
        1
    );
}

#[test]
fn install_write_creates_the_codex_hooks_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = install(&["codex", "--write", "--timeout", "20"], dir.path());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".codex/hooks.json")).unwrap(),
    )
    .unwrap();
    let hook = &written["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!(hook["command"], "toolgate hook codex --deadline-ms 10000");
    assert_eq!(hook["timeout"], 20);
}

/// `toolgate hook …` is parsed on its own for a fast start; what that parser
/// does not take (help, a wrong option, no agent) still gets the full CLI's
/// answer, and a usage error is exit 2 — a block for every agent CLI.
#[test]
fn hook_command_lines_outside_the_fast_parser_get_the_full_clis_answer() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let help = run(&["hook", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Usage: toolgate hook <COMMAND>"), "{text}");
    assert!(text.contains("install"), "{text}");
    for args in [
        &["hook", "claude", "--bogus"][..],
        &["hook"],
        &["hook", "copilot"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}");
    }
}
