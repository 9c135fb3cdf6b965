//! Properties of decisions, checked on generated input (proptest) against
//! the embedded default policy in a scratch workspace:
//!
//! - a path's decision does not depend on how it is spelled (`a/./b`,
//!   `a//b`, `x/../a/b` for an existing directory `x`, a trailing slash on
//!   a directory, a leading `./`, the absolute form);
//! - a compound command (`A && B`, `A; B`, `A | B`, `A || B`) gets the
//!   strictest decision of its parts, so it is allowed only if every part
//!   alone is.

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::json;
use toolgate::{load_policy, CompileOptions, ConfigPaths, Policy, ToolCall, Workspace};

struct Setup {
    _dir: tempfile::TempDir,
    root: String,
    ws: Workspace,
    policy: Policy,
}

/// Directories of the scratch workspace and their sub-directories.
const DIRS: &[(&str, &[&str])] = &[
    ("", &["a", "x", "y", ".git"]),
    ("a", &["c"]),
    ("a/c", &[]),
    ("x", &[]),
    ("y", &[]),
    (".git", &[]),
];

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for (d, _) in DIRS {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        for f in [
            "a/b.txt",
            "a/c/d.txt",
            "y/z.txt",
            ".env",
            "Cargo.lock",
            ".git/config",
            "src.rs",
        ] {
            std::fs::write(dir.path().join(f), "x\n").unwrap();
        }
        let root = dir.path().canonicalize().unwrap().display().to_string();
        let ws = Workspace::new(dir.path()).unwrap();
        let embedded = ConfigPaths {
            policies: None,
            manifests: None,
        };
        // The embedded default only applies where no ./policies folder is.
        assert!(!Path::new("policies/does-not-exist").exists());
        let policy = load_policy(&embedded, &CompileOptions::default()).unwrap();
        Setup {
            _dir: dir,
            root,
            ws,
            policy,
        }
    })
}

fn decide(tool: &str, args: serde_json::Value) -> (String, Option<String>) {
    let s = setup();
    let call = ToolCall {
        id: String::new(),
        name: tool.to_string(),
        arguments: args,
    };
    let v = s.policy.evaluate(&s.ws, &call);
    (v.decision.as_str().to_string(), v.rule)
}

/// Canonical workspace-relative paths: files, directories, a new file,
/// denied, read-only and outside paths.
const PATHS: &[&str] = &[
    "a/b.txt",
    "a/c/d.txt",
    "a/c",
    "a",
    "y/z.txt",
    "a/new.txt",
    ".env",
    "Cargo.lock",
    ".git/config",
    "src.rs",
    "../escape.txt",
];

fn is_dir(path: &str) -> bool {
    DIRS.iter().any(|(d, _)| *d == path)
}

/// How one gap between segments is spelled.
#[derive(Clone, Debug)]
enum Gap {
    Plain,
    Dot,
    Double,
    /// `child/..` through the `n`th sub-directory of the prefix, if any.
    Detour(usize),
}

fn gap() -> impl Strategy<Value = Gap> {
    prop_oneof![
        3 => Just(Gap::Plain),
        1 => Just(Gap::Dot),
        1 => Just(Gap::Double),
        1 => (0usize..4).prop_map(Gap::Detour),
    ]
}

/// `path` respelled with one gap choice per segment, then a trailing slash
/// (directories only), a leading `./` or the absolute form.
fn respell(path: &str, gaps: &[Gap], trailing: bool, form: u8) -> String {
    let mut out = String::new();
    let mut prefix = String::new();
    for (i, seg) in path.split('/').enumerate() {
        match gaps.get(i).cloned().unwrap_or(Gap::Plain) {
            Gap::Plain => {}
            Gap::Dot => out.push_str("./"),
            Gap::Double if !out.is_empty() => out.push('/'),
            Gap::Double => {}
            Gap::Detour(n) => {
                let children = DIRS
                    .iter()
                    .find(|(d, _)| *d == prefix)
                    .map_or(&[][..], |(_, c)| *c);
                if let Some(child) = children.get(n % children.len().max(1)) {
                    out.push_str(child);
                    out.push_str("/../");
                }
            }
        }
        out.push_str(seg);
        out.push('/');
        prefix = if prefix.is_empty() {
            seg.to_string()
        } else {
            format!("{prefix}/{seg}")
        };
    }
    out.pop();
    if trailing && is_dir(path) {
        out.push('/');
    }
    match form {
        0 => out,
        1 => format!("./{out}"),
        _ => format!("{}/{out}", setup().root),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_path_decision_does_not_depend_on_its_spelling(
        index in 0..PATHS.len(),
        gaps in proptest::collection::vec(gap(), 4),
        trailing in any::<bool>(),
        form in 0u8..3,
        tool in prop_oneof![Just("read"), Just("write"), Just("ls")],
    ) {
        let path = PATHS[index];
        let spelled = respell(path, &gaps, trailing, form);
        let args = |p: &str| match tool {
            "write" => json!({"path": p, "content": "x"}),
            _ => json!({"path": p}),
        };
        let expected = decide(tool, args(path));
        let got = decide(tool, args(&spelled));
        prop_assert_eq!(got, expected, "{} spelled {}", path, spelled);
    }
}

/// Simple commands the default policy allows, asks about and denies.
const ALLOWED: &[&str] = &[
    "ls",
    "git status",
    "cargo test",
    "echo hi",
    "cat src.rs",
    "grep -n x a/b.txt",
    "pwd",
    "wc -l y/z.txt",
];
const ASKED: &[&str] = &[
    "git push",
    "npm install",
    "rm a/b.txt",
    "python3 build.py",
    "git reset --hard",
];
const DENIED: &[&str] = &[
    "rm -rf build",
    "sudo ls",
    "curl example.com",
    "cat .env",
    "echo x > .env",
    "git push --force",
];

fn simple_command() -> impl Strategy<Value = &'static str> {
    let all: Vec<&'static str> = ALLOWED.iter().chain(ASKED).chain(DENIED).copied().collect();
    proptest::sample::select(all)
}

