//! What checking a caller costs per HTTP request: a static bearer token
//! (SHA-256 and a constant-time comparison with every configured hash), a
//! JWT verified from the cached JWKS (RS256 and ES256 signature checks), and
//! a JWT seen before (found by its SHA-256 in the verified-token cache).
//!
//! The keys and JWTs are made on the fly by tests/mcp/auth_client.py (PyJWT
//! and cryptography from `bash tests/mcp/install.sh`).
//!
//! `cargo bench --bench auth`

use std::path::PathBuf;
use std::process::Command;

use criterion::{criterion_group, criterion_main, Criterion};
use toolgate::serve::auth::{hash_token, Authenticator, JwtVerifier};
use toolgate::Policy;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let python = repo().join("tests/mcp/.venv/bin/python");
    let made = Command::new(&python)
        .arg(repo().join("tests/mcp/auth_client.py"))
        .arg("--make-jwts")
        .arg(dir.path())
        .output()
        .expect("run tests/mcp/auth_client.py (bash tests/mcp/install.sh first)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let tokens: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tokens.json")).unwrap())
            .unwrap();
    let static_token = "bench-token-0123456789abcdef";
    let mut entries = String::new();
    for i in 0..8 {
        let t = format!("{static_token}-{i}");
        entries.push_str(&format!(
            "    - {{ id: t{i}, sha256: \"{}\" }}\n",
            hash_token(&t)
        ));
    }
    entries.push_str(&format!(
        "    - {{ id: bench, sha256: \"{}\" }}\n",
        hash_token(static_token)
    ));
    let policy = format!(
        "version: 1\ntools:\n  profiles:\n    readonly: [read, ls]\nauth:\n  required: true\n  tokens:\n{entries}  jwt:\n    issuer: https://idp.test\n    audience: toolgate\n    jwks_file: jwks.json\n    profile_claim: toolgate_profile\n"
    );
    std::fs::write(dir.path().join("policy.yaml"), policy).unwrap();
    let policy = Policy::load(
        dir.path().join("policy.yaml"),
        repo().join("tool-manifests"),
    )
    .expect("policy loads");
    let config = policy.auth().expect("auth").clone();
    let auth = Authenticator::new(config.clone()).expect("authenticator");
    let verifier = JwtVerifier::new(config.jwt.as_ref().unwrap(), &config.profiles).unwrap();
    let rs256 = tokens["rs256_full"].as_str().unwrap().to_string();
    let es256 = tokens["es256_readonly"].as_str().unwrap().to_string();
    let header = format!("Bearer {static_token}");

    let mut g = c.benchmark_group("auth");
    g.bench_function("static token (9 hashes compared)", |b| {
        b.iter(|| auth.authenticate(Some(header.as_bytes())).unwrap())
    });
    g.bench_function("JWT RS256, signature checked (no token cache)", |b| {
        b.iter(|| verifier.verify(&rs256).unwrap())
    });
    g.bench_function("JWT ES256, signature checked (no token cache)", |b| {
        b.iter(|| verifier.verify(&es256).unwrap())
    });
    let rs_header = format!("Bearer {rs256}");
    auth.authenticate(Some(rs_header.as_bytes())).unwrap();
    g.bench_function("JWT RS256 seen before (token cache)", |b| {
        b.iter(|| auth.authenticate(Some(rs_header.as_bytes())).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
