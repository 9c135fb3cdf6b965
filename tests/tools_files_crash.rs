//! A write killed with SIGKILL at any moment leaves the old file or the new
//! one, never a mix.
//!
//! The test re-runs its own test binary as a child (`--exact
//! child_writes_when_asked`, with an environment variable saying where) that
//! replaces a ~30 MB file with ~100 MB of different content through the
//! `write` tool, and kills it at several moments of the write.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use toolgate::tools::{atomic, builtin};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

/// Set in the child: the workspace to write in.
const CHILD_WORKSPACE: &str = "TOOLGATE_TEST_CRASH_WORKSPACE";
const TARGET: &str = "target.bin";
const OLD_SIZE: usize = 30 << 20;
const NEW_SIZE: usize = 100 << 20;
/// What the child prints right before it starts writing.
const READY: &str = "WRITING";

fn old_content() -> Vec<u8> {
    pattern(OLD_SIZE, b"old content\n")
}

fn new_content() -> Vec<u8> {
    pattern(NEW_SIZE, b"NEW CONTENT, LONGER\n")
}

fn pattern(size: usize, unit: &[u8]) -> Vec<u8> {
    let mut bytes = unit.repeat(size / unit.len() + 1);
    bytes.truncate(size);
    bytes
}

/// The child's part: does nothing in an ordinary test run.
#[test]
fn child_writes_when_asked() {
    let Some(workspace) = std::env::var_os(CHILD_WORKSPACE) else {
        return;
    };
    let policy = load_policy(&ConfigPaths::default(), &CompileOptions::default()).expect("policy");
    let ctx =
        toolgate::executor::standalone_context(Path::new(&workspace), &policy).expect("context");
    let content = String::from_utf8(new_content()).expect("ASCII");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args = json!({"path": TARGET, "content": content});
    let write = builtin("write").expect("write tool");
    // On a line of its own: the test harness has printed the test's name.
    println!("\n{READY}");
    runtime.block_on(write.execute(&ctx, args)).expect("write");
}

/// Files in `dir` other than the target: temporaries a killed write left.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n != TARGET))
        .collect()
}

#[test]
fn kill_during_a_large_write_leaves_old_or_new() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ws = tmp.path().canonicalize().expect("canonical");
    let target = ws.join(TARGET);
    let (old, new) = (old_content(), new_content());
    let exe = std::env::current_exe().expect("test binary");
    let mut killed_mid_write = 0;
    for delay_ms in [0, 1, 3, 10, 30, 100, 300] {
        std::fs::write(&target, &old).expect("old content");
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "child_writes_when_asked",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_WORKSPACE, &ws)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("child");
        let stdout = child.stdout.take().expect("stdout");
        let ready = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l == READY);
        assert!(ready, "the child did not start writing");
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SIGKILL: no destructor, no cleanup runs in the child.
        child.kill().expect("kill");
        let status = child.wait().expect("wait");

        let now = std::fs::read(&target).expect("target still exists");
        assert!(
            now == old || now == new,
            "after a kill {delay_ms} ms into the write the file is neither old nor new ({} bytes)",
            now.len()
        );
        // A killed write may leave its temporary file, never under the
        // target's name and always recognizable as ours.
        let junk_files = leftovers(&ws);
        if !junk_files.is_empty() && status.signal() == Some(libc::SIGKILL) {
            killed_mid_write += 1;
        }
        for junk in junk_files {
            let name = junk
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            assert!(
                name.starts_with(atomic::TEMP_PREFIX) && name.ends_with(atomic::TEMP_SUFFIX),
                "unexpected file {name}"
            );
            std::fs::remove_file(&junk).expect("clean up");
        }
    }
    assert!(
        killed_mid_write > 0,
        "no kill landed during a write; the test proved nothing"
    );
}
