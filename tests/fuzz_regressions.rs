//! Every input a fuzzer ever crashed on (`fuzz/regressions/<target>/`),
//! and the seed corpora (`fuzz/seeds/<target>/`), replayed through the fuzz
//! targets' own code in the normal test suite: a fixed crash stays fixed
//! without nightly or libFuzzer. See docs/fuzzing.md.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

#[path = "../fuzz/src/lib.rs"]
mod targets;

fn replay(folder: &str) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(folder);
    let mut count = 0;
    let mut failures = Vec::new();
    for (target, run) in targets::TARGETS {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files.iter().filter(|f| f.is_file()) {
            let data = std::fs::read(file).unwrap();
            count += 1;
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                failures.push(format!("{target}: {}", file.display()));
            }
        }
    }
    assert!(failures.is_empty(), "inputs that fail: {failures:#?}");
    count
}

#[test]
fn every_saved_crash_input_passes() {
    assert!(
        replay("regressions") > 0,
        "the regression corpus is not empty"
    );
}

#[test]
fn every_seed_input_passes() {
    assert!(replay("seeds") > 100);
}
