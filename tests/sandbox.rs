//! Kernel confinement (`sandbox:`) on the real kernel: Landlock, a mount
//! namespace and seccomp, through the bash tool, `toolgate sandbox` and the
//! Claude hook's rewritten command.
//!
//! Needs Linux with Landlock. The `paths.read_only` and `paths.deny` cases
//! need a mount namespace, so toolgate must run as root (CAP_SYS_ADMIN): CI
//! runs as root. Without that support the policy's `required: true` makes
//! the calls fail, and these tests fail with the sandbox's message.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use toolgate::tools::{builtin, Content, ToolContext, ToolError, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

/// An interpreter outside `$HOME` (a version manager's shim under `~` is
/// not in the built-in read list).
const PYTHON: &str = "/usr/bin/python3";
const SECRET: &str = "API_KEY=sk-the-real-secret";

/// A workspace with a policy folder, plus a folder outside the roots.
struct Scratch {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    policies: tempfile::TempDir,
}

fn scratch(network: &str, required: bool) -> Scratch {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(
        policies.path().join("policy.yaml"),
        format!(
            "version: 1\nextends: [\"builtin:default\"]\npaths:\n  roots: [\".\"]\n  deny: [\"**/.env\"]\n  read_only: [\"locked.txt\", \"vendor/**\"]\nsandbox:\n  enabled: true\n  network: {network}\n  required: {required}\n"
        ),
    )
    .unwrap();
    std::fs::write(ws.path().join(".env"), format!("{SECRET}\n")).unwrap();
    std::fs::write(ws.path().join("locked.txt"), "original\n").unwrap();
    std::fs::create_dir_all(ws.path().join("vendor/lib")).unwrap();
    std::fs::write(ws.path().join("vendor/lib/code.py"), "x = 1\n").unwrap();
    std::fs::create_dir_all(ws.path().join("sub")).unwrap();
    std::fs::write(ws.path().join("sub/.env"), format!("{SECRET}\n")).unwrap();
    Scratch {
        ws,
        outside,
        policies,
    }
}

impl Scratch {
    fn context(&self) -> ToolContext {
        let paths = ConfigPaths {
            policies: Some(self.policies.path().to_path_buf()),
            manifests: None,
        };
        let policy = load_policy(&paths, &CompileOptions::default()).unwrap();
        let ctx = toolgate::executor::standalone_context(self.ws.path(), &policy).unwrap();
        assert!(ctx.confine.is_some(), "sandbox.enabled gives a plan");
        ctx
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }

    fn toolgate(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        c.arg("sandbox")
            .arg("--policies")
            .arg(self.policies.path())
            .arg("--workspace")
            .arg(self.ws.path())
            .arg("--")
            .args(args)
            .current_dir(self.ws.path());
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
}

fn text(r: &Result<ToolOutput, ToolError>) -> String {
    match r {
        Ok(out) => out
            .content
            .iter()
            .map(|c| match c {
                Content::Text { text } => text.clone(),
                _ => String::new(),
            })
            .collect(),
        Err(e) => e.message.clone(),
    }
}

fn bash(ctx: &ToolContext, command: &str) -> Result<ToolOutput, ToolError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(
        builtin("bash")
            .unwrap()
            .execute(ctx, json!({ "command": command })),
    )
}

#[test]
fn writing_outside_the_roots_fails_and_creates_nothing() {
    let s = scratch("deny", true);
    let ctx = s.context();
    let target = s.outside("x");
    let r = bash(
        &ctx,
        &format!(
            "{PYTHON} -c \"open('{}','w').write('escaped')\"",
            target.display()
        ),
    );
    assert!(r.is_err(), "the write must fail: {}", text(&r));
    assert!(text(&r).contains("PermissionError"), "{}", text(&r));
    assert!(!target.exists(), "nothing may be created outside the roots");
}

#[test]
fn writing_inside_the_roots_works_and_tmpdir_is_private() {
    let s = scratch("deny", true);
    let ctx = s.context();
    let r = bash(
        &ctx,
        "mkdir -p out && echo made > out/new.txt && cat out/new.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo \"$TMPDIR\"",
    );
    let out = text(&r);
    assert!(r.is_ok(), "{out}");
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("out/new.txt")).unwrap(),
        "made\n"
    );
    assert!(out.contains("made\nt\n"), "{out}");
    let tmpdir = out.lines().last().unwrap();
    assert!(tmpdir.contains("toolgate-sandbox-"), "{out}");
    assert!(
        !Path::new(tmpdir).exists(),
        "the private TMPDIR goes when the command ends"
    );
}

