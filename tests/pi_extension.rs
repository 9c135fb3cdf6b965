//! The Pi extension (integrations/pi) in a real Pi 1.6 session: runs the
//! node test suite in integrations/pi/test/ against this build's
//! `toolgate bridge`. Pi and Node 22 come from
//! `bash integrations/pi/test/install.sh` (`.ci/run` calls it); when they
//! are missing this test fails and says so — it never skips.

use std::path::Path;
use std::process::Command;

#[test]
fn the_pi_extension_enforces_the_policy_in_a_real_pi_session() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let node = repo.join("tests/mcp/node_modules/node/bin/node");
    let suite = repo.join("integrations/pi/test");
    let pi = suite.join("node_modules/@earendil-works/pi-coding-agent/package.json");
    assert!(
        node.is_file() && pi.is_file(),
        "Node 22 ({}) or Pi 1.6 ({}) is missing: run `bash integrations/pi/test/install.sh`",
        node.display(),
        pi.display()
    );
    let out = Command::new(&node)
        .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
        .arg(suite.join("extension.test.mjs"))
        .current_dir(&suite)
        .env("TOOLGATE_BIN", env!("CARGO_BIN_EXE_toolgate"))
        .output()
        .expect("node runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the Pi extension's tests failed:\n{report}"
    );
    // The suite ran, every case: a runner that found no tests also exits 0.
    assert!(
        report.contains("pass 13") && report.contains("fail 0"),
        "{report}"
    );
}
