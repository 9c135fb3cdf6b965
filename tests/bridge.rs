//! `toolgate bridge --stdio` as a host sees it: a real process, JSON lines
//! on its stdin and stdout. Malformed lines, concurrent answers, hot reload
//! on a real file change, and failing closed when the policy is broken.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const ALLOW_BASH: &str = "version: 1\nextends: [\"builtin:default\"]\n";
// Active lists of layered policies add up, so this one stands alone.
const NO_BASH: &str = "version: 1\ntools:\n  active: [read, grep, find, ls, edit, write]\n";

/// A running bridge: send lines, receive parsed lines (with a deadline).
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
}

impl Bridge {
    fn start(workspace: &Path, policies: &Path) -> Bridge {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["bridge", "--stdio", "--workspace"])
            .arg(workspace)
            .arg("--policies")
            .arg(policies)
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("toolgate bridge starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the bridge wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Bridge {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> Value {
        match self.lines.recv_timeout(Duration::from_secs(30)) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!("the bridge did not answer within 30 s"),
            Err(RecvTimeoutError::Disconnected) => panic!("the bridge closed its stdout"),
        }
    }

    /// The next answer line (skipping `reloaded` lines).
    fn answer(&self) -> Value {
        loop {
            let v = self.next();
            if v.get("type") != Some(&json!("reloaded")) {
                return v;
            }
        }
    }

    fn ask(&mut self, request: Value) -> Value {
        let id = request["id"].clone();
        self.send(&request.to_string());
        let answer = self.answer();
        assert_eq!(answer["id"], id, "answer for another request: {answer}");
        answer
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(policy: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("policy.yaml"), policy).unwrap();
    (dir, policies)
}

fn before(id: u64, tool: &str, input: Value) -> Value {
    json!({"id": id, "type": "before", "call_id": format!("c{id}"), "tool": tool, "input": input})
}

#[test]
fn decisions_come_from_the_policy_with_the_rule_that_decided() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut b = Bridge::start(dir.path(), &policies);
    let read = b.ask(before(1, "read", json!({"path": "notes.txt"})));
    assert_eq!(read["decision"], "allow", "{read}");
    let env = b.ask(before(2, "read", json!({"path": ".env"})));
    assert_eq!(env["decision"], "deny", "{env}");
    assert_eq!(env["rule"], "paths.deny[**/.env]");
    let rm = b.ask(before(3, "bash", json!({"command": "rm -rf /"})));
    assert_eq!(rm["decision"], "deny", "{rm}");
    assert!(rm["reason"].as_str().unwrap().contains("rm -rf /"), "{rm}");
    let push = b.ask(before(4, "bash", json!({"command": "git push"})));
    assert_eq!(push["decision"], "ask", "{push}");
    // Invalid arguments are refused as the executor refuses them.
    let bad = b.ask(before(5, "read", json!({"path": 3, "offset": "x"})));
    assert_eq!(bad["decision"], "deny", "{bad}");
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("Validation failed"),
        "{bad}"
    );
    // A host's own tool: the policy's `tools.unknown` (ask by default).
    let own = b.ask(before(6, "todo", json!({})));
    assert_eq!(own["decision"], "ask", "{own}");
    assert_eq!(own["rule"], "tools.unknown");
}

#[test]
fn results_are_redacted_in_content_details_and_error_texts() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut b = Bridge::start(dir.path(), &policies);
    let secret = "ghp_0123456789abcdefghij0123456789abcdef";
    let answer = b.ask(json!({
        "id": "a1", "type": "after", "call_id": "c1", "tool": "bash",
        "input": {"command": "env"},
        "content": [{"type": "text", "text": format!("TOKEN={secret}\nok")}],
        "details": {"fullOutputPath": "/tmp/x", "note": secret},
        "is_error": true,
    }));
    let text = answer.to_string();
    assert!(!text.contains(secret), "a secret got through: {answer}");
    assert_eq!(
        answer["content"][0]["text"],
        "TOKEN=[REDACTED:github-pat]\nok"
    );
    assert_eq!(answer["details"]["note"], "[REDACTED:github-pat]");
    assert_eq!(answer["is_error"], true);
    assert_eq!(answer["redacted"], 2);
    let clean = b.ask(json!({
        "id": 2, "type": "after", "tool": "read", "input": {"path": "notes.txt"},
        "content": [{"type": "text", "text": "hello\n"}], "details": {}, "is_error": false,
    }));
    assert_eq!(
        clean["content"],
        json!([{"type": "text", "text": "hello\n"}])
    );
    assert_eq!(clean["redacted"], 0);
    assert_eq!(clean["terminate"], false);
}

#[test]
fn a_malformed_line_gets_an_error_answer_and_the_bridge_keeps_serving() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut b = Bridge::start(dir.path(), &policies);
    let cases: [(&str, Value, &str); 7] = [
        ("not json", Value::Null, "not valid JSON"),
        ("[1,2]", Value::Null, "JSON object"),
        (r#"{"type":"before"}"#, Value::Null, "no `id`"),
        (
            r#"{"id":7,"type":"launch"}"#,
            json!(7),
            "unknown request type `launch`",
        ),
        (
            r#"{"id":8,"type":"before","input":{}}"#,
            json!(8),
            "no `tool`",
        ),
        (
            r#"{"id":9,"type":"before","tool":"read","input":"x"}"#,
            json!(9),
            "must be a JSON object",
        ),
        (
            r#"{"id":10,"type":"after","tool":"read","content":"x"}"#,
            json!(10),
            "`content` must be an array",
        ),
    ];
    for (line, id, message) in cases {
        b.send(line);
        let answer = b.answer();
        assert_eq!(answer["id"], id, "{line} -> {answer}");
        let error = answer["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error for {line}: {answer}"));
        assert!(error.contains(message), "{line} -> {error}");
        assert!(
            answer.get("decision").is_none(),
            "an error answer decided: {answer}"
        );
    }
    // Invalid UTF-8 too.
    b.stdin.as_mut().unwrap().write_all(b"\xff\xfe\n").unwrap();
    let answer = b.answer();
    assert!(
        answer["error"].as_str().unwrap().contains("UTF-8"),
        "{answer}"
    );
    let ok = b.ask(before(11, "read", json!({"path": "notes.txt"})));
    assert_eq!(ok["decision"], "allow");
}

