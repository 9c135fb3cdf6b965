//! Starting `toolgate serve` for tests: the binary, loopback only, killed
//! when the handle drops.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The toolgate binary under test.
pub fn toolgate() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_toolgate"))
}

/// Starts `toolgate ARGS --stdio` with stdin and stdout piped (stderr
/// dropped), for a test that speaks raw JSON-RPC lines to it.
pub fn spawn_stdio(args: &[String]) -> Child {
    Command::new(toolgate())
        .args(args)
        .arg("--stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start toolgate serve --stdio")
}

/// `serve` arguments for the client-test policy with the built-in tools.
pub fn client_test_args(workspace: &Path) -> Vec<String> {
    vec![
        "serve".into(),
        "--no-watch".into(),
        "--workspace".into(),
        workspace.display().to_string(),
        "--policies".into(),
        repo().join("tests/mcp/policies").display().to_string(),
        "--manifests".into(),
        repo().join("tool-manifests").display().to_string(),
    ]
}

/// A running `toolgate serve --http 127.0.0.1:0`.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Lines the server wrote to stderr after its address line.
    pub stderr: mpsc::Receiver<String>,
}

impl HttpServer {
    /// Starts the server with `args` (after `serve`) and waits for its address.
    pub fn start(args: &[String], cwd: &Path) -> HttpServer {
        let mut child = Command::new(toolgate())
            .args(args)
            .args(["--http", "127.0.0.1:0"])
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolgate serve --http");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut base = None;
        while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
            if let Some(rest) = line.strip_prefix("toolgate: serving MCP on ") {
                base = rest
                    .split_whitespace()
                    .next()
                    .map(|u| u.trim_end_matches("/mcp").to_string());
                break;
            }
        }
        let Some(base) = base else {
            let _ = child.kill();
            panic!("toolgate serve --http did not print its address");
        };
        HttpServer {
            child,
            base,
            stderr: rx,
        }
    }

    /// `host:port`.
    pub fn authority(&self) -> &str {
        self.base.trim_start_matches("http://")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One raw HTTP/1.1 request; returns the status code and the body.
pub fn http_request(authority: &str, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// What [`jwks_provider`] answers: a JWKS body, or 503 while `None`.
pub type Served = Arc<Mutex<Option<String>>>;

/// A small identity provider on 127.0.0.1 for `auth.jwt.jwks_url`: its port
/// and what it serves (503 until a JWKS is set).
pub fn jwks_provider() -> (u16, Served) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served: Served = Arc::new(Mutex::new(None));
    let state = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let answer = match state.lock().unwrap().clone() {
                Some(body) => format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                ),
                None => "HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_string(),
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, served)
}
