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
//!   every granted path and makes a new private TMPDIR for the one command
//!   (what every call did before), [`toolgate::confine::Plan::prepare`]
//!   reuses the system list's descriptors, held for the process and checked
//!   per call, and a TMPDIR that an earlier command left empty.
//!
//! Needs Landlock and, for the mount namespace, root. Run:
//! `cargo bench --bench sandbox`.

use std::path::Path;
use std::time::{Duration, Instant};

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
    let contexts = [
        ("plain", context(ws.path(), policies.path(), false)),
        ("sandboxed", context(ws.path(), policies.path(), true)),
    ];
    for (label, ctx) in &contexts {
        group.bench_function(*label, |b| {
            b.iter(|| {
                rt.block_on(bash.execute(ctx, json!({"command": "true"})))
                    .unwrap()
            })
        });
    }
    group.finish();
    // Paired: plain and sandboxed calls alternate one by one, so whatever
    // else the machine is doing falls on both alike; the median of the
    // per-pair differences is the set-up cost per call.
    let run = |ctx: &ToolContext| {
        let start = Instant::now();
        rt.block_on(bash.execute(ctx, json!({"command": "true"})))
            .unwrap();
        start.elapsed()
    };
    let pairs = if std::env::args().any(|a| a == "--test") {
        5
    } else {
        2000
    };
    let (mut plain, mut sandboxed, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let p = run(&contexts[0].1).as_secs_f64() * 1e3;
        let s = run(&contexts[1].1).as_secs_f64() * 1e3;
        plain.push(p);
        sandboxed.push(s);
        diff.push(s - p);
    }
    let line = |name: &str, v: &mut Vec<f64>| {
        println!(
            "bash_true/paired {name} ({pairs} pairs, ms): p10 {:.3} p25 {:.3} p50 {:.3} p75 {:.3} p90 {:.3} mean {:.3}",
            quantile(v, 0.10),
            quantile(v, 0.25),
            quantile(v, 0.5),
            quantile(v, 0.75),
            quantile(v, 0.90),
            v.iter().sum::<f64>() / v.len() as f64,
        )
    };
    line("plain", &mut plain);
    line("sandboxed", &mut sandboxed);
    line("difference", &mut diff);
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

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

criterion_group!(benches, bench);
criterion_main!(benches);
