//! `toolgate serve` speaking raw MCP JSON-RPC (no client library): the
//! handshake, tools/list order, -32602 for unknown tools, isError results,
//! tools/list_changed after a reload, start-up errors, and the HTTP
//! listener's Origin and bind checks. The real clients are in
//! tests/mcp_clients.rs.

#[path = "common/serve.rs"]
mod serve;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use serve::{client_test_args, http_request, spawn_stdio, toolgate, HttpServer};

/// A `serve --stdio` child with line-based JSON-RPC.
struct RawStdio {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl RawStdio {
    fn start(args: &[String]) -> RawStdio {
        let mut child = spawn_stdio(args);
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // Everything on stdout must be a JSON-RPC message.
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        RawStdio {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to server");
    }

    /// The next message matching `pick`, within `timeout`.
    fn wait_for(&self, timeout: Duration, pick: impl Fn(&Value) -> bool) -> Value {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pick(&v) => return v,
                Ok(_) => continue,
                Err(_) => panic!("no matching message within {timeout:?}"),
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(Duration::from_secs(20), |v| v["id"] == id)
    }

    fn initialize(&mut self) {
        let init = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "1"}}),
        );
        assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(init["result"]["serverInfo"]["name"], "toolgate");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_lists_active_tools_in_order_and_maps_errors() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = RawStdio::start(&client_test_args(ws.path()));
    server.initialize();
    let list = server.request(1, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "ls", "bash"], "the policy's order");
    assert_eq!(list["result"]["tools"][2]["inputSchema"]["type"], "object");
    assert!(list["result"]["tools"][2]["inputSchema"]["properties"]["command"].is_object());

    let unknown = server.request(2, "tools/call", json!({"name": "write", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(unknown["error"]["message"], "Tool write not found");

    let denied = server.request(
        3,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "rm -rf /"}}),
    );
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert!(denied["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("denied"));

    let ok = server.request(
        4,
        "tools/call",
        json!({"name": "bash", "arguments": {"command": "echo hi"}, "_meta": {"progressToken": "p"}}),
    );
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "hi\n");
}

#[test]
fn a_cancelled_call_gets_no_response_and_its_process_group_dies() {
    let ws = tempfile::tempdir().unwrap();
    let mut server = RawStdio::start(&client_test_args(ws.path()));
    server.initialize();
    server.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": "echo $$ > pid.txt; sleep 30"}}}));
    let pid_file = ws.path().join("pid.txt");
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the command did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    server.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "test"}}),
    );
    // The next response is the ping's: nothing ever answers request 7.
    server.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    let next = server.wait_for(Duration::from_secs(10), |v| v.get("id").is_some());
    assert_eq!(next["id"], 8, "{next}");
    let group_gone = |pgid: i32| {
        // SAFETY: signal 0 only checks that the process group exists.
        unsafe { libc::killpg(pgid, 0) != 0 }
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !group_gone(pid) {
        assert!(Instant::now() < deadline, "process group {pid} still alive");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    while let Ok(v) = server.lines.try_recv() {
        assert_ne!(v["id"], 7, "a cancelled request got a response: {v}");
    }
}

#[test]
fn a_reload_that_changes_the_tools_sends_list_changed() {
    let ws = tempfile::tempdir().unwrap();
    let policies = tempfile::tempdir().unwrap();
    let policy = policies.path().join("p.yaml");
    std::fs::write(&policy, "version: 1\ntools:\n  active: [read, ls]\n").unwrap();
    let args: Vec<String> = vec![
        "serve".into(),
        "--workspace".into(),
        ws.path().display().to_string(),
        "--policies".into(),
        policies.path().display().to_string(),
        "--manifests".into(),
        serve::repo().join("tool-manifests").display().to_string(),
    ];
    let mut server = RawStdio::start(&args);
    server.initialize();
    let before = server.request(1, "tools/list", json!({}));
    assert_eq!(before["result"]["tools"].as_array().unwrap().len(), 2);
    // Give the watcher a moment to be in place, then save like an editor.
    std::thread::sleep(Duration::from_millis(300));
    let tmp = policies.path().join(".p.yaml.swp");
    std::fs::write(&tmp, "version: 1\ntools:\n  active: [read, ls, bash]\n").unwrap();
    std::fs::rename(&tmp, &policy).unwrap();
    server.wait_for(Duration::from_secs(10), |v| {
        v["method"] == "notifications/tools/list_changed"
    });
    let after = server.request(2, "tools/list", json!({}));
    assert_eq!(after["result"]["tools"].as_array().unwrap().len(), 3);
}

#[test]
fn a_broken_policy_stops_serve_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "version: 1\ntools:\n  activ: [read]\n",
    )
    .unwrap();
    let out = Command::new(toolgate())
        .args(["serve", "--stdio", "--policies"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing on the protocol stream");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml:3:3"), "{err}");
}

#[test]
fn http_refuses_a_non_loopback_address_without_allow_remote() {
    let out = Command::new(toolgate())
        .args(["serve", "--http", "0.0.0.0:0", "--no-watch"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
}

#[test]
fn http_checks_origin_and_serves_the_operations_endpoints() {
    let ws = tempfile::tempdir().unwrap();
    let server = HttpServer::start(&client_test_args(ws.path()), ws.path());
    let host = server.authority().to_string();
    let get = |path: &str, origin: Option<&str>| {
        let origin = origin
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
        http_request(
            &host,
            &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: close\r\n\r\n"),
        )
    };
    assert_eq!(get("/healthz", None).0, 200);
    assert_eq!(get("/healthz", Some("http://localhost:6274")).0, 200);
    assert_eq!(get("/healthz", Some("https://evil.example.com")).0, 403);
    let (status, body) = get("/status", None);
    assert_eq!(status, 200);
    assert!(body.contains("\"active_tools\""), "{body}");

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let post = |origin: &str| {
        http_request(
            &host,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{init}",
                init.len()
            ),
        )
    };
    assert_eq!(post("Origin: http://evil.example.com\r\n").0, 403);
    let (status, body) = post("");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
}
