//! Authentication of `serve --http` (policy `auth:`), end to end: the
//! official Python MCP SDK over Streamable HTTP with `Authorization`
//! headers, static tokens with profiles, JWTs signed in the test with RS256
//! and ES256 keys made on the fly (good ones, and every kind of bad one),
//! the 401 challenge and the Protected Resource Metadata, the decision log's
//! identity, `--allow-remote` without auth, and a reload that breaks `auth`.
//!
//! The SDK comes from `bash tests/mcp/install.sh` (its dependencies PyJWT
//! and cryptography make the keys and tokens); these tests fail, never skip,
//! when it is missing.

#[path = "common/serve.rs"]
mod serve;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use serve::{repo, toolgate, HttpServer};
use toolgate::config::ConfigPaths;
use toolgate::serve::{Gateway, GatewayConfig, ReloadOutcome};

const FULL_TOKEN: &str = "full-token-0123456789abcdef";
const CI_TOKEN: &str = "ci-token-0123456789abcdef";

fn sha256(token: &str) -> String {
    let mut child = Command::new(toolgate())
        .args(["auth", "hash-token", "--id", "x"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{token}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    let hex = line.split('"').nth(3).unwrap().to_string();
    assert_eq!(hex.len(), 64, "{line}");
    hex
}

fn python() -> PathBuf {
    let dir = repo().join("tests/mcp");
    if !dir.join(".venv/bin/python").exists() {
        let out = Command::new("bash")
            .arg(dir.join("install.sh"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tests/mcp/install.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dir.join(".venv/bin/python")
}

fn client(args: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(repo().join("tests/mcp/auth_client.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "auth_client.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

/// A workspace, a policy with `auth:` (static tokens, JWTs from a JWKS made
/// now), and the JWTs.
struct Fixture {
    dir: tempfile::TempDir,
    tokens: Value,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::fs::create_dir_all(dir.path().join("policies")).unwrap();
        std::fs::write(dir.path().join("ws/notes.txt"), "hello from notes\n").unwrap();
        std::fs::write(dir.path().join("ws/secret.txt"), "not for ci\n").unwrap();
        client(&["--make-jwts", dir.path().to_str().unwrap()]);
        let tokens =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("tokens.json")).unwrap())
                .unwrap();
        let f = Fixture { dir, tokens };
        f.write_policy(&f.policy(true));
        f
    }

    fn policy(&self, required: bool) -> String {
        format!(
            r#"version: 1
tools:
  active: [read, ls, bash]
  profiles:
    readonly: [read, ls]
commands:
  unparsed: allow
  default: allow
rules:
  - id: ci-no-secret
    identities: ["ci-*"]
    tools: [read]
    when: {{ arg: path, glob: "secret.txt" }}
    decision: deny
    reason: CI jobs do not read secret.txt
auth:
  required: {required}
  tokens:
    - {{ id: dev, sha256: "{}" }}
    - {{ id: ci-bot, sha256: "{}", profile: readonly }}
  jwt:
    issuer: https://idp.test
    audience: toolgate
    jwks_file: ../jwks.json
    profile_claim: toolgate_profile
  resource_metadata:
    authorization_servers: ["https://idp.test"]
"#,
            sha256(FULL_TOKEN),
            sha256(CI_TOKEN)
        )
    }

    fn write_policy(&self, text: &str) {
        std::fs::write(self.dir.path().join("policies/main.yaml"), text).unwrap();
    }

    fn jwt(&self, name: &str) -> String {
        self.tokens[name].as_str().unwrap().to_string()
    }

    fn args(&self) -> Vec<String> {
        vec![
            "serve".into(),
            "--no-watch".into(),
            "--workspace".into(),
            self.dir.path().join("ws").display().to_string(),
            "--policies".into(),
            self.dir.path().join("policies").display().to_string(),
            "--manifests".into(),
            repo().join("tool-manifests").display().to_string(),
            "--decision-log".into(),
            self.log().display().to_string(),
        ]
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("decisions.jsonl")
    }

    fn start(&self) -> HttpServer {
        HttpServer::start(&self.args(), self.dir.path())
    }
}

/// One raw HTTP/1.1 request: status, headers (lowercase names) and body.
fn request(
    server: &HttpServer,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &str,
) -> (u16, String, String) {
    let mut stream = std::net::TcpStream::connect(server.authority()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let auth = auth
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.authority(),
        body.len()
    );
    stream.write_all(req.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn assert_401(server: &HttpServer, path: &str, auth: Option<&str>, why: &str) {
    let method = if path == "/v1/eval" || path == "/mcp" {
        "POST"
    } else {
        "GET"
    };
    let (status, head, _) = request(server, method, path, auth, "{}");
    assert_eq!(status, 401, "{why}: {path}\n{head}");
    let expected = format!(
        "www-authenticate: bearer realm=\"toolgate\", resource_metadata=\"http://{}/.well-known/oauth-protected-resource\"",
        server.authority()
    );
    assert!(head.contains(&expected), "{why}: {head}");
    if auth.is_some() {
        assert!(head.contains("error=\"invalid_token\""), "{why}: {head}");
    }
}

#[test]
fn static_tokens_give_identities_and_profiles_over_the_python_sdk() {
    let f = Fixture::new();
    let server = f.start();
    let url = format!("{}/mcp", server.base);

    for (token, why) in [
        (None, "no token"),
        (Some("wrong-token-0123456789"), "wrong"),
    ] {
        let mut args = vec!["--url", url.as_str()];
        if let Some(t) = token {
            args.extend(["--token", t]);
        }
        let r = client(&args);
        assert!(r["error"].is_string(), "{why}: {r}");
        assert_eq!(r["statuses"][0], 401, "{why}: {r}");
        assert!(r.get("tools").is_none(), "{why}: {r}");
    }

    for mode in ["auto", "legacy"] {
        let ci = client(&["--url", &url, "--mode", mode, "--token", CI_TOKEN]);
        assert_eq!(ci["tools"], serde_json::json!(["read", "ls"]), "{ci}");
        assert_eq!(ci["bash"]["code"], -32602, "bash is not callable: {ci}");
        assert!(
            ci["bash"]["message"]
                .as_str()
                .unwrap()
                .contains("Tool bash not found"),
            "{ci}"
        );
        assert_eq!(ci["read"]["is_error"], false, "{ci}");
        assert!(ci["read"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from notes"));

        let dev = client(&["--url", &url, "--mode", mode, "--token", FULL_TOKEN]);
        assert_eq!(
            dev["tools"],
            serde_json::json!(["read", "ls", "bash"]),
            "{dev}"
        );
        assert_eq!(dev["bash"]["is_error"], false, "{dev}");
        assert!(
            dev["bash"]["text"].as_str().unwrap().contains("via-bash"),
            "{dev}"
        );
    }

    // Rules scoped to identities: ci-* may not read secret.txt, dev may.
    let call = r#"{"name":"read","arguments":{"path":"secret.txt"}}"#;
    let (status, _, body) = request(&server, "POST", "/v1/eval", Some(&bearer(CI_TOKEN)), call);
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["decision"].as_str(), v["rule"].as_str()),
        (Some("deny"), Some("ci-no-secret")),
        "{body}"
    );
    let (_, _, body) = request(&server, "POST", "/v1/eval", Some(&bearer(FULL_TOKEN)), call);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["decision"], "allow", "{body}");
    // /v1/eval answers for the caller's profile too.
    let bash = r#"{"name":"bash","arguments":{"command":"ls"}}"#;
    let (_, _, body) = request(&server, "POST", "/v1/eval", Some(&bearer(CI_TOKEN)), bash);
    assert!(body.contains("Tool bash not found"), "{body}");

    // The decision log names who called, never the token.
    let log = std::fs::read_to_string(f.log()).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["identity"] == "ci-bot"
            && l["tool"] == "read"
            && l["profile"] == "readonly"),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["identity"] == "dev" && l["tool"] == "bash"),
        "{log}"
    );
    for secret in [FULL_TOKEN, CI_TOKEN] {
        assert!(!log.contains(secret), "the log holds a token: {log}");
    }
    // Metrics carry the identity label (token ids), and need a token too.
    let (status, _, metrics) = request(&server, "GET", "/metrics", Some(&bearer(FULL_TOKEN)), "");
    assert_eq!(status, 200);
    assert!(metrics.contains("identity=\"ci-bot\""), "{metrics}");
    assert!(metrics.contains("identity=\"dev\""), "{metrics}");
    let (_, _, status_body) = request(&server, "GET", "/status", Some(&bearer(CI_TOKEN)), "");
    for secret in [FULL_TOKEN, CI_TOKEN] {
        assert!(!status_body.contains(secret), "{status_body}");
        assert!(!metrics.contains(secret), "{metrics}");
    }
}

#[test]
fn every_endpoint_but_healthz_needs_a_token() {
    let f = Fixture::new();
    let server = f.start();
    for path in ["/status", "/metrics", "/v1/eval", "/mcp"] {
        assert_401(&server, path, None, "no token");
        assert_401(
            &server,
            path,
            Some("Bearer nope-0123456789abcdef"),
            "wrong token",
        );
        assert_401(&server, path, Some("Basic ZGV2OnB3"), "not bearer");
    }
    let (status, _, body) = request(&server, "GET", "/healthz", None, "");
    assert_eq!((status, body.trim()), (200, "ok"));
    let (status, head, body) = request(
        &server,
        "GET",
        "/.well-known/oauth-protected-resource",
        None,
        "",
    );
    assert_eq!(status, 200, "{head}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        doc["authorization_servers"],
        serde_json::json!(["https://idp.test"])
    );
    assert_eq!(doc["resource"], format!("{}/mcp", server.base));
    assert_eq!(
        doc["bearer_methods_supported"],
        serde_json::json!(["header"])
    );
    let (status, _, _) = request(&server, "GET", "/status", Some(&bearer(FULL_TOKEN)), "");
    assert_eq!(status, 200);
}

#[test]
fn jwts_signed_with_rs256_and_es256_are_accepted_and_every_bad_one_refused() {
    let f = Fixture::new();
    let server = f.start();
    let url = format!("{}/mcp", server.base);

    let alice = client(&["--url", &url, "--token", &f.jwt("rs256_full")]);
    assert_eq!(
        alice["tools"],
        serde_json::json!(["read", "ls", "bash"]),
        "{alice}"
    );
    assert_eq!(alice["bash"]["is_error"], false, "{alice}");
    let ci = client(&[
        "--url",
        &url,
        "--mode",
        "legacy",
        "--token",
        &f.jwt("es256_readonly"),
    ]);
    assert_eq!(ci["tools"], serde_json::json!(["read", "ls"]), "{ci}");
    assert_eq!(ci["bash"]["code"], -32602, "{ci}");

    for (name, why) in [
        ("expired", "has expired"),
        ("not_yet", "not valid yet"),
        ("wrong_aud", "audience"),
        ("wrong_iss", "issuer"),
        ("unknown_kid", "`kid` names no known key"),
        ("other_key", "signature does not verify"),
        ("no_exp", "`exp`"),
        ("unknown_profile", "names no profile"),
        ("es_key_says_rs256", "not accepted for this key"),
        ("alg_none", "supported algorithm"),
        ("hs256_confusion", "not accepted"),
    ] {
        let token = f.jwt(name);
        let (status, head, body) = request(&server, "POST", "/mcp", Some(&bearer(&token)), "{}");
        assert_eq!(status, 401, "{name}: {head}{body}");
        assert!(head.contains("error=\"invalid_token\""), "{name}: {head}");
        assert!(
            body.contains(why) || head.contains(&why.to_ascii_lowercase()),
            "{name}: {body}"
        );
        assert!(!body.contains(&token) && !head.contains(&token.to_ascii_lowercase()));
    }
    // One of them through the SDK too: it fails before listing anything.
    let r = client(&["--url", &url, "--token", &f.jwt("hs256_confusion")]);
    assert!(r["error"].is_string() && r.get("tools").is_none(), "{r}");
    assert_eq!(r["statuses"][0], 401, "{r}");

    let log = std::fs::read_to_string(f.log()).unwrap();
    assert!(log.contains("\"identity\":\"alice@example.com\""), "{log}");
    assert!(log.contains("\"identity\":\"ci@example.com\""), "{log}");
    assert!(!log.contains(&f.jwt("rs256_full")), "{log}");
    // JWT callers are counted by profile, not by subject.
    let (_, _, metrics) = request(&server, "GET", "/metrics", Some(&bearer(FULL_TOKEN)), "");
    assert!(metrics.contains("identity=\"jwt:default\""), "{metrics}");
    assert!(metrics.contains("identity=\"jwt:readonly\""), "{metrics}");
    assert!(!metrics.contains("alice"), "{metrics}");
}

#[test]
fn allow_remote_needs_auth_required() {
    let f = Fixture::new();
    f.write_policy("version: 1\n");
    let run = |extra: &[&str]| {
        let mut cmd = Command::new(toolgate());
        cmd.args(f.args())
            .args(["--http", "127.0.0.1:0", "--allow-remote"])
            .args(extra)
            .current_dir(f.dir.path());
        cmd
    };
    let out = run(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("auth.required: true"), "{stderr}");
    // auth present but not required: still refused.
    f.write_policy(&f.policy(false));
    let out = run(&[]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --insecure-no-auth starts it, loudly.
    f.write_policy("version: 1\n");
    let mut child = run(&["--insecure-no-auth"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    let mut stderr = child.stderr.take().unwrap();
    let mut buf = [0u8; 4096];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !err.contains("serving MCP") && std::time::Instant::now() < deadline {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => err.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(err.contains("WARNING: --insecure-no-auth"), "{err}");
    assert!(err.contains("serving MCP"), "{err}");
    // With auth.required it starts without a warning.
    f.write_policy(&f.policy(true));
    let server = HttpServer::start(
        &[f.args(), vec!["--allow-remote".into()]].concat(),
        f.dir.path(),
    );
    assert_401(&server, "/status", None, "allow-remote with auth");
}

fn gateway(f: &Fixture, require_auth: bool) -> Arc<Gateway> {
    Gateway::start(GatewayConfig {
        paths: ConfigPaths {
            policies: Some(f.dir.path().join("policies")),
            manifests: Some(repo().join("tool-manifests")),
        },
        workspace: f.dir.path().join("ws"),
        decision_log: Some(f.log()),
        require_auth,
        ..GatewayConfig::default()
    })
    .unwrap()
}

#[test]
fn a_reload_that_breaks_auth_keeps_the_last_good_policy() {
    let f = Fixture::new();
    let gw = gateway(&f, true);
    let check = |gw: &Gateway, token: &str| {
        gw.authenticator()
            .expect("auth configured")
            .check_token(token)
            .map(|i| i.id)
    };
    assert_eq!(check(&gw, CI_TOKEN).as_deref(), Ok("ci-bot"));
    let good = gw.status().version;

    // A malformed hash: rejected with FILE:LINE:COL, the old tokens still work.
    let broken = f.policy(true).replace(&sha256(CI_TOKEN), "abc");
    f.write_policy(&broken);
    assert!(matches!(gw.reload(), ReloadOutcome::Rejected(_)));
    let status = gw.status();
    assert_eq!(status.version, good);
    let errors = status.last_reload_error.unwrap().join("\n");
    assert!(
        errors.contains("main.yaml:") && errors.contains("`sha256` must be 64 hex digits"),
        "{errors}"
    );
    assert_eq!(check(&gw, CI_TOKEN).as_deref(), Ok("ci-bot"));

    // A JWKS that cannot be read.
    f.write_policy(&f.policy(true).replace("../jwks.json", "../gone.json"));
    assert!(matches!(gw.reload(), ReloadOutcome::Rejected(_)));
    assert_eq!(gw.status().version, good);

    // Dropping `auth.required` while serving other hosts: rejected too.
    f.write_policy(&f.policy(false));
    assert!(matches!(gw.reload(), ReloadOutcome::Rejected(_)));
    assert_eq!(gw.status().version, good);
    assert!(gw.authenticator().unwrap().required());

    // A good change applies: a new token replaces the old ones.
    let new_token = "new-token-0123456789abcdef";
    f.write_policy(
        &f.policy(true)
            .replace(&sha256(CI_TOKEN), &sha256(new_token)),
    );
    assert!(matches!(gw.reload(), ReloadOutcome::Applied { .. }));
    assert_eq!(check(&gw, new_token).as_deref(), Ok("ci-bot"));
    assert!(check(&gw, CI_TOKEN).is_err());
}

#[test]
fn hash_token_prints_the_entry_to_paste_and_refuses_weak_tokens() {
    let run = |input: &str, args: &[&str]| {
        let mut child = Command::new(toolgate())
            .args(["auth", "hash-token"])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(
        "test-token-0123456789\n",
        &["--id", "ci-bot", "--profile", "readonly"],
    );
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    // sha256("test-token-0123456789")
    assert!(line.starts_with("- { id: \"ci-bot\", sha256: \""), "{line}");
    assert!(
        line.trim_end().ends_with(", profile: \"readonly\" }"),
        "{line}"
    );
    assert!(!line.contains("test-token"), "{line}");
    let yaml: Value = serde_yaml::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(yaml[0]["id"], "ci-bot");
    for (input, why) in [
        ("", "no token"),
        ("short\n", "guessed"),
        ("has spaces in it 0123456789\n", "characters"),
    ] {
        let out = run(input, &[]);
        assert_eq!(out.status.code(), Some(2), "{input:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{input:?}: {err}");
    }
}
