//! The built-in `grep`, `find` and `ls` tools: Pi's output formats, notices,
//! limits and errors; .gitignore respected; files the policy denies skipped.

use std::path::Path;

use serde_json::{json, Value};
use toolgate::tools::{builtin, Content, ToolContext, ToolError, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

fn context(dir: &Path) -> ToolContext {
    let policy = load_policy(&ConfigPaths::default(), &CompileOptions::default()).unwrap();
    toolgate::executor::standalone_context(dir, &policy).unwrap()
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let tool = builtin(tool).unwrap();
    tool.execute(ctx, args).await
}

async fn ok_text(ctx: &ToolContext, tool: &str, args: Value) -> String {
    let out = call(ctx, tool, args.clone())
        .await
        .unwrap_or_else(|e| panic!("{tool} {args}: {}", e.message));
    match out.content.as_slice() {
        [Content::Text { text }] => text.clone(),
        other => panic!("expected one text block, got {other:?}"),
    }
}

async fn err_text(ctx: &ToolContext, tool: &str, args: Value) -> String {
    match call(ctx, tool, args).await {
        Ok(out) => panic!("expected an error, got {out:?}"),
        Err(e) => e.message,
    }
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// A small project: sources, an ignored folder, secrets, hidden files.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.txt", "hello\nworld\nhello again\n");
    write(root, "src/main.rs", "fn main() { hello(); }\n");
    write(root, "src/sub/lib.rs", "pub fn hello() {}\n");
    write(root, ".gitignore", "ignored/\n*.log\n");
    write(root, "ignored/x.txt", "hello from ignored\n");
    write(root, "debug.log", "hello log\n");
    write(root, ".hidden.txt", "hello hidden\n");
    write(root, ".env", "TOKEN=hello-secret\n");
    write(root, "config/.env.local", "TOKEN=hello-local\n");
    write(root, "keys/server.pem", "hello pem\n");
    write(root, ".git/config", "[hello]\n");
    dir
}

#[tokio::test]
async fn grep_prints_pi_lines_respects_gitignore_and_skips_denied_files() {
    let dir = project();
    let ctx = context(dir.path());
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "hello"})).await,
        ".hidden.txt:1: hello hidden\n\
         a.txt:1: hello\n\
         a.txt:3: hello again\n\
         src/main.rs:1: fn main() { hello(); }\n\
         src/sub/lib.rs:1: pub fn hello() {}"
    );
}

#[tokio::test]
async fn grep_respects_gitignore_inside_a_repository_too() {
    let dir = project();
    std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
    let ctx = context(dir.path());
    let out = ok_text(&ctx, "grep", json!({"pattern": "hello"})).await;
    assert!(
        !out.contains("ignored/") && !out.contains("debug.log"),
        "{out}"
    );
}

#[tokio::test]
async fn grep_notices_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    write(dir.path(), "f.txt", &lines);
    let ctx = context(dir.path());
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "nothing"})).await,
        "No matches found"
    );
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "l\\d", "limit": 2})).await,
        "f.txt:1: l1\nf.txt:2: l2\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    );
    // Exactly `limit` matches: nothing was cut off, so no notice.
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "l10", "limit": 1})).await,
        "f.txt:10: l10"
    );
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "^l5$", "context": 1})).await,
        "f.txt-4- l4\nf.txt:5: l5\nf.txt-6- l6"
    );
    // The last allowed match keeps its trailing context; a match inside it
    // is shown as context and proves the limit cut results off.
    assert_eq!(
        ok_text(
            &ctx,
            "grep",
            json!({"pattern": "^l[56]$", "context": 1, "limit": 1})
        )
        .await,
        "f.txt-4- l4\nf.txt:5: l5\nf.txt-6- l6\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    );
}

#[tokio::test]
async fn grep_cuts_long_lines_and_applies_the_byte_limit() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "long.txt",
        &format!("{}needle\n", "x".repeat(600)),
    );
    let mut ctx = context(dir.path());
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "needle"})).await,
        format!(
            "long.txt:1: {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
            "x".repeat(500)
        )
    );
    let many: String = (0..50).map(|i| format!("needle {i}\n")).collect();
    write(dir.path(), "many.txt", &many);
    ctx.limits.max_output_bytes = 100;
    let out = ok_text(
        &ctx,
        "grep",
        json!({"pattern": "needle \\d", "glob": "many.txt"}),
    )
    .await;
    assert_eq!(
        out,
        "many.txt:1: needle 0\nmany.txt:2: needle 1\nmany.txt:3: needle 2\nmany.txt:4: needle 3\n\n[100B limit reached]"
    );
}

#[tokio::test]
async fn grep_options_and_globs() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "x.txt", "abc\na.c\nABC\n");
    write(dir.path(), "src/a.rs", "abc\n");
    write(dir.path(), "pkg/src/b.rs", "abc\n");
    let ctx = context(dir.path());
    let g = |args: Value| {
        let ctx = &ctx;
        async move { ok_text(ctx, "grep", args).await }
    };
    assert_eq!(
        g(json!({"pattern": "a.c", "literal": true, "glob": "*.txt"})).await,
        "x.txt:2: a.c"
    );
    assert_eq!(
        g(json!({"pattern": "abc", "ignoreCase": true, "glob": "*.txt"})).await,
        "x.txt:1: abc\nx.txt:3: ABC"
    );
    assert_eq!(
        g(json!({"pattern": "abc", "glob": "*.rs"})).await,
        "pkg/src/b.rs:1: abc\nsrc/a.rs:1: abc"
    );
    assert_eq!(
        g(json!({"pattern": "abc", "glob": "./src/*.rs"})).await,
        "src/a.rs:1: abc"
    );
    assert_eq!(
        g(json!({"pattern": "abc", "path": "pkg/src/b.rs"})).await,
        "b.rs:1: abc"
    );
    assert_eq!(
        g(json!({"pattern": "abc", "path": "pkg"})).await,
        "src/b.rs:1: abc"
    );
}

