//! The file tools that change files: `write` and `edit` beyond the cases
//! recorded from Pi (see `tools_files.rs`), the sandbox, and concurrent
//! mutations of one file.

#[path = "tools_files/workspace.rs"]
mod workspace;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;
use toolgate::tools::builtin;
use workspace::{text, Workspace};

#[tokio::test]
async fn write_creates_parents_and_reports_the_path_as_given() {
    let ws = Workspace::new();
    let out = ws
        .call("write", json!({"path": "a/b/c.txt", "content": "deep\n"}))
        .await
        .expect("write");
    assert_eq!(text(&out), "Successfully wrote to a/b/c.txt");
    assert_eq!(ws.get("a/b/c.txt"), b"deep\n");
    let out = ws
        .call("write", json!({"path": "@a/b/c.txt", "content": "again"}))
        .await
        .expect("write");
    assert_eq!(text(&out), "Successfully wrote to @a/b/c.txt");
    assert_eq!(ws.get("a/b/c.txt"), b"again");
    let names: Vec<_> = std::fs::read_dir(ws.path("a/b")).expect("list").collect();
    assert_eq!(names.len(), 1, "temporary files were left behind");
}

#[tokio::test]
async fn write_keeps_permissions_and_refuses_directories() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    ws.put("run.sh", "old");
    std::fs::set_permissions(ws.path("run.sh"), std::fs::Permissions::from_mode(0o750))
        .expect("chmod");
    ws.call("write", json!({"path": "run.sh", "content": "new"}))
        .await
        .expect("write");
    let mode = std::fs::metadata(ws.path("run.sh"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);

    std::fs::create_dir(ws.path("folder")).expect("dir");
    let err = ws
        .call("write", json!({"path": "folder", "content": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "EISDIR: illegal operation on a directory, open '{}'",
            ws.path("folder").display()
        )
    );
}

#[tokio::test]
async fn edit_errors_for_missing_and_binary_files() {
    let ws = Workspace::new();
    let edits = json!([{"oldText": "a", "newText": "b"}]);
    let err = ws
        .call("edit", json!({"path": "missing.txt", "edits": edits}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Could not edit file: missing.txt. Error code: ENOENT."
    );
    // Pi would decode lossily and write U+FFFD over the other bytes.
    ws.put("latin1.txt", b"caf\xe9 a\n");
    let err = ws
        .call("edit", json!({"path": "latin1.txt", "edits": edits}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Could not edit file: latin1.txt. The file is not valid UTF-8 text."
    );
    assert_eq!(ws.get("latin1.txt"), b"caf\xe9 a\n");
}

#[tokio::test]
async fn symlinks_out_of_the_workspace_are_refused() {
    let ws = Workspace::new();
    let secret = ws.outside.join("secret.txt");
    std::fs::write(&secret, "outside").expect("secret");
    std::os::unix::fs::symlink(&secret, ws.path("link.txt")).expect("file link");
    std::os::unix::fs::symlink(&ws.outside, ws.path("out")).expect("dir link");
    let refused = |abs: PathBuf| {
        format!(
            "Permission denied: {} leads outside the workspace",
            abs.display()
        )
    };

    let err = ws
        .call("read", json!({"path": "link.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, refused(ws.path("link.txt")));
    let err = ws
        .call("read", json!({"path": "out/secret.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, refused(ws.path("out/secret.txt")));

    let err = ws
        .call("write", json!({"path": "link.txt", "content": "pwned"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, refused(ws.path("link.txt")));
    let err = ws
        .call("write", json!({"path": "out/new.txt", "content": "pwned"}))
        .await
        .unwrap_err();
    assert_eq!(err.message, refused(ws.path("out/new.txt")));
    let err = ws
        .call(
            "write",
            json!({"path": "out/deeper/new.txt", "content": "pwned"}),
        )
        .await
        .unwrap_err();
    assert!(
        err.message.contains("leads outside the workspace"),
        "{}",
        err.message
    );
    let edits = json!([{"oldText": "outside", "newText": "pwned"}]);
    let err = ws
        .call("edit", json!({"path": "link.txt", "edits": edits}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Could not edit file: link.txt. The path leads outside the workspace."
    );

    assert_eq!(std::fs::read_to_string(&secret).expect("secret"), "outside");
    let outside: Vec<_> = std::fs::read_dir(&ws.outside).expect("list").collect();
    assert_eq!(
        outside.len(),
        1,
        "something was created outside the workspace"
    );

    // A symlink that stays inside is followed, and written through.
    ws.put("real.txt", "inside");
    std::os::unix::fs::symlink("real.txt", ws.path("alias.txt")).expect("inner link");
    let out = ws
        .call("read", json!({"path": "alias.txt"}))
        .await
        .expect("read alias");
    assert_eq!(text(&out), "inside");
    ws.call("write", json!({"path": "alias.txt", "content": "changed"}))
        .await
        .expect("write alias");
    assert_eq!(ws.get("real.txt"), b"changed");
    assert!(std::fs::symlink_metadata(ws.path("alias.txt"))
        .expect("lstat")
        .file_type()
        .is_symlink());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_of_one_file_all_land() {
    let ws = Workspace::new();
    const EDITS: usize = 24;
    let lines: String = (0..EDITS).map(|i| format!("line {i}\n")).collect();
    ws.put("shared.txt", &lines);
    std::os::unix::fs::symlink("shared.txt", ws.path("alias.txt")).expect("alias");
    let ctx = Arc::new(ws.ctx.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..EDITS {
        let ctx = ctx.clone();
        // Three spellings of one file: they must share one queue.
        let path = ["shared.txt", "alias.txt", "./x/../shared.txt"][i % 3];
        tasks.spawn(async move {
            let edits =
                json!([{"oldText": format!("line {i}\n"), "newText": format!("edited {i}\n")}]);
            let edit = builtin("edit").expect("edit");
            edit.execute(&ctx, json!({"path": path, "edits": edits}))
                .await
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("task").expect("edit succeeds");
    }
    let want: String = (0..EDITS).map(|i| format!("edited {i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&ws.get("shared.txt")), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_and_an_edit_in_one_batch_both_land_in_order() {
    let ws = Workspace::new();
    ws.put("f.txt", "one\n");
    let write = ws.call("write", json!({"path": "f.txt", "content": "one\ntwo\n"}));
    let edit = ws.call(
        "edit",
        json!({"path": "f.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}),
    );
    // Joined in this order, the write is queued first.
    let (w, e) = tokio::join!(write, edit);
    w.expect("write");
    e.expect("edit after the write");
    assert_eq!(ws.get("f.txt"), b"one\nTWO\n");
}
