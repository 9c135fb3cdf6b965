//! Exec tools declared by manifests: arguments reach the program as whole
//! argv words and never pass through a shell; the environment is an
//! allowlist; content mode parses MCP content blocks; load-time checks point
//! at the manifest's line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use toolgate::tools::{from_manifest, Content, Tool, ToolContext, ToolError, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths, Diagnostics, Policy};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/shell")
        .join(name)
}

/// Compiles the built-in manifests plus `extra` (file name, text).
fn compile_with(extra: &[(&str, &str)]) -> Result<Policy, Diagnostics> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in toolgate::config::embedded_manifests() {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    for (name, text) in extra {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let paths = ConfigPaths {
        policies: None,
        manifests: Some(dir.path().to_path_buf()),
    };
    load_policy(&paths, &CompileOptions::default())
}

/// A manifest for tool `t` running `argv` (a TOML array), with optional
/// `[exec]` lines and string parameters `a`, `b` and array parameter `items`.
fn manifest(argv: &str, exec: &str) -> String {
    format!(
        "name = \"t\"\ndescription = \"test tool\"\nimplementation = {{ exec = {argv} }}\n{exec}\n\
         [parameters]\ntype = \"object\"\nproperties.a = {{ type = \"string\" }}\n\
         properties.b = {{ type = \"string\" }}\n\
         properties.items = {{ type = \"array\", items = {{ type = \"string\" }} }}\n"
    )
}

struct Setup {
    _workspace: tempfile::TempDir,
    ctx: ToolContext,
    tool: Arc<dyn Tool>,
}

fn setup(text: &str) -> Setup {
    let policy = compile_with(&[("t.toml", text)]).unwrap_or_else(|d| panic!("{}", d.to_human()));
    let tool = from_manifest(policy.manifest("t").unwrap()).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ctx = toolgate::executor::standalone_context(workspace.path(), &policy).unwrap();
    Setup {
        _workspace: workspace,
        ctx,
        tool,
    }
}

async fn run(s: &Setup, args: Value) -> Result<ToolOutput, ToolError> {
    s.tool.execute(&s.ctx, args).await
}

fn text(out: &ToolOutput) -> &str {
    match out.content.as_slice() {
        [Content::Text { text }] => text,
        other => panic!("expected one text block, got {other:?}"),
    }
}

fn argv_script() -> String {
    format!(
        "[\"sh\", {:?}, \"{{a}}\"]",
        data("argv.sh").display().to_string()
    )
}

#[tokio::test]
async fn every_adversarial_argument_is_one_literal_argv_word() {
    let s = setup(&manifest(&argv_script(), ""));
    let cases: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(data("adversarial-args.json")).unwrap())
            .unwrap();
    for arg in cases {
        let out = run(&s, json!({ "a": arg })).await.unwrap();
        assert_eq!(text(&out), format!("argc=1\n[{arg}]\n"), "argument {arg:?}");
    }
    let ws = s.ctx.sandbox.workspace().root();
    assert!(!ws.join("pwned").exists(), "a shell ran something");
    assert_eq!(std::fs::read_dir(ws).unwrap().count(), 0);
}