#[test]
fn requests_are_answered_concurrently_and_each_once() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut b = Bridge::start(dir.path(), &policies);
    // A slow request first (redacting 24 MB), then quick ones: the quick
    // ones are answered while the slow one is still being worked on.
    let big = "token ghp_0123456789abcdefghij0123456789abcdef and some text\n".repeat(400_000);
    b.send(
        &json!({"id": "slow", "type": "after", "tool": "bash", "input": {"command": "x"},
                "content": [{"type": "text", "text": big}], "details": {}, "is_error": false})
        .to_string(),
    );
    let n = 200;
    let mut burst = String::new();
    for i in 0..n {
        burst.push_str(&before(i, "read", json!({"path": "notes.txt"})).to_string());
        burst.push('\n');
    }
    let stdin = b.stdin.as_mut().unwrap();
    stdin.write_all(burst.as_bytes()).unwrap();
    stdin.flush().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut slow_at = None;
    for k in 0..=n {
        let answer = b.answer();
        if answer["id"] == "slow" {
            slow_at = Some(k);
            assert!(
                answer["redacted"].as_u64().unwrap() >= 400_000,
                "the slow after was not redacted"
            );
            continue;
        }
        assert_eq!(answer["decision"], "allow", "{answer}");
        assert!(
            seen.insert(answer["id"].as_u64().unwrap()),
            "answered twice: {answer}"
        );
    }
    assert_eq!(seen.len(), n as usize);
    assert!(
        slow_at.unwrap() > 0,
        "the slow request was answered before every quick one: requests ran one at a time"
    );
}

#[test]
fn a_policy_change_on_disk_is_announced_and_decides_the_next_call() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut b = Bridge::start(dir.path(), &policies);
    let ls = b.ask(before(1, "bash", json!({"command": "ls"})));
    assert_eq!(ls["decision"], "allow", "{ls}");
    let status = b.ask(json!({"id": 2, "type": "status"}));
    let first_version = status["version"].as_str().unwrap().to_string();
    assert_eq!(status["reloads_ok"], 0);

    // An editor-style save: a new file renamed over the old one.
    let tmp = policies.join(".policy.yaml.tmp");
    std::fs::write(&tmp, NO_BASH).unwrap();
    std::fs::rename(&tmp, policies.join("policy.yaml")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let reloaded = loop {
        assert!(
            Instant::now() < deadline,
            "no `reloaded` line after the policy changed"
        );
        let v = b.next();
        if v["type"] == "reloaded" {
            break v;
        }
    };
    assert_ne!(reloaded["version"], first_version.as_str());
    assert_eq!(
        reloaded["active"],
        json!(["read", "grep", "find", "ls", "edit", "write"])
    );
    let ls = b.ask(before(3, "bash", json!({"command": "ls"})));
    assert_eq!(ls["decision"], "deny", "bash is no longer active: {ls}");
    let tools = b.ask(json!({"id": 4, "type": "tools"}));
    assert_eq!(tools["tools"], reloaded["active"]);

    // A broken save keeps the last good policy, and status says why.
    std::fs::write(policies.join("policy.yaml"), "version: 1\ntools: [\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = b.ask(json!({"id": 5, "type": "status"}));
        if status["reloads_failed"].as_u64().unwrap() > 0 {
            assert_eq!(status["version"], reloaded["version"]);
            assert!(status["last_reload_error"][0]
                .as_str()
                .unwrap()
                .contains("policy.yaml"));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the broken save was never reported: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let ls = b.ask(before(6, "bash", json!({"command": "ls"})));
    assert_eq!(
        ls["decision"], "deny",
        "the last good policy still decides: {ls}"
    );
}

#[test]
fn a_broken_policy_at_start_serves_nothing() {
    let (dir, policies) = setup("version: 1\ntools: [\n");
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["bridge", "--stdio", "--workspace"])
        .arg(dir.path())
        .arg("--policies")
        .arg(&policies)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let sent = child
                .stdin
                .take()
                .unwrap()
                .write_all(b"{\"id\":1,\"type\":\"before\",\"tool\":\"read\",\"input\":{\"path\":\"notes.txt\"}}\n");
            // The bridge may already have refused to start and closed its
            // stdin: a broken pipe here is the outcome under test, not a
            // failure to write.
            match sent {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e),
                _ => {}
            }
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a broken policy must stop the bridge"
    );
    assert!(
        out.stdout.is_empty(),
        "a broken bridge answered: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("policy.yaml") && stderr.contains("did not load"),
        "{stderr}"
    );
}

#[test]
fn every_request_read_is_answered_before_the_bridge_exits() {
    let (dir, policies) = setup(ALLOW_BASH);
    let mut input = String::new();
    for i in 0..50 {
        input.push_str(&before(i, "read", json!({"path": "notes.txt"})).to_string());
        input.push('\n');
    }
    // No trailing newline on the last request: it still counts.
    input.push_str(r#"{"id":"last","type":"tools"}"#);
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["bridge", "--stdio", "--no-watch", "--workspace"])
        .arg(dir.path())
        .arg("--policies")
        .arg(&policies)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 51);
    assert!(answers
        .iter()
        .any(|a| a["id"] == "last" && a["tools"].is_array()));
}
