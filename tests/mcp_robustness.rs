//! Hostile input to `toolgate serve` over MCP, on stdio and Streamable
//! HTTP: garbage, invalid UTF-8, wrong types, oversized and deeply nested
//! messages get a JSON-RPC error or are dropped, the server keeps serving,
//! only protocol messages reach stdout, and calls over the policy's limits
//! come back as error results naming the limit.

#[path = "common/serve.rs"]
mod serve;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use serve::{spawn_stdio, HttpServer};

/// A workspace whose policy is the embedded default with small argument
/// and command limits (so calls over them stay small messages).
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("policy.yaml"),
        "version: 1\nextends: [\"builtin:default\"]\nlimits:\n  max_argument_bytes: 64KB\n  max_command_bytes: 4KB\n",
    )
    .unwrap();
    dir
}

fn serve_args(ws: &Path) -> Vec<String> {
    vec![
        "serve".into(),
        "--no-watch".into(),
        "--workspace".into(),
        ws.display().to_string(),
        "--policies".into(),
        ws.join("policy.yaml").display().to_string(),
    ]
}

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

/// `serve --stdio` with raw lines in and JSON-RPC messages out.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    not_json: Arc<Mutex<Vec<String>>>,
}

impl StdioServer {
    fn start(ws: &Path) -> StdioServer {
        let mut child = spawn_stdio(&serve_args(ws));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, messages) = mpsc::channel();
        let not_json = Arc::new(Mutex::new(Vec::new()));
        let bad = not_json.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v["jsonrpc"] == "2.0" => {
                        let _ = tx.send(v);
                    }
                    _ => bad.lock().unwrap().push(line),
                }
            }
        });
        StdioServer {
            child,
            stdin,
            messages,
            not_json,
        }
    }

    fn send_raw(&mut self, line: &[u8]) {
        self.stdin.write_all(line).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }

    fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// The next message matching `pick` within `timeout`, if any.
    fn wait_for(&self, timeout: Duration, pick: impl Fn(&Value) -> bool) -> Option<Value> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(v) if pick(&v) => return Some(v),
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }

    fn response(&self, id: u64) -> Value {
        self.wait_for(Duration::from_secs(20), |v| v["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}"))
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
        self.response(id)
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn error_text(result: &Value) -> String {
    assert_eq!(result["result"]["isError"], true, "{result}");
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn stdio_survives_malformed_lines_and_answers_with_errors() {
    let ws = workspace();
    let mut s = StdioServer::start(ws.path());
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}}}));
    assert_eq!(s.response(1)["result"]["serverInfo"]["name"], "toolgate");
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // Dropped: not JSON, not UTF-8, nested past the parser's limit, over
    // rmcp's 16 MiB line limit, empty.
    s.send_raw(b"garbage{");
    s.send_raw(b"\xff\xfe\x00\x01");
    s.send_raw(nested(200_000).as_bytes());
    s.send_raw(&vec![b'x'; 17 << 20]);
    s.send_raw(b"");
    // A request nested too deeply is dropped whole: no response, ever.
    s.send_raw(
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"read","arguments":{{"path":{}}}}}}}"#,
            nested(300)
        )
        .as_bytes(),
    );
    // JSON of the wrong shape or types: a JSON-RPC error.
    s.send_raw(b"[1, 2]");
    let invalid = s
        .wait_for(Duration::from_secs(20), |v| v["error"]["code"] == -32600)
        .expect("an Invalid Request error for a batch");
    assert!(invalid.get("result").is_none());
    s.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": 5}}));
    assert!(s.response(3)["error"]["code"].is_i64());
    s.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "read", "arguments": "not an object"}}));
    assert!(s.response(4)["error"]["code"].is_i64());
    s.send(json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}));
    assert_eq!(s.response(5)["error"]["code"], -32601);

    // Still serving.
    s.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}));
    assert!(s.response(6)["result"]["tools"].as_array().is_some());
    assert!(
        s.wait_for(Duration::from_millis(300), |v| v["id"] == 2)
            .is_none(),
        "the over-deep request got no response"
    );
    assert!(
        s.not_json.lock().unwrap().is_empty(),
        "stdout held only JSON-RPC"
    );
}

