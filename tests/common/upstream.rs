//! What the upstream tests (tests/upstream.rs over stdio upstreams,
//! tests/upstream_http.rs over Streamable HTTP) share: installing the real
//! servers and clients, a test directory with the built-in manifests, one
//! run of the Python client against `toolgate serve`, and `/status`.
//!
//! A test file declares `mod serve` (tests/common/serve.rs) next to this one.

#![allow(dead_code)]

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::serve::{http_request, repo, toolgate, HttpServer};

/// A fake GitHub token the default redaction rules catch.
pub const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

/// Runs tests/upstream/install.sh once per test process; a failure fails
/// the test that needed it, saying what the script needs.
pub fn ensure_installed() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        let out = Command::new("bash")
            .arg(repo().join("tests/upstream/install.sh"))
            .output()
            .map_err(|e| format!("cannot run tests/upstream/install.sh: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "tests/upstream/install.sh failed (it needs python3 with venv, npm, and access to PyPI and npm):\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The Python with the `mcp` SDK.
pub fn python() -> PathBuf {
    ensure_installed();
    repo().join("tests/mcp/.venv/bin/python")
}

/// Node 22.
pub fn node() -> PathBuf {
    ensure_installed();
    repo().join("tests/mcp/node_modules/node/bin/node")
}

/// A test directory: `ws` (the workspace), `m` (manifests, the built-in
/// ones copied in), `p` (the policy), `state` (the fake upstream's).
pub struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Setup {
    /// A new directory with `policy` as `p/policy.yaml`.
    pub fn new(policy: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["ws", "m", "p", "state"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for entry in fs::read_dir(repo().join("tool-manifests")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                fs::copy(&path, root.join("m").join(path.file_name().unwrap())).unwrap();
            }
        }
        fs::write(root.join("p/policy.yaml"), policy).unwrap();
        Setup { _dir: dir, root }
    }

    /// The directory itself.
    pub fn root(&self) -> &PathBuf {
        &self.root
    }

    /// `rel` inside the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `--policies`, `--manifests` and `--workspace` for this directory.
    pub fn config_args(&self) -> Vec<String> {
        vec![
            "--policies".into(),
            self.path("p").display().to_string(),
            "--manifests".into(),
            self.path("m").display().to_string(),
            "--workspace".into(),
            self.path("ws").display().to_string(),
        ]
    }

    /// Runs tests/upstream/client.py's `steps` against `toolgate serve`
    /// (stdio, profile `up`) started as `PREFIX… toolgate serve … SERVE_ARGS…
    /// CONFIG`; returns the client's report and toolgate's stderr.
    pub fn run_client(
        &self,
        steps: &Value,
        prefix: &[String],
        serve_args: &[String],
    ) -> (Value, String) {
        let out = Command::new(python())
            .arg(repo().join("tests/upstream/client.py"))
            .arg(steps.to_string())
            .arg("--")
            .args(prefix)
            .arg(toolgate())
            .args(["serve", "--no-watch", "--profile", "up"])
            .args(serve_args)
            .args(self.config_args())
            .output()
            .expect("run the Python client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "client failed:\n{stdout}\n{stderr}");
        let report = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("client printed no JSON ({e}):\n{stdout}\n{stderr}"));
        (report, stderr)
    }

    /// How many lines the fake upstream wrote to `STATE/FILE` (`starts`,
    /// `sessions`): 0 when it has not written it.
    pub fn lines_in(&self, state: &str, file: &str) -> usize {
        fs::read_to_string(self.path(&format!("{state}/{file}")))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

/// A client step calling `tool` with `args`, its result named `as_`.
pub fn call(tool: &str, args: Value, as_: &str) -> Value {
    json!({"do": "call", "tool": tool, "args": args, "as": as_})
}

/// `/status` of a running HTTP gateway, as text.
pub fn status_text(server: &HttpServer) -> String {
    let (code, body) = http_request(
        server.authority(),
        &format!(
            "GET /status HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            server.authority()
        ),
    );
    assert_eq!(code, 200, "{body}");
    body
}

/// Waits (up to 30 s) until `ok` holds for `/status`; returns it parsed
/// and as text.
pub fn wait_status(
    server: &HttpServer,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> (Value, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = status_text(server);
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        if ok(&v) {
            return (v, text);
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {v}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