#[tokio::test]
async fn grep_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bin.dat"), b"hello\0world\n").unwrap();
    let ctx = context(dir.path());
    let abs = dir.path().canonicalize().unwrap();
    assert_eq!(
        ok_text(&ctx, "grep", json!({"pattern": "hello"})).await,
        "No matches found",
        "binary files are skipped"
    );
    assert_eq!(
        err_text(&ctx, "grep", json!({"pattern": "x", "path": "nope"})).await,
        format!("Path not found: {}", abs.join("nope").display())
    );
    let bad = err_text(&ctx, "grep", json!({"pattern": "("})).await;
    assert!(bad.contains("regex parse error"), "{bad}");
    let outside = err_text(&ctx, "grep", json!({"pattern": "x", "path": "/etc"})).await;
    assert!(outside.contains("outside the workspace"), "{outside}");
    ctx.cancel.cancel();
    assert_eq!(
        err_text(&ctx, "grep", json!({"pattern": "x"})).await,
        "Operation aborted"
    );
}

#[tokio::test]
async fn find_matches_like_fd() {
    let dir = project();
    let ctx = context(dir.path());
    let f = |args: Value| {
        let ctx = &ctx;
        async move { ok_text(ctx, "find", args).await }
    };
    assert_eq!(
        f(json!({"pattern": "*.rs"})).await,
        "src/main.rs\nsrc/sub/lib.rs"
    );
    assert_eq!(f(json!({"pattern": "src/*.rs"})).await, "src/main.rs");
    assert_eq!(f(json!({"pattern": "sub"})).await, "src/sub/");
    assert_eq!(
        f(json!({"pattern": "*.RS"})).await,
        "No files found matching pattern"
    );
    assert_eq!(
        f(json!({"pattern": "*.rs", "path": "src"})).await,
        "main.rs\nsub/lib.rs"
    );
    assert_eq!(
        f(json!({"pattern": "*.rs", "limit": 1})).await,
        "src/main.rs\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    );
    // Hidden files are found; ignored, denied and .git entries are not.
    assert_eq!(
        f(json!({"pattern": "*"})).await,
        ".gitignore\n.hidden.txt\na.txt\nconfig/\nkeys/\nsrc/\nsrc/main.rs\nsrc/sub/\nsrc/sub/lib.rs"
    );
}

#[tokio::test]
async fn find_errors() {
    let dir = project();
    let ctx = context(dir.path());
    let abs = dir.path().canonicalize().unwrap();
    assert_eq!(
        err_text(&ctx, "find", json!({"pattern": "*", "path": "missing"})).await,
        format!("Path not found: {}", abs.join("missing").display())
    );
    assert_eq!(
        err_text(&ctx, "find", json!({"pattern": "*", "path": "a.txt"})).await,
        format!("Not a directory: {}", abs.join("a.txt").display())
    );
}

#[tokio::test]
async fn ls_sorts_marks_directories_and_shows_dotfiles() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for name in ["b.txt", "A.txt", "_x", ".hidden", "10", "9"] {
        write(root, name, "");
    }
    for d in ["dir", "Zeta"] {
        std::fs::create_dir(root.join(d)).unwrap();
    }
    std::os::unix::fs::symlink(root.join("dir"), root.join("link")).unwrap();
    std::os::unix::fs::symlink("b.txt", root.join("rel-link")).unwrap();
    std::os::unix::fs::symlink("missing", root.join("broken")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
    let ctx = context(root);
    assert_eq!(
        ok_text(&ctx, "ls", json!({})).await,
        "_x\n.hidden\n10\n9\nA.txt\nb.txt\ndir/\nlink/\nrel-link\nZeta/"
    );
    assert_eq!(
        ok_text(&ctx, "ls", json!({"path": "dir"})).await,
        "(empty directory)"
    );
    assert_eq!(
        ok_text(&ctx, "ls", json!({"limit": 2})).await,
        "_x\n.hidden\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    let abs = root.canonicalize().unwrap();
    assert_eq!(
        err_text(&ctx, "ls", json!({"path": "nope"})).await,
        format!("Path not found: {}", abs.join("nope").display())
    );
    assert_eq!(
        err_text(&ctx, "ls", json!({"path": "b.txt"})).await,
        format!("Not a directory: {}", abs.join("b.txt").display())
    );
}

#[tokio::test]
async fn ls_default_limit_is_500() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..501 {
        write(dir.path(), &format!("f{i:03}"), "");
    }
    let ctx = context(dir.path());
    let out = ok_text(&ctx, "ls", json!({})).await;
    assert!(
        out.ends_with("f499\n\n[500 entries limit reached. Use limit=1000 for more]"),
        "{}",
        &out[out.len() - 80..]
    );
}