/// Empty private temporary directories are reused (tmp.rs); no file ever
/// passes from one command to the next through them.
#[test]
fn nothing_passes_between_commands_through_tmpdir() {
    let s = scratch("deny", true);
    let ctx = s.context();
    for _ in 0..3 {
        let r = bash(
            &ctx,
            "ls -A \"$TMPDIR\"; echo left > \"$TMPDIR/left.txt\"; echo \"$TMPDIR\"",
        );
        let out = text(&r);
        assert!(r.is_ok(), "{out}");
        let dir = out.lines().last().unwrap();
        assert_eq!(out.lines().count(), 1, "TMPDIR must start empty: {out}");
        assert!(!Path::new(dir).exists(), "a used TMPDIR is removed: {out}");
        let r = bash(&ctx, "ls -A \"$TMPDIR\"; echo \"$TMPDIR\"");
        let out = text(&r);
        assert_eq!(out.lines().count(), 1, "TMPDIR must start empty: {out}");
    }
}

/// Needs root (a mount namespace).
#[test]
fn a_read_only_file_cannot_be_changed_by_an_interpreter() {
    let s = scratch("deny", true);
    let ctx = s.context();
    for script in [
        "open('locked.txt','w').write('changed')",
        "open('locked.txt','a').write('changed')",
        "import os; os.remove('locked.txt')",
        "import os; os.rename('locked.txt', 'moved.txt')",
        "open('vendor/lib/code.py','w').write('x = 2')",
        "open('vendor/lib/new.py','w').write('x = 2')",
    ] {
        let r = bash(&ctx, &format!("{PYTHON} -c \"{script}\""));
        assert!(r.is_err(), "{script} must fail: {}", text(&r));
    }
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("locked.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("vendor/lib/code.py")).unwrap(),
        "x = 1\n"
    );
    assert!(!s.ws.path().join("vendor/lib/new.py").exists());
    // Still readable.
    let r = bash(&ctx, "cat locked.txt vendor/lib/code.py");
    assert_eq!(text(&r), "original\nx = 1\n");
}

/// Needs root (a mount namespace).
#[test]
fn a_denied_file_cannot_be_read_by_cat_from_a_script_or_by_python() {
    let s = scratch("deny", true);
    let ctx = s.context();
    std::fs::write(
        s.ws.path().join("show.sh"),
        "cat .env; cat sub/.env; cat ./sub/../.env\n",
    )
    .unwrap();
    let r = bash(&ctx, "bash show.sh");
    assert!(!text(&r).contains("sk-the-real-secret"), "{}", text(&r));
    assert!(text(&r).contains("Permission denied"), "{}", text(&r));
    let r = bash(&ctx, &format!("{PYTHON} -c \"print(open('.env').read())\""));
    assert!(r.is_err());
    assert!(!text(&r).contains("sk-the-real-secret"), "{}", text(&r));
    // Nor overwritten.
    let r = bash(&ctx, "echo stolen > .env");
    assert!(r.is_err(), "{}", text(&r));
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join(".env")).unwrap(),
        format!("{SECRET}\n")
    );
}

fn connect_script(port: u16) -> String {
    format!(
        "{PYTHON} -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); s.sendall(b'hi'); s.close()\""
    )
}

#[test]
fn network_deny_blocks_a_loopback_connection_and_allow_does_not() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let denied = scratch("deny", true);
    let r = bash(&denied.context(), &connect_script(port));
    assert!(r.is_err(), "{}", text(&r));
    assert!(text(&r).contains("PermissionError"), "{}", text(&r));
    // Unix sockets still work.
    let r = bash(
        &denied.context(),
        &format!("{PYTHON} -c \"import socket; a, b = socket.socketpair(); a.sendall(b'u'); print(b.recv(1))\""),
    );
    assert_eq!(text(&r), "b'u'\n");

    let allowed = scratch("allow", true);
    let accepted = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = String::new();
        conn.read_to_string(&mut got).unwrap();
        got
    });
    let r = bash(&allowed.context(), &connect_script(port));
    assert!(r.is_ok(), "{}", text(&r));
    assert_eq!(accepted.join().unwrap(), "hi");
}

