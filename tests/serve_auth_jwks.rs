//! `auth.jwt.jwks_url`: keys fetched from the identity provider when the
//! policy loads, fetched again for an unknown `kid`, kept while the provider
//! is down for `jwks_max_age` and then refused (fail closed), and picked up
//! again when it is back. The provider is a small HTTP server in this test;
//! the JWTs are made by tests/mcp/auth_client.py (PyJWT and cryptography,
//! from `bash tests/mcp/install.sh`).

#[path = "common/serve.rs"]
mod serve;

use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use serve::{jwks_provider, repo, toolgate, HttpServer, Served};

fn provider() -> (String, Served) {
    let (port, served) = jwks_provider();
    (format!("http://127.0.0.1:{port}/jwks.json"), served)
}

fn status(server: &HttpServer, token: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(server.authority()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET /status HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n",
        server.authority()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (code, response)
}

fn policy(url: &str) -> String {
    format!(
        "version: 1\ntools:\n  active: [read, ls, bash]\n  profiles:\n    readonly: [read, ls]\nauth:\n  required: true\n  jwt:\n    issuer: https://idp.test\n    audience: toolgate\n    jwks_url: {url}\n    jwks_max_age: 4s\n    profile_claim: toolgate_profile\n"
    )
}

#[test]
fn keys_from_a_url_are_refreshed_and_fail_closed_when_too_old() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    let out = Command::new(repo().join("tests/mcp/.venv/bin/python"))
        .arg(repo().join("tests/mcp/auth_client.py"))
        .arg("--make-jwts")
        .arg(dir.path())
        .output()
        .expect("tests/mcp/.venv (bash tests/mcp/install.sh)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    let (jwks, tokens) = (read("jwks.json"), read("tokens.json"));
    let rsa_only = json!({"keys": [jwks["keys"][0].clone()]}).to_string();
    let (rs256, es256) = (
        tokens["rs256_full"].as_str().unwrap(),
        tokens["es256_readonly"].as_str().unwrap(),
    );
    let (url, served) = provider();
    std::fs::write(dir.path().join("policies/main.yaml"), policy(&url)).unwrap();
    let args: Vec<String> = vec![
        "serve".into(),
        "--no-watch".into(),
        "--workspace".into(),
        dir.path().display().to_string(),
        "--policies".into(),
        dir.path().join("policies").display().to_string(),
        "--manifests".into(),
        repo().join("tool-manifests").display().to_string(),
    ];

    // The provider is down when the policy loads: nothing serves.
    let out = Command::new(toolgate())
        .args(&args)
        .args(["--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot fetch the JWKS") && err.contains("503"),
        "{err}"
    );

    // Up with the RSA key only: the RS256 token passes; the ES256 one names
    // a `kid` the gateway fetches again for once the provider publishes it.
    *served.lock().unwrap() = Some(rsa_only);
    let server = HttpServer::start(&args, dir.path());
    assert_eq!(status(&server, rs256).0, 200);
    std::thread::sleep(Duration::from_millis(1200)); // the least time between fetches
    let (code, response) = status(&server, es256);
    assert_eq!(code, 401, "kid not published yet: {response}");
    assert!(response.contains("names no known key"), "{response}");
    *served.lock().unwrap() = Some(jwks.to_string());
    std::thread::sleep(Duration::from_millis(1200));
    let (code, response) = status(&server, es256);
    assert_eq!(code, 200, "fetched again for an unknown kid: {response}");

    // The provider goes down: the last keys serve until jwks_max_age (4 s),
    // then every JWT is refused, cached ones too.
    *served.lock().unwrap() = None;
    assert_eq!(status(&server, rs256).0, 200);
    std::thread::sleep(Duration::from_millis(4500));
    let (code, response) = status(&server, rs256);
    assert_eq!(code, 401, "keys too old: {response}");
    assert!(response.contains("could not be refreshed"), "{response}");

    // Back up: the next request fetches fresh keys and passes.
    *served.lock().unwrap() = Some(jwks.to_string());
    std::thread::sleep(Duration::from_millis(1200));
    let (code, response) = status(&server, rs256);
    assert_eq!(code, 200, "provider back: {response}");
}

#[test]
fn https_and_malformed_jwks_urls_are_load_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (url, why) in [
        (
            "https://idp.example.com/jwks.json",
            "https is not supported",
        ),
        (
            "ftp://idp.example.com/jwks.json",
            "is not an `http://HOST[:PORT]/PATH` URL",
        ),
    ] {
        let file = dir.path().join("p.yaml");
        std::fs::write(&file, policy(url)).unwrap();
        let out = Command::new(toolgate())
            .args(["check", "--policies"])
            .arg(&file)
            .args(["--manifests"])
            .arg(repo().join("tool-manifests"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{url}");
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("p.yaml:11:15") && text.contains(why),
            "{url}: {text}"
        );
    }
}