#[test]
fn stdio_calls_over_a_limit_are_error_results_naming_it() {
    let ws = workspace();
    let mut s = StdioServer::start(ws.path());
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}}}));
    s.response(1);
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let deep: Value = serde_json::from_str(&nested(50)).unwrap();
    let text = error_text(&s.call(2, "read", json!({"path": deep})));
    assert!(text.contains("limits.max_argument_depth"), "{text}");
    let text = error_text(&s.call(
        3,
        "write",
        json!({"path": "big.txt", "content": "x".repeat(100_000)}),
    ));
    assert!(text.contains("limits.max_argument_bytes"), "{text}");
    assert!(!ws.path().join("big.txt").exists());
    let text = error_text(&s.call(
        4,
        "bash",
        json!({"command": format!("echo {}", "y".repeat(5_000))}),
    ));
    assert!(text.contains("limits.max_command_bytes"), "{text}");
    let text = error_text(&s.call(
        5,
        "bash",
        json!({"command": format!("{}ls", "sudo ".repeat(40))}),
    ));
    assert!(text.contains("limits.max_command_nesting"), "{text}");
    // And a good call still works.
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let ok = s.call(6, "read", json!({"path": "a.txt"}));
    assert_eq!(ok["result"]["content"][0]["text"], "hello\n", "{ok}");
    assert!(s.not_json.lock().unwrap().is_empty());
}

/// One HTTP/1.1 request; the status, the headers (lower-cased names) and
/// the body, de-chunked.
fn http(authority: &str, request: &[u8]) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    // Write on another thread while this one reads: a server may answer an
    // oversized request (413) and close before the whole body is sent, and
    // the answer must still be read (the write then fails, by design).
    let mut writer = stream.try_clone().expect("clone the stream");
    let request = request.to_vec();
    let sending = std::thread::spawn(move || {
        let _ = writer.write_all(&request);
    });
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let _ = sending.join();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, headers, body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

fn post(authority: &str, body: &[u8], extra_headers: &str) -> (u16, Vec<(String, String)>, String) {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra_headers}Content-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    http(authority, &request)
}

/// The JSON-RPC message in a JSON or event-stream body.
fn message(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str(body.trim()) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("jsonrpc").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body:.300}"))
}

#[test]
fn http_answers_malformed_bodies_with_json_rpc_errors_and_keeps_serving() {
    let ws = workspace();
    let server = HttpServer::start(&serve_args(ws.path()), ws.path());
    let host = server.authority().to_string();
    let cases: Vec<(&str, Vec<u8>, u16, i64)> = vec![
        ("garbage", b"garbage{".to_vec(), 400, -32700),
        ("invalid UTF-8", b"\"\xff\xfe\"".to_vec(), 400, -32700),
        ("deeply nested", nested(100_000).into_bytes(), 400, -32700),
        ("a batch", b"[1, 2]".to_vec(), 400, -32600),
        (
            "no jsonrpc",
            br#"{"id": 9, "method": "tools/list"}"#.to_vec(),
            400,
            -32600,
        ),
        ("oversized", vec![b' '; 5 << 20], 413, -32600),
    ];
    for (what, body, status, code) in cases {
        let (got, _, text) = post(&host, &body, "");
        assert_eq!(got, status, "{what}: {text:.200}");
        let error = message(&text);
        assert_eq!(error["error"]["code"], code, "{what}: {error}");
        assert_eq!(error["jsonrpc"], "2.0");
    }
    let (_, _, text) = post(&host, br#"{"jsonrpc": "1.0", "id": 9, "method": "x"}"#, "");
    assert_eq!(
        message(&text)["id"],
        9,
        "the id is echoed when there is one"
    );

    // Still serving: a session, a call over the depth limit, a call with
    // wrong types, a good call.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}}});
    let (status, headers, text) = post(&host, init.to_string().as_bytes(), "");
    assert_eq!(status, 200, "{text}");
    let session = headers
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .expect("a session id");
    let with = format!("Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&host, note.to_string().as_bytes(), &with).0, 202);
    let call = |id: u64, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let (status, _, text) = post(&host, body.to_string().as_bytes(), &with);
        assert_eq!(status, 200, "{text}");
        message(&text)
    };
    let deep: Value = serde_json::from_str(&nested(50)).unwrap();
    let r = call(2, json!({"name": "read", "arguments": {"path": deep}}));
    assert!(error_text(&r).contains("limits.max_argument_depth"));
    let r = call(3, json!({"name": 5}));
    assert_eq!(r["id"], 3);
    assert!(r["error"]["code"].is_i64(), "{r}");
    std::fs::write(ws.path().join("a.txt"), "hello\n").unwrap();
    let r = call(4, json!({"name": "read", "arguments": {"path": "a.txt"}}));
    assert_eq!(r["result"]["content"][0]["text"], "hello\n", "{r}");
}