#[test]
fn confinement_holds_in_grandchildren_and_after_cd_root() {
    let s = scratch("deny", true);
    let ctx = s.context();
    let target = s.outside("grandchild");
    let r = bash(
        &ctx,
        &format!(
            "bash -c 'sh -c \"cd / && echo x > {}\"'; cd / && {PYTHON} -c \"open('{}','w')\"",
            target.display(),
            s.outside("after-cd").display()
        ),
    );
    assert!(r.is_err(), "{}", text(&r));
    assert!(!target.exists());
    assert!(!s.outside("after-cd").exists());
    // Reading outside the roots and the system list fails too.
    std::fs::write(s.outside("notes.txt"), "private").unwrap();
    let r = bash(
        &ctx,
        &format!("sh -c 'cat {}'", s.outside("notes.txt").display()),
    );
    assert!(!text(&r).contains("private"), "{}", text(&r));
}

#[test]
fn toolgate_sandbox_runs_a_command_confined_with_its_exit_status() {
    let s = scratch("deny", true);
    let root_file = format!("/toolgate-sandbox-test-{}", std::process::id());
    let o = s.toolgate(&["sh", "-c", &format!("echo x > {root_file}")], &[]);
    assert_ne!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Permission denied"));
    assert!(!Path::new(&root_file).exists());
    let o = s.toolgate(&["sh", "-c", "echo inside > made.txt; exit 7"], &[]);
    assert_eq!(o.status.code(), Some(7));
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("made.txt")).unwrap(),
        "inside\n"
    );
}

#[test]
fn required_fails_closed_without_landlock_and_not_required_runs() {
    let s = scratch("deny", true);
    let switch = [(toolgate::confine::NO_LANDLOCK_ENV, "1")];
    let o = s.toolgate(&["sh", "-c", "echo ran > ran.txt"], &switch);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("Landlock is not available"), "{err}");
    assert!(err.contains("sandbox.required"), "{err}");
    assert!(!s.ws.path().join("ran.txt").exists(), "nothing runs");

    let lax = scratch("deny", false);
    let o = lax.toolgate(&["sh", "-c", "echo ran > ran.txt"], &switch);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("less confinement"));
    assert!(lax.ws.path().join("ran.txt").exists());
}

