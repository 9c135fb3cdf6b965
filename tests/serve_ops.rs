//! The operations endpoints of `toolgate serve --http`, as an operator uses
//! them: `/v1/eval` answers exactly what `toolgate eval` prints, `/status`
//! never shows a rejected policy as active and names the broken file's
//! position, `/metrics` counts decisions by rule and reloads by result.

#[path = "common/serve.rs"]
mod serve;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use serve::{http_request, repo, toolgate, HttpServer};

const POLICY: &str = "version: 1\nextends: [\"builtin:default\"]\n";

fn get(server: &HttpServer, path: &str) -> (u16, String) {
    let host = server.authority();
    http_request(
        host,
        &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

fn post_eval(server: &HttpServer, body: &str) -> (u16, String) {
    let host = server.authority();
    http_request(
        host,
        &format!(
            "POST /v1/eval HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn start(dir: &Path) -> HttpServer {
    let args: Vec<String> = [
        "serve",
        "--workspace",
        dir.to_str().unwrap(),
        "--policies",
        dir.join("policies").to_str().unwrap(),
        "--manifests",
        repo().join("tool-manifests").to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    HttpServer::start(&args, dir)
}

fn status(server: &HttpServer) -> Value {
    let (code, body) = get(server, "/status");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn eval_over_http_answers_exactly_what_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::write(dir.path().join("policies/main.yaml"), POLICY).unwrap();
    let server = start(dir.path());
    for (tool, args) in [
        ("bash", r#"{"command": "git status && rm -fr /"}"#),
        ("bash", r#"{"command": "cargo test"}"#),
        ("read", r#"{"path": ".env"}"#),
        ("read", r#"{"path": "src/main.rs"}"#),
        ("nope", r#"{}"#),
    ] {
        let (code, body) = post_eval(
            &server,
            &format!("{{\"name\": \"{tool}\", \"arguments\": {args}}}"),
        );
        assert_eq!(code, 200, "{body}");
        let cli = Command::new(toolgate())
            .args(["eval", "--workspace"])
            .arg(dir.path())
            .args(["--policies"])
            .arg(dir.path().join("policies"))
            .args(["--manifests"])
            .arg(repo().join("tool-manifests"))
            .args(["--tool", tool, "--args", args])
            .output()
            .unwrap();
        assert_eq!(
            body.trim(),
            String::from_utf8_lossy(&cli.stdout).trim(),
            "{tool} {args}"
        );
    }
    let (code, body) = post_eval(&server, "{\"name\": \"read\", \"arguments\": 5}");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("arguments"), "{body}");
    let (code, _) = post_eval(&server, "not json");
    assert_eq!(code, 400);
}

#[test]
fn status_and_metrics_follow_reloads_and_never_show_a_rejected_policy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    let policy = dir.path().join("policies/main.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = start(dir.path());
    let first = status(&server);
    let good = first["version"].as_str().unwrap().to_string();
    assert!(first["last_reload_error"].is_null());

    post_eval(
        &server,
        r#"{"name": "bash", "arguments": {"command": "rm -rf /"}}"#,
    );
    let (_, metrics) = get(&server, "/metrics");
    assert!(
        metrics.contains(
            "toolgate_decisions_total{source=\"eval\",tool=\"bash\",decision=\"deny\",rule=\"no-recursive-delete\"} 1"
        ),
        "{metrics}"
    );
    assert!(metrics.contains(&format!("toolgate_policy_info{{version=\"{good}\"}} 1")));

    // A broken save: the old policy stays active and /status says why.
    std::fs::write(&policy, "version: 1\ntools:\n  actve: [read]\n").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let broken = loop {
        let s = status(&server);
        if !s["last_reload_error"].is_null() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the broken save was never reported"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        broken["version"],
        good.as_str(),
        "a rejected policy is not active"
    );
    let error = broken["last_reload_error"].to_string();
    assert!(error.contains("main.yaml:3:3"), "{error}");
    assert!(error.contains("actve"), "{error}");
    let (_, metrics) = get(&server, "/metrics");
    assert!(
        metrics.contains("toolgate_reloads_total{result=\"failed\"} 1"),
        "{metrics}"
    );

    // The fix applies and clears the error.
    std::fs::write(&policy, format!("# fixed\n{POLICY}")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = status(&server);
        if s["last_reload_error"].is_null() && s["version"] != good.as_str() {
            break;
        }
        assert!(Instant::now() < deadline, "the fix was never applied");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, metrics) = get(&server, "/metrics");
    assert!(
        metrics.contains("toolgate_reloads_total{result=\"ok\"} 1"),
        "{metrics}"
    );
}
