//! `toolgate test`: run policy test files.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::error::load;
use super::{CliError, ConfigArgs};

/// Runs the test files (default: every `*.yaml` in POLICIES/tests/): 0 all
/// pass, 1 any failure.
pub fn run(config: &ConfigArgs, workspace: &Path, tests: &[PathBuf]) -> Result<ExitCode, CliError> {
    let policy = load(&config.paths(), None)?;
    let files: Vec<PathBuf> = if tests.is_empty() {
        let dir = config
            .policies
            .clone()
            .unwrap_or_else(|| PathBuf::from("policies"))
            .join("tests");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        if found.is_empty() {
            return Err(CliError::usage(format!(
                "no test files given and none found in {}",
                dir.display()
            )));
        }
        found
    } else {
        tests.to_vec()
    };
    let mut out = std::io::stdout().lock();
    let (mut passed, mut failed) = (0, 0);
    for path in &files {
        let file = crate::testing::read_test_file(path).map_err(CliError::Usage)?;
        let results =
            crate::testing::run_test_file(&policy, &path.display().to_string(), &file, workspace)
                .map_err(CliError::Usage)?;
        for r in results {
            match r.failure {
                None => passed += 1,
                Some(why) => {
                    failed += 1;
                    writeln!(out, "FAIL {}: {}: {why}", r.file, r.name)?;
                }
            }
        }
    }
    writeln!(out, "{passed} passed, {failed} failed")?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