/// The hook answers an allowed `Bash` call with `updatedInput`; Claude Code
/// runs `bash -c COMMAND` in its working directory, and that is confined.
#[test]
fn the_claude_hooks_rewritten_command_runs_confined() {
    let s = scratch("deny", true);
    let target = s.outside("from-hook");
    std::fs::write(
        s.ws.path().join("escape.py"),
        format!(
            "open('inside.txt','w').write('ran')\nopen('{}','w').write('escaped')\n",
            target.display()
        ),
    )
    .unwrap();
    let original = "python3 escape.py; echo \"it's $((1+1))\"";
    let payload = json!({
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "t1",
        "cwd": s.ws.path(), "tool_input": {"command": original, "description": "run"}
    });
    let mut hook = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["hook", "claude", "--policies"])
        .arg(s.policies.path())
        .current_dir(s.ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let answer: Value = serde_json::from_slice(&hook.wait_with_output().unwrap().stdout).unwrap();
    let out = &answer["hookSpecificOutput"];
    assert_ne!(out["permissionDecision"], "deny", "{answer}");
    assert_eq!(out["updatedInput"]["description"], "run");
    let command = out["updatedInput"]["command"].as_str().unwrap();
    assert!(command.contains(" sandbox "), "{command}");
    // PATH with /usr/bin first, so `python3` is the system interpreter.
    let o = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(s.ws.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("PermissionError"), "{stderr}");
    assert!(!target.exists(), "the hook's command escaped the roots");
    assert_eq!(
        std::fs::read_to_string(s.ws.path().join("inside.txt")).unwrap(),
        "ran",
        "the original command ran, inside the sandbox"
    );
    // The original reached `bash -c` as one word, unchanged: its quotes and
    // `$((…))` were expanded once, by the inner shell.
    assert!(command.ends_with(&toolgate_quote(original)), "{command}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "it's 2\n");
}

fn toolgate_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[test]
fn exec_tools_run_confined_too() {
    let s = scratch("deny", true);
    let manifests = tempfile::tempdir().unwrap();
    std::fs::write(
        manifests.path().join("writer.toml"),
        format!(
            "name = \"writer\"\ndescription = \"writes\"\nimplementation = {{ exec = [\"{PYTHON}\", \"-c\", \"open('{}','w')\"] }}\n[parameters]\ntype = \"object\"\n",
            s.outside("exec").display()
        ),
    )
    .unwrap();
    std::fs::write(
        manifests.path().join("policy.yaml"),
        "version: 1\npaths:\n  roots: [\".\"]\nsandbox:\n  enabled: true\n",
    )
    .unwrap();
    let paths = ConfigPaths {
        policies: Some(manifests.path().join("policy.yaml")),
        manifests: Some(manifests.path().to_path_buf()),
    };
    let policy = load_policy(&paths, &CompileOptions::default()).unwrap();
    let ctx = toolgate::executor::standalone_context(s.ws.path(), &policy).unwrap();
    let tool = toolgate::tools::from_manifest(policy.manifest("writer").unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let r = rt.block_on(tool.execute(&ctx, json!({})));
    assert!(r.is_err(), "{}", text(&r));
    assert!(!s.outside("exec").exists());
}

#[test]
fn the_policy_schema_describes_sandbox() {
    let o = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["schema", "policy"])
        .output()
        .unwrap();
    let schema: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(schema["properties"]["sandbox"].is_object(), "{schema}");
    let section = &schema["$defs"]["SandboxSection"]["properties"];
    for key in ["enabled", "network", "read", "write", "required"] {
        assert!(section[key].is_object(), "sandbox.{key} missing: {section}");
    }
    assert_eq!(
        schema["$defs"]["SandboxNetwork"]["oneOf"]
            .as_array()
            .map(|a| a.len()),
        Some(2),
        "{}",
        schema["$defs"]["SandboxNetwork"]
    );
}

/// The unprivileged user the next test runs toolgate as (`nobody`).
const NOBODY: u32 = 65534;

fn chown_tree(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path());
        }
    }
}

/// `toolgate` where `nobody` can run it: the build's own path when its
/// folders let `nobody` through, otherwise a link (or copy) in a folder that
/// does.
fn toolgate_for_nobody(keep: &tempfile::TempDir) -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_toolgate"));
    let direct = as_nobody(&built, &["--version"], &[]).status.success();
    if direct {
        return built;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(keep.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let there = keep.path().join("toolgate");
    if std::fs::hard_link(&built, &there).is_err() {
        std::fs::copy(&built, &there).unwrap();
    }
    there
}

/// Runs `program args` as `nobody` (uid and gid 65534, no groups) through
/// util-linux's `setpriv`.
fn as_nobody(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(program)
    .args(args)
    .current_dir("/tmp")
    .env("TMPDIR", "/tmp")
    .env("HOME", "/tmp");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .expect("setpriv (util-linux) runs the command as nobody")
}

/// Without `CAP_SYS_ADMIN`, toolgate gets its mount namespace from an
/// unprivileged user namespace, so `read_only` and `deny` still hold; where
/// the kernel forbids those (asked independently with util-linux's
/// `unshare`), the documented fallback must hold instead. The fallback is
/// also checked here on every kernel, forced by the documented switch
/// `TOOLGATE_SANDBOX_NO_USERNS`. Runs as root, dropping to `nobody`.
#[test]
fn read_only_and_deny_hold_for_an_unprivileged_user_through_a_user_namespace() {
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this test drops from root to nobody: run it as root (CI does)"
    );
    let keep = tempfile::tempdir().unwrap();
    let toolgate = toolgate_for_nobody(&keep);
    let strict = scratch("deny", true);
    let lax = scratch("deny", false);
    for s in [&strict, &lax] {
        for dir in [s.ws.path(), s.outside.path(), s.policies.path()] {
            chown_tree(dir);
        }
    }
    let run = |s: &Scratch, script: &str, env: &[(&str, &str)]| -> Output {
        let ws = s.ws.path().to_str().unwrap();
        let policies = s.policies.path().to_str().unwrap();
        as_nobody(
            &toolgate,
            &[
                "sandbox",
                "--policies",
                policies,
                "--workspace",
                ws,
                "--",
                "sh",
                "-c",
                &format!("cd {ws} && {script}"),
            ],
            env,
        )
    };
    let userns_allowed = as_nobody(
        Path::new("unshare"),
        &["--user", "--map-root-user", "--mount", "true"],
        &[],
    )
    .status
    .success();
    if userns_allowed {
        // Not root, yet the workspace's deny and read_only matches are
        // covered.
        let o = run(&strict, "id -u; umount .env; cat .env", &[]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!out.contains("sk-the-real-secret"), "{out}");
        assert!(err.contains("Permission denied"), "{err}");
        assert!(
            out.starts_with("65534\n"),
            "the command keeps its uid: {out} {err}"
        );
        let o = run(&strict, "echo changed > locked.txt", &[]);
        assert!(!o.status.success());
        let o = run(&strict, "echo x > vendor/lib/new.py", &[]);
        assert!(!o.status.success());
        let o = run(&strict, "cat locked.txt && echo inside > made.txt", &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "original\n");
        assert_eq!(
            std::fs::read_to_string(strict.ws.path().join("locked.txt")).unwrap(),
            "original\n"
        );
        assert!(!strict.ws.path().join("vendor/lib/new.py").exists());
        use std::os::unix::fs::MetadataExt;
        let made = std::fs::metadata(strict.ws.path().join("made.txt")).unwrap();
        assert_eq!((made.uid(), made.gid()), (NOBODY, NOBODY));
        let o = as_nobody(
            &toolgate,
            &[
                "check",
                "--policies",
                strict.policies.path().to_str().unwrap(),
            ],
            &[],
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("mount namespace: available (unprivileged user namespace)"),
            "{out}"
        );
        fallback_holds(
            &strict,
            &lax,
            &run,
            &[(toolgate::confine::NO_USERNS_ENV, "1")],
        );
    } else {
        fallback_holds(&strict, &lax, &run, &[]);
    }
}

