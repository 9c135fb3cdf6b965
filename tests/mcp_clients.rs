//! toolgate against real MCP clients: the Python SDK (mcp 2.3.0) over stdio
//! in both eras (`legacy`: the 2025-11-25 handshake; `auto`: the stateless
//! 2026-07-28 era) and over Streamable HTTP, and the MCP Inspector CLI
//! (2.12.0) over stdio and HTTP. The official conformance suite runs from
//! .ci/run against the release binary (tests/conformance/run.sh).
//!
//! The clients are installed by `bash tests/mcp/install.sh` (which .ci/run
//! runs, and these tests run themselves when the clients are missing). When
//! they cannot be installed these tests fail and say so: they never pass
//! silently.

#[path = "common/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use serve::{client_test_args, repo, toolgate, HttpServer};

/// Installs the clients once per test run when they are missing, so `cargo
/// test` works on a fresh machine (with access to PyPI and npm). A failed
/// install fails the tests that need the clients, with the installer's
/// output.
fn ensure_clients() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        let dir = repo().join("tests/mcp");
        let ready = dir.join(".venv/bin/python").exists()
            && dir.join("node_modules/node/bin/node").exists()
            && dir.join("node_modules/.bin/inspector").exists();
        if ready {
            return Ok(());
        }
        eprintln!("installing the MCP test clients (tests/mcp/install.sh) …");
        let out = Command::new("bash")
            .arg(dir.join("install.sh"))
            .output()
            .map_err(|e| format!("cannot run tests/mcp/install.sh: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "tests/mcp/install.sh failed (it needs python3 with venv, npm, and access to PyPI and npm):\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The venv's python, with the SDK at the pinned version.
fn python() -> PathBuf {
    ensure_clients();
    let python = repo().join("tests/mcp/.venv/bin/python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "2.3.0" => python,
        _ => panic!("tests/mcp/.venv does not have mcp 2.3.0: delete it and run `bash tests/mcp/install.sh`"),
    }
}

/// tests/mcp with its node_modules, and a PATH with Node 22 first.
fn node() -> (PathBuf, String) {
    ensure_clients();
    let dir = repo().join("tests/mcp");
    let node_bin = dir.join("node_modules/node/bin");
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

fn python_client(args: &[String], workspace: &Path) -> Value {
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/client.py"))
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run tests/mcp/client.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client.py failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("client.py printed {stdout}: {e}"))
}

fn stdio_python(mode: &str) -> Value {
    let ws = tempfile::tempdir().unwrap();
    let mut args = vec!["--mode".to_string(), mode.to_string(), "--".to_string()];
    args.push(toolgate().display().to_string());
    args.extend(client_test_args(ws.path()));
    args.push("--stdio".into());
    python_client(&args, ws.path())
}

fn text(v: &Value) -> &str {
    v["text"].as_str().unwrap_or_default()
}

/// What both eras must show over stdio.
fn check_full_report(r: &Value) {
    assert_eq!(r["tools"], serde_json::json!(["read", "ls", "bash"]), "{r}");
    assert_eq!(r["schemas_are_objects"], true);
    assert_eq!(r["allowed"]["is_error"], false, "{r}");
    assert_eq!(text(&r["allowed"]), "hello\n");
    assert_eq!(r["denied"]["is_error"], true, "{r}");
    assert!(text(&r["denied"]).contains("is denied"), "{r}");
    assert_eq!(r["unknown"]["raised"], true, "{r}");
    assert_eq!(r["unknown"]["code"], -32602, "{r}");
    assert_eq!(r["invalid"]["is_error"], true, "{r}");
    assert!(text(&r["invalid"]).contains("Validation failed"), "{r}");
    // The policy's result rule, applied by the same after-hook as `call`.
    assert_eq!(r["result_rule"]["is_error"], true, "{r}");
    assert_eq!(
        text(&r["result_rule"]),
        "result-rule FAILED\n\nTests failed: stop.",
        "{r}"
    );
    assert_eq!(r["no_result_rule"]["is_error"], false, "{r}");
    assert_eq!(text(&r["no_result_rule"]), "result-rule ok\n", "{r}");

    let progress = &r["progress"];
    assert_eq!(text(&progress["result"]), "1\n2\n3\n", "{r}");
    let values: Vec<f64> = progress["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["progress"].as_f64().unwrap())
        .collect();
    assert!(values.len() >= 2, "progress on a slow command: {progress}");
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");

    // The client declared elicitation: `ask` was put to it, once approved,
    // once declined (a request while the call waits in the handshake era;
    // an input-required round in the stateless era).
    assert_eq!(r["ask"]["is_error"], false, "{r}");
    assert_eq!(text(&r["ask"]), "approve-me\n");
    assert!(r["ask_prompts"][0]
        .as_str()
        .unwrap_or_default()
        .contains("echo approve-me"));
    assert_eq!(r["ask_declined"]["is_error"], true, "{r}");
    assert!(text(&r["ask_declined"]).contains("declined"), "{r}");

    let cancel = &r["cancel"];
    assert_eq!(cancel["cancelled"], true, "{cancel}");
    assert!(cancel["pid"].is_u64(), "the command started: {cancel}");
    assert_eq!(cancel["process_group_gone"], true, "{cancel}");
    assert_eq!(text(&cancel["next_call"]), "still here\n", "{cancel}");
}

#[test]
fn python_sdk_over_stdio_legacy_handshake() {
    let r = stdio_python("legacy");
    assert_eq!(r["protocol_version"], "2025-11-25", "{r}");
    check_full_report(&r);
}

#[test]
fn python_sdk_over_stdio_auto_stateless_era() {
    let r = stdio_python("auto");
    assert_eq!(r["protocol_version"], "2026-07-28", "{r}");
    check_full_report(&r);
}

#[test]
fn python_sdk_over_streamable_http_both_eras() {
    let ws = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&client_test_args(ws.path()), ws.path());
    let url = format!("{}/mcp", server.base);
    for (mode, version) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let args = vec![
            "--mode".to_string(),
            mode.to_string(),
            "--url".to_string(),
            url.clone(),
        ];
        let r = python_client(&args, ws.path());
        assert_eq!(r["protocol_version"], version, "{r}");
        check_full_report(&r);
    }
}

fn inspector(target: &[String], method_args: &[&str]) -> Output {
    let (dir, path) = node();
    Command::new(dir.join("node_modules/.bin/inspector"))
        .args(["--cli", "-q"])
        .args(target)
        .args(method_args)
        .current_dir(&dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("run the Inspector CLI")
}

fn check_inspector(target: &[String]) {
    let list = inspector(target, &["--method", "tools/list"]);
    let stdout = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "tools/list: {stdout} {}",
        String::from_utf8_lossy(&list.stderr)
    );
    let listed: Value = serde_json::from_str(&stdout).expect("tools/list prints JSON");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["read", "ls", "bash"]);

    let call = |args: &str| {
        inspector(
            target,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "bash",
                "--tool-args-json",
                args,
            ],
        )
    };
    let ok = call(r#"{"command":"echo from-inspector"}"#);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("from-inspector"), "{stdout}");

    let denied = call(r#"{"command":"rm -rf /"}"#);
    let stdout = String::from_utf8_lossy(&denied.stdout);
    assert_eq!(denied.status.code(), Some(5), "isError exits 5: {stdout}");
    assert!(stdout.contains("is denied"), "{stdout}");
}

#[test]
fn inspector_cli_over_stdio() {
    let ws = tempfile::tempdir().unwrap();
    let mut target = vec![toolgate().display().to_string()];
    target.extend(client_test_args(ws.path()));
    target.push("--stdio".into());
    check_inspector(&target);
}

#[test]
fn inspector_cli_over_streamable_http() {
    let ws = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&client_test_args(ws.path()), ws.path());
    check_inspector(&["--server-url".to_string(), format!("{}/mcp", server.base)]);
}
