//! The adversarial corpora: shell commands and paths as data files, each with
//! the decision it must get under `tests/corpus/policy.yaml` — and escape
//! hatches (`tests/corpus/escape_hatches.yaml`) under the default policy.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::json;
use toolgate::{load_policy, CompileOptions, ConfigPaths, Policy, ToolCall, Workspace};

#[derive(Deserialize)]
struct Corpus<C> {
    cases: Vec<C>,
}

#[derive(Deserialize)]
struct ShellCase {
    command: String,
    decision: String,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    why: String,
}

#[derive(Deserialize)]
struct PathCase {
    #[serde(default = "default_tool")]
    tool: String,
    path: String,
    decision: String,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    why: String,
}

fn default_tool() -> String {
    "read".to_string()
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn policy() -> Policy {
    let paths = ConfigPaths {
        policies: Some(corpus_dir().join("policy.yaml")),
        manifests: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests")),
    };
    load_policy(&paths, &CompileOptions::default())
        .unwrap_or_else(|d| panic!("corpus policy must load:\n{d}"))
}

/// The default policy (the embedded one is this file; a unit test keeps
/// them the same) with the built-in manifests; `layer` adds a policy file
/// from the corpus folder on top of it.
fn default_policy(layer: Option<&str>) -> Policy {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        root.join("policies/default.yaml"),
        dir.path().join("a-default.yaml"),
    )
    .unwrap();
    if let Some(layer) = layer {
        std::fs::copy(corpus_dir().join(layer), dir.path().join("b-layer.yaml")).unwrap();
    }
    let paths = ConfigPaths {
        policies: Some(dir.path().to_path_buf()),
        manifests: Some(root.join("tool-manifests")),
    };
    load_policy(&paths, &CompileOptions::default())
        .unwrap_or_else(|d| panic!("the default policy must load:\n{d}"))
}