/// Runs a shell script in a scratch workspace with extra environment.
type RunIn<'a> = &'a dyn Fn(&Scratch, &str, &[(&str, &str)]) -> Output;

/// Without a mount namespace: `required: true` refuses to run and names the
/// gap; `required: false` warns and runs with Landlock only — writing
/// outside the roots still fails, but the denied file is readable (the
/// documented loss).
fn fallback_holds(strict: &Scratch, lax: &Scratch, run: RunIn<'_>, env: &[(&str, &str)]) {
    let o = run(strict, "echo ran > ran.txt", env);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no mount namespace"), "{err}");
    assert!(err.contains("sandbox.required"), "{err}");
    assert!(!strict.ws.path().join("ran.txt").exists(), "nothing runs");

    let outside = lax.outside("from-nobody");
    let o = run(
        lax,
        &format!("cat .env; echo x > {}", outside.display()),
        env,
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("less confinement"), "{err}");
    assert!(err.contains("no mount namespace"), "{err}");
    assert!(
        out.contains("sk-the-real-secret"),
        "the documented loss: {out}"
    );
    assert!(!o.status.success());
    assert!(
        !outside.exists(),
        "Landlock still holds without the mount namespace"
    );
}

/// Needs root (a mount namespace). The empty TMPDIRs a process keeps for
/// reuse are removed when its command line returns: none stays behind.
#[test]
fn no_tmpdir_stays_behind_when_toolgate_call_ends() {
    let s = scratch("deny", true);
    let tmp = tempfile::tempdir().unwrap();
    let calls: Vec<Value> = (0..3)
        .map(|i| json!({"id": format!("c{i}"), "name": "bash", "arguments": {"command": "echo \"$TMPDIR\""}}))
        .collect();
    let batch = s.policies.path().join("batch.json");
    std::fs::write(&batch, Value::Array(calls).to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .arg("call")
        .arg("--policies")
        .arg(s.policies.path().join("policy.yaml"))
        .arg("--workspace")
        .arg(s.ws.path())
        .arg("--batch")
        .arg(&batch)
        .arg("--sequential")
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each command ran with a private TMPDIR under toolgate's TMPDIR.
    assert_eq!(
        stdout.matches(&*tmp.path().to_string_lossy()).count(),
        3,
        "{stdout}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
