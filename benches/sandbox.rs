//! What kernel confinement costs per command (docs/performance.md).
//!
//! - `bash_true/plain` and `bash_true/sandboxed`: the bash tool running
//!   `true` in a small workspace (a few files, the default policy's deny
//!   globs plus one `.env` to cover), without and with `sandbox.enabled`;
//!   the difference is the set-up cost per call (the walk for deny and
//!   read-only matches, the Landlock ruleset, the seccomp program, a
//!   private TMPDIR, the mount namespace in the child).
//! - `prepare/open_all` and `prepare/held_system_list`: only the parent's
//!   half, side by side: [`toolgate::confine::Plan::prepare_once`] opens
//!   every granted path for the one command (what every call did before),
//!   [`toolgate::confine::Plan::prepare`] reuses the system list's
//!   descriptors, held for the process and checked per call.
//!
//! Needs Landlock and, for the mount namespace, root. Run:
//! `cargo bench --bench sandbox`.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use toolgate::tools::{builtin, ToolContext};
use toolgate::{load_policy, CompileOptions, ConfigPaths};

fn context(ws: &Path, policies: &Path, enabled: bool) -> ToolContext {
    std::fs::write(
        policies.join("policy.yaml"),
        format!("version: 1\nextends: [\"builtin:default\"]\nsandbox:\n  enabled: {enabled}\n"),
    )
    .unwrap();
    let paths = ConfigPaths {
        policies: Some(policies.to_path_buf()),
        manifests: None,
    };
    let policy = load_policy(&paths, &CompileOptions::default()).unwrap();
    toolgate::executor::standalone_context(ws, &policy).unwrap()
}

fn bench(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    for (name, text) in [
        (".env", "KEY=1\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "\n"),
        ("README.md", "# x\n"),
        ("docs/a.md", "a\n"),
    ] {
        let p = ws.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let policies = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let bash = builtin("bash").unwrap();
    let mut group = c.benchmark_group("bash_true");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));
    for (label, enabled) in [("plain", false), ("sandboxed", true)] {
        let ctx = context(ws.path(), policies.path(), enabled);
        group.bench_function(label, |b| {
            b.iter(|| {
                rt.block_on(bash.execute(&ctx, json!({"command": "true"})))
                    .unwrap()
            })
        });
    }
    group.finish();
    let ctx = context(ws.path(), policies.path(), true);
    let plan = ctx.confine.clone().unwrap();
    let mut group = c.benchmark_group("prepare");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));
    // Side by side: every granted path opened for the one command (what
    // every call did before the system list was held), and the system
    // list's descriptors held for the process and checked per call.
    group.bench_function("open_all", |b| b.iter(|| plan.prepare_once().unwrap()));
    group.bench_function("held_system_list", |b| b.iter(|| plan.prepare().unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
