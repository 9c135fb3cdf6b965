//! Policy test files: calls with the decision (and rule) they must get.
//!
//! Security teams keep these next to their policies and CI runs them with
//! `toolgate test`, so a policy change that loosens a rule fails the build.
//!
//! ```yaml
//! files:                      # optional: a scratch workspace with these files
//!   Cargo.lock: ""
//!   .env: "SECRET=1"
//! symlinks:                   # optional: link -> target, inside that workspace
//!   escape: /etc
//! tests:
//!   - name: force push is denied
//!     tool: bash
//!     args: { command: "git push --force origin main" }
//!     decision: deny
//!     rule: no-force-push     # optional: the deciding rule id
//!     reason_contains: force  # optional
//!   - name: failing tests stop the agent
//!     tool: bash
//!     args: { command: "cargo test" }
//!     decision: allow
//!     output: "test result: FAILED. 1 passed; 2 failed"  # what the call returned
//!     exit_code: 101          # optional (bash and exec tools; default 0 unless is_error)
//!     is_error: true          # optional (default: exit_code is not 0)
//!     result_rule: stop-on-failed-tests   # the after-rule that applies (`null`: none)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::policy::rules::{expand_placeholders, ResultFacts};
use crate::{Decision, Policy, ToolCall, Workspace};

/// One policy test file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// Files to create in a scratch workspace (path -> contents).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Symlinks to create in the scratch workspace (link -> target).
    #[serde(default)]
    pub symlinks: BTreeMap<String, String>,
    /// The cases.
    pub tests: Vec<TestCase>,
}

/// One case.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// What it checks, shown on failure.
    pub name: String,
    /// The tool called.
    pub tool: String,
    /// Its arguments (`"<2 MB>"` placeholders expand to strings of that size).
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The decision it must get.
    pub decision: Decision,
    /// The rule id that must decide it (`null` for "no rule").
    #[serde(default, deserialize_with = "some_option")]
    pub rule: Option<Option<String>>,
    /// Text the reason must contain.
    #[serde(default)]
    pub reason_contains: Option<String>,
    /// What the call returned, for `result_rule` (`"<30 KB>"` placeholders
    /// expand to text of that size).
    #[serde(default)]
    pub output: Option<String>,
    /// Whether the result is an error (default: `exit_code` is given and not 0).
    #[serde(default)]
    pub is_error: Option<bool>,
    /// The command's exit code (bash and exec tools; default 0 for a result
    /// that is not an error).
    #[serde(default)]
    pub exit_code: Option<i64>,
    /// The result rule (`results:`) that must apply to the result (`null`
    /// for "none"), for the call returning `output` (default: empty).
    #[serde(default, deserialize_with = "some_option")]
    pub result_rule: Option<Option<String>>,
}

fn some_option<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The result rule that applies to `case`'s call returning its `output`,
/// asked of the policy exactly as the executor's after-hook asks it.
fn result_rule(policy: &Policy, root: &Path, case: &TestCase, args: &Value) -> Option<String> {
    let output = expand_placeholders(&Value::String(case.output.clone().unwrap_or_default()));
    let text = output.as_str().unwrap_or_default();
    // The after-hook sees redacted output: so does the test.
    let text = policy.redactor().redact(text);
    let reports = policy
        .tool(&case.tool)
        .is_some_and(|t| t.reports_exit_code());
    let mut facts = ResultFacts::written(&text, case.is_error, case.exit_code);
    facts.exit_code = match case.exit_code {
        Some(code) if reports => Some(code),
        None if reports && !facts.is_error => Some(0),
        _ => None,
    };
    let empty = Map::new();
    let args = args.as_object().unwrap_or(&empty);
    policy
        .results()
        .first_match(&case.tool, args, root, &facts)
        .map(|r| r.id.clone())
}

/// The outcome of one case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// The file it came from.
    pub file: String,
    /// The case's name.
    pub name: String,
    /// `None` when it passed; what differed otherwise.
    pub failure: Option<String>,
}

/// Reads a test file; errors carry `FILE:LINE:COL`.
pub fn read_test_file(path: &Path) -> Result<TestFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| {
        let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
        format!(
            "{}:{line}:{col}: error: invalid test file: {e}",
            path.display()
        )
    })
}

/// Runs every case of `file` against `policy`. Cases run in a scratch
/// workspace when the file lists `files` or `symlinks`, else in `workspace`.
pub fn run_test_file(
    policy: &Policy,
    name: &str,
    file: &TestFile,
    workspace: &Path,
) -> Result<Vec<CaseResult>, String> {
    let scratch;
    let root: PathBuf = if file.files.is_empty() && file.symlinks.is_empty() {
        workspace.to_path_buf()
    } else {
        scratch =
            tempfile::tempdir().map_err(|e| format!("cannot create a scratch workspace: {e}"))?;
        for (rel, contents) in &file.files {
            let p = scratch.path().join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{name}: cannot create `{rel}`: {e}"))?;
            }
            std::fs::write(&p, contents)
                .map_err(|e| format!("{name}: cannot create `{rel}`: {e}"))?;
        }
        for (link, target) in &file.symlinks {
            let p = scratch.path().join(link);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("{name}: cannot create `{link}`: {e}"))?;
            }
            std::os::unix::fs::symlink(target, &p)
                .map_err(|e| format!("{name}: cannot create symlink `{link}`: {e}"))?;
        }
        scratch.path().to_path_buf()
    };
    let ws = Workspace::new(&root).map_err(|e| format!("workspace `{}`: {e}", root.display()))?;
    let mut out = Vec::new();
    for case in &file.tests {
        let args = expand_placeholders(&Value::Object(case.args.clone()));
        let call = ToolCall {
            id: case.name.clone(),
            name: case.tool.clone(),
            arguments: args,
        };
        let verdict = policy.evaluate(&ws, &call);
        let mut problems = Vec::new();
        if verdict.decision != case.decision {
            problems.push(format!(
                "expected {}, got {}",
                case.decision.as_str(),
                verdict.decision.as_str()
            ));
        }
        if let Some(want) = &case.rule {
            if &verdict.rule != want {
                problems.push(format!(
                    "expected rule {}, got {}",
                    want.as_deref().unwrap_or("null"),
                    verdict.rule.as_deref().unwrap_or("null")
                ));
            }
        }
        if let Some(text) = &case.reason_contains {
            if !verdict.reason.contains(text.as_str()) {
                problems.push(format!("expected the reason to contain {text:?}"));
            }
        }
        let states_result =
            case.output.is_some() || case.is_error.is_some() || case.exit_code.is_some();
        if states_result && case.result_rule.is_none() {
            // A stated output that nothing checks would be a test that cannot fail.
            problems.push(
                "`output`, `is_error` or `exit_code` is given, but no `result_rule` to check; add `result_rule: ID` (or `null`)"
                    .to_string(),
            );
        }
        if let Some(want) = &case.result_rule {
            let got = result_rule(policy, &root, case, &call.arguments);
            if &got != want {
                problems.push(format!(
                    "expected result rule {}, got {}",
                    want.as_deref().unwrap_or("null"),
                    got.as_deref().unwrap_or("null")
                ));
            }
        }
        let failure = (!problems.is_empty()).then(|| {
            format!(
                "{} (rule {}: {})",
                problems.join("; "),
                verdict.rule.as_deref().unwrap_or("null"),
                verdict.reason
            )
        });
        out.push(CaseResult {
            file: name.to_string(),
            name: case.name.clone(),
            failure,
        });
    }
    Ok(out)
}
