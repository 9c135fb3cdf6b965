//! Running the toolgate binary once, as a CLI front-end test does.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `toolgate ARGS` in `dir` with `stdin` as its input and waits for it.
pub fn run_toolgate(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toolgate runs");
    // A usage error may end the process before it reads stdin.
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    child.wait_with_output().expect("toolgate finishes")
}