fn operator() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![" && ", " || ", "; ", " | ", "\n"])
}

fn strictness(decision: &str) -> u8 {
    match decision {
        "allow" => 0,
        "ask" => 1,
        _ => 2,
    }
}

#[test]
fn the_command_pools_mean_what_they_say() {
    for (pool, want) in [(ALLOWED, "allow"), (ASKED, "ask"), (DENIED, "deny")] {
        for cmd in pool {
            let (got, rule) = decide("bash", json!({"command": cmd}));
            assert_eq!(got, want, "{cmd}: {rule:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_compound_command_gets_the_strictest_decision_of_its_parts(
        parts in proptest::collection::vec(simple_command(), 2..5),
        ops in proptest::collection::vec(operator(), 4),
    ) {
        let mut script = parts[0].to_string();
        for (i, part) in parts.iter().enumerate().skip(1) {
            script.push_str(ops[i - 1]);
            script.push_str(part);
        }
        let strictest = parts
            .iter()
            .map(|p| decide("bash", json!({"command": p})).0)
            .max_by_key(|d| strictness(d))
            .unwrap_or_default();
        let (got, rule) = decide("bash", json!({"command": script}));
        prop_assert_eq!(&got, &strictest, "{:?} decided by {:?}", script, rule);
    }
}

/// Ways to hand a literal command to something that runs it (issue 14):
/// `eval`, `bash -c`, a literal `echo` piped into a shell and a here-string
/// are analyzed as the command itself, so they get its decision exactly.
fn shell_form() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "eval 'C'",
        "eval \"C\"",
        "bash -c 'C'",
        "sh -c \"C\"",
        "echo 'C' | bash",
        "printf '%s\\n' 'C' | sh",
        "bash <<< 'C'",
        "bash <<'EOF'\nC\nEOF",
    ])
}

/// Interpreter code that runs a literal command: never less strict than
/// the command (the interpreter itself is judged too).
fn interpreter_form() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "python3 -c \"import os; os.system('C')\"",
        "python3 -c \"import subprocess; subprocess.run('C', shell=True)\"",
        "node -e \"require('child_process').execSync('C')\"",
        "ruby -e \"system('C')\"",
        "perl -e \"system('C')\"",
        "php -r \"system('C');\"",
        "echo \"import os; os.system('C')\" | python3",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_command_handed_to_a_shell_gets_its_own_decision(
        cmd in simple_command(),
        form in shell_form(),
    ) {
        let script = form.replace('C', cmd);
        let alone = decide("bash", json!({"command": cmd})).0;
        let (got, rule) = decide("bash", json!({"command": script}));
        prop_assert_eq!(&got, &alone, "{:?} decided by {:?}", script, rule);
    }

    #[test]
    fn a_command_in_interpreter_code_is_never_less_strict(
        cmd in simple_command(),
        form in interpreter_form(),
    ) {
        let script = form.replace('C', cmd);
        let alone = decide("bash", json!({"command": cmd})).0;
        let (got, rule) = decide("bash", json!({"command": script}));
        prop_assert!(
            strictness(&got) >= strictness(&alone),
            "{:?} got {} ({:?}), alone {}",
            script,
            got,
            rule,
            alone
        );
        prop_assert!(strictness(&got) >= 1, "interpreter code is never allowed by the default policy: {:?}", script);
    }
}