#[tokio::test]
async fn absent_arguments_drop_their_words_and_arrays_give_one_word_each() {
    let script = data("argv.sh").display().to_string();
    let argv =
        format!("[\"sh\", {script:?}, \"--\", \"{{a}}\", \"--b={{b}}\", \"{{items}}\", \"{{}}\"]");
    let s = setup(&manifest(&argv, ""));
    let out = run(&s, json!({"a": "x y"})).await.unwrap();
    assert_eq!(text(&out), "argc=3\n[--]\n[x y]\n[{}]\n");
    let out = run(&s, json!({"b": "2", "items": ["p q", "-r", "; s"]}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "argc=6\n[--]\n[--b=2]\n[p q]\n[-r]\n[; s]\n[{}]\n"
    );
}

#[tokio::test]
async fn only_allowlisted_environment_variables_reach_the_program() {
    // Some variable of this process other than PATH, to see it withheld.
    let other = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .find(|k| k != "PATH" && !k.is_empty() && !k.contains('='));

    let s = setup(&manifest("[\"/usr/bin/env\"]", ""));
    let out = run(&s, json!({})).await.unwrap();
    let names: Vec<&str> = text(&out)
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    assert_eq!(names, vec!["PATH"], "the default passes PATH only");

    let s = setup(&manifest("[\"/usr/bin/env\"]", "[exec]\nenv = []"));
    assert_eq!(text(&run(&s, json!({})).await.unwrap()), "(no output)");

    if let Some(other) = other {
        let exec = format!("[exec]\nenv = [\"PATH\", {other:?}, \"TOOLGATE_SURELY_UNSET\"]");
        let s = setup(&manifest("[\"/usr/bin/env\"]", &exec));
        let out = run(&s, json!({})).await.unwrap();
        let mut names: Vec<&str> = text(&out)
            .lines()
            .filter_map(|l| l.split('=').next())
            .collect();
        names.sort();
        let mut expected = vec!["PATH", other.as_str()];
        expected.sort();
        assert_eq!(names, expected);
    }
}

#[tokio::test]
async fn runs_in_the_workspace_and_reports_failure_like_bash() {
    let s = setup(&manifest(
        "[\"sh\", \"-c\", \"pwd; echo oops >&2; exit 4\"]",
        "",
    ));
    let err = run(&s, json!({})).await.unwrap_err();
    let ws = s.ctx.sandbox.workspace().root().display().to_string();
    assert_eq!(
        err.message,
        format!("{ws}\noops\n\n\nCommand exited with code 4")
    );
}

#[tokio::test]
async fn the_policy_timeout_kills_an_exec_tool() {
    let mut s = setup(&manifest("[\"sleep\", \"1000\"]", ""));
    s.ctx.limits.timeout = std::time::Duration::from_millis(300);
    let err = run(&s, json!({})).await.unwrap_err();
    assert_eq!(err.message, "Command timed out after 0.3 seconds");
}

#[tokio::test]
async fn content_mode_returns_the_programs_content_blocks() {
    let exec = "[exec]\noutput = \"content\"";
    let s = setup(&manifest(
        &format!(
            "[\"cat\", {:?}]",
            data("content.json").display().to_string()
        ),
        exec,
    ));
    let out = run(&s, json!({})).await.unwrap();
    let expected: Vec<Content> =
        serde_json::from_str(&std::fs::read_to_string(data("content.json")).unwrap()).unwrap();
    assert_eq!(out.content, expected);
    assert!(
        matches!(&out.content[1], Content::Image { mime_type, .. } if mime_type == "image/png")
    );

    for (file, problem) in [
        ("bad-content.json", "control character"),
        ("not-an-array.json", "expected a sequence"),
        ("unknown-block.json", "unknown variant `video`"),
    ] {
        let s = setup(&manifest(
            &format!("[\"cat\", {:?}]", data(file).display().to_string()),
            exec,
        ));
        let err = run(&s, json!({})).await.unwrap_err();
        assert!(
            err.message.starts_with("t printed invalid content JSON: ")
                && err.message.contains(problem),
            "{file}: {}",
            err.message
        );
    }

    // A failing program: its stderr and exit code, not a JSON error.
    let s = setup(&manifest(
        "[\"sh\", \"-c\", \"echo '[]'; echo broken >&2; exit 2\"]",
        exec,
    ));
    assert_eq!(
        run(&s, json!({})).await.unwrap_err().message,
        "broken\n\n\nCommand exited with code 2"
    );
}

#[test]
fn a_placeholder_must_name_a_parameter() {
    let text = manifest("[\"echo\", \"--x={nope}\"]", "");
    let err = compile_with(&[("t.toml", &text)]).unwrap_err().to_human();
    let line = text.lines().position(|l| l.contains("{nope}")).unwrap() + 1;
    let col = text.lines().nth(line - 1).unwrap().find("{nope}").unwrap() + 1;
    assert!(
        err.contains(&format!(
            "t.toml:{line}:{col}: error: exec placeholder `{{nope}}` names `nope`, which is not a parameter of `t`"
        )),
        "{err}"
    );
    // Escaped braces are literal text, not a placeholder.
    compile_with(&[("t.toml", &manifest("[\"echo\", \"{{nope}}\"]", ""))]).unwrap();
}

#[test]
fn exec_settings_are_checked_at_load() {
    let text = manifest("[\"env\"]", "[exec]\nenv = [\"PATH\", \"A=B\"]");
    let err = compile_with(&[("t.toml", &text)]).unwrap_err().to_human();
    assert!(
        err.contains(
            "t.toml:5:16: error: `exec.env` entry `A=B` is not an environment variable name"
        ),
        "{err}"
    );

    let text = "name = \"t\"\ndescription = \"d\"\nimplementation = { builtin = \"ls\" }\n\n[exec]\noutput = \"content\"\n\n[parameters]\ntype = \"object\"\n";
    let err = compile_with(&[("t.toml", text)]).unwrap_err().to_human();
    assert!(
        err.contains(
            "t.toml:5:1: error: `[exec]` applies to exec tools, but `t` is the builtin `ls`"
        ),
        "{err}"
    );

    let text = manifest("[\"env\"]", "[exec]\noutput = \"json\"");
    let err = compile_with(&[("t.toml", &text)]).unwrap_err().to_human();
    assert!(err.contains("t.toml:5:10: error: invalid manifest: unknown variant `json`, expected `text` or `content`"), "{err}");
}

#[test]
fn the_manifest_schema_documents_exec_settings() {
    let schema = serde_json::to_string(&schemars::schema_for!(toolgate::config::Manifest)).unwrap();
    for needle in ["ExecOptions", "\"env\"", "\"content\"", "PATH"] {
        assert!(schema.contains(needle), "schema lacks {needle}");
    }
}

#[tokio::test]
async fn the_git_log_example_runs_git_directly() {
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tool-manifests/examples/git-log.toml"),
    )
    .unwrap();
    let policy =
        compile_with(&[("git-log.toml", &example)]).unwrap_or_else(|d| panic!("{}", d.to_human()));
    let tool = from_manifest(policy.manifest("git_log").unwrap()).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(ws.path())
            .output()
    };
    // .ci/run installs git; a machine without it fails here rather than
    // passing a test that did not run.
    let init = git(&["init", "-q"])
        .expect("git is needed for this test: install it (apt-get install git)");
    assert!(
        init.status.success(),
        "git init: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    std::fs::write(ws.path().join("a.txt"), "a").unwrap();
    git(&["add", "a.txt"]).unwrap();
    git(&["commit", "-q", "-m", "first; $(touch pwned)"]).unwrap();
    std::fs::write(ws.path().join("b.txt"), "b").unwrap();
    git(&["add", "b.txt"]).unwrap();
    git(&["commit", "-q", "-m", "second"]).unwrap();

    let ctx = toolgate::executor::standalone_context(ws.path(), &policy).unwrap();
    let out = tool.execute(&ctx, json!({"count": 1})).await.unwrap();
    assert!(text(&out).ends_with(" second\n"), "{}", text(&out));
    assert_eq!(text(&out).lines().count(), 1);
    let out = tool.execute(&ctx, json!({"path": "a.txt"})).await.unwrap();
    assert!(
        text(&out).ends_with(" first; $(touch pwned)\n"),
        "{}",
        text(&out)
    );
    assert!(!ws.path().join("pwned").exists());
}