/// The workspace the corpora describe, plus a directory outside it.
struct Fixture {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    for (file, text) in [
        ("Cargo.lock", "# lock"),
        (".env", "SECRET=1"),
        ("src/main.rs", "fn main() {}"),
        ("secrets/key.txt", "k"),
        ("docs/readme.md", "hi"),
        (".git/config", "[core]"),
    ] {
        let p = root.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::write(outside.path().join("file.txt"), "outside").unwrap();
    let link =
        |target: &Path, name: &str| std::os::unix::fs::symlink(target, root.join(name)).unwrap();
    link(Path::new("/etc"), "link-etc");
    link(Path::new("/etc/passwd"), "link-passwd");
    link(Path::new(".env"), "link-env");
    link(Path::new("src"), "link-src");
    link(Path::new("Cargo.lock"), "link-lock");
    link(Path::new(".git"), "link-dotgit");
    link(Path::new("loop-b"), "loop-a");
    link(Path::new("loop-a"), "loop-b");
    link(outside.path(), "outside-dir");
    Fixture { ws, outside }
}

fn check(
    policy: &Policy,
    ws: &Workspace,
    call: &ToolCall,
    decision: &str,
    rule: Option<&str>,
    label: &str,
    failures: &mut Vec<String>,
) {
    let v = policy.evaluate(ws, call);
    let rule_ok = match rule {
        None => true,
        Some(want) => v.rule.as_deref().is_some_and(|r| r.contains(want)),
    };
    if v.decision.as_str() != decision || !rule_ok {
        failures.push(format!(
            "{label}\n    expected {decision}{}, got {} (rule {}): {}",
            rule.map(|r| format!(" by a rule containing `{r}`"))
                .unwrap_or_default(),
            v.decision.as_str(),
            v.rule.as_deref().unwrap_or("null"),
            v.reason
        ));
    }
}

/// Checks one shell case against `policy`; returns its call and label.
fn check_shell_case(
    policy: &Policy,
    ws: &Workspace,
    case: &ShellCase,
    failures: &mut Vec<String>,
) -> (ToolCall, String) {
    let call = ToolCall::new("bash", json!({ "command": case.command }));
    let label = format!("`{}` ({})", case.command, case.why);
    check(
        policy,
        ws,
        &call,
        &case.decision,
        case.rule.as_deref(),
        &label,
        failures,
    );
    (call, label)
}

/// Runs every case of the shell-style corpus `file` (at least `min` of
/// them) under `policy`, reporting every failure at once.
fn run_shell_corpus(file: &str, policy: &Policy, min: usize) {
    let text = std::fs::read_to_string(corpus_dir().join(file)).unwrap();
    let corpus: Corpus<ShellCase> = serde_yaml::from_str(&text).unwrap();
    assert!(
        corpus.cases.len() >= min,
        "{file} must keep at least {min} cases, has {}",
        corpus.cases.len()
    );
    let fx = fixture();
    let ws = Workspace::new(fx.ws.path()).unwrap();
    let mut failures = Vec::new();
    for case in &corpus.cases {
        check_shell_case(policy, &ws, case, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases in {file} failed:\n  {}",
        failures.len(),
        corpus.cases.len(),
        failures.join("\n  ")
    );
}

#[test]
fn shell_corpus() {
    run_shell_corpus("shell.yaml", &policy(), 70);
}

/// A hook that finds its policy proven (`config::proven`) compiles with
/// `proven: true`: no examples re-checked, rule regexes on first use. The
/// corpus decides the same.
#[test]
fn shell_corpus_on_a_proven_compile() {
    let paths = ConfigPaths {
        policies: Some(corpus_dir().join("policy.yaml")),
        manifests: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests")),
    };
    let options = CompileOptions {
        proven: true,
        ..CompileOptions::default()
    };
    let policy = load_policy(&paths, &options).unwrap();
    run_shell_corpus("shell.yaml", &policy, 70);
}

/// Options and variables that make an allowed command run another program:
/// none may be allowed by the default policy, and ordinary use must stay
/// allowed.
#[test]
fn escape_hatch_corpus() {
    let text = std::fs::read_to_string(corpus_dir().join("escape_hatches.yaml")).unwrap();
    let corpus: Corpus<ShellCase> = serde_yaml::from_str(&text).unwrap();
    let escapes = corpus
        .cases
        .iter()
        .filter(|c| c.decision != "allow")
        .count();
    assert!(
        escapes >= 100,
        "the escape-hatch corpus must keep at least 100 escapes, has {escapes}"
    );
    let policy = default_policy(None);
    // Allowing the programs themselves must not let their escapes through:
    // the hatch, not the allow list, is what catches them.
    let permissive = default_policy(Some("allow_hatch_programs.yaml"));
    let fx = fixture();
    let ws = Workspace::new(fx.ws.path()).unwrap();
    let mut failures = Vec::new();
    for case in &corpus.cases {
        let (call, label) = check_shell_case(&policy, &ws, case, &mut failures);
        if case.decision != "allow" {
            let v = permissive.evaluate(&ws, &call);
            if v.decision.as_str() == "allow" {
                failures.push(format!(
                    "{label}\n    allowed once its program is allowed: {}",
                    v.reason
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} escape-hatch cases failed:\n  {}",
        failures.len(),
        corpus.cases.len(),
        failures.join("\n  ")
    );
}

#[test]
fn path_corpus() {
    let text = std::fs::read_to_string(corpus_dir().join("paths.yaml")).unwrap();
    let corpus: Corpus<PathCase> = serde_yaml::from_str(&text).unwrap();
    assert!(
        corpus.cases.len() >= 40,
        "the path corpus must keep at least 40 cases"
    );
    let policy = policy();
    let fx = fixture();
    let ws = Workspace::new(fx.ws.path()).unwrap();
    let ws_abs = ws.root().display().to_string();
    let out_abs = fx
        .outside
        .path()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let mut failures = Vec::new();
    for case in &corpus.cases {
        let path = case.path.replace("$WS", &ws_abs).replace("$OUT", &out_abs);
        let arguments = match case.tool.as_str() {
            "write" => json!({ "path": path, "content": "x" }),
            "edit" => json!({ "path": path, "edits": [{ "oldText": "a", "newText": "b" }] }),
            "grep" => json!({ "pattern": "x", "path": path }),
            _ => json!({ "path": path }),
        };
        let call = ToolCall {
            id: String::new(),
            name: case.tool.clone(),
            arguments,
        };
        let label = format!(
            "{} `{}` ({})",
            case.tool,
            case.path.escape_debug(),
            case.why
        );
        check(
            &policy,
            &ws,
            &call,
            &case.decision,
            case.rule.as_deref(),
            &label,
            &mut failures,
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} path cases failed:\n  {}",
        failures.len(),
        corpus.cases.len(),
        failures.join("\n  ")
    );
}

/// The policy language of issue 14 (`unless`, literal `--`, `exact`,
/// `variables`, `inline_code`) and the analyzer work behind it (eval, input
/// into shells, `find -delete`, print-only variables, `for` values,
/// interpreter code), under a default-allow policy written with them.
#[test]
fn language_corpus() {
    // The policy's `commands.variables` reads toolgate's own environment.
    std::env::set_var("TOOLGATE_CORPUS_TMP", "/var/tmp/tg-corpus");
    std::env::remove_var("TOOLGATE_CORPUS_UNSET");
    let paths = ConfigPaths {
        policies: Some(corpus_dir().join("language_policy.yaml")),
        manifests: Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests")),
    };
    let policy = load_policy(&paths, &CompileOptions::default())
        .unwrap_or_else(|d| panic!("the language policy must load:\n{d}"));
    run_shell_corpus("language.yaml", &policy, 150);
}

/// The default policy's rules that the new language makes expressible:
/// discarding work needs approval, force pushes are denied but
/// `--force-with-lease` asks, `find -delete` is `rm -rf`, inline code asks.
#[test]
fn language_default_corpus() {
    run_shell_corpus("language_default.yaml", &default_policy(None), 30);
}
