//! The executor's speed, side by side with Pi's own agent loop.
//!
//! - `pipeline_call`: one call of a trivial tool (returns a constant) per
//!   batch — the per-call overhead of the pipeline: resolve, prepare, coerce,
//!   validate, the policy's before-hook, a task for the tool, the after-hook,
//!   events.
//! - `pipeline_call100`: 100 trivial calls in one batch.
//! - `reads1000`: 1000 `read` calls of a small file in one batch, with the
//!   real read tool and the embedded default policy (every path resolved and
//!   checked against roots, deny globs and read-only rules).
//!
//! The `pi` entries run the same cases through Pi 1.6's real agent loop
//! (`@earendil-works/pi-agent-core`) with its real read tool
//! (`@earendil-works/pi-coding-agent`) and a scripted model (pi-ai's faux
//! provider), in a Node 22 harness under `benches/peers/pi/` that times N
//! iterations itself and prints the total; criterion gets that time through
//! `iter_custom`, so Node's start-up is not counted. Pi runs with no policy at
//! all, so toolgate does strictly more work per call. Pi's entries are skipped
//! (with a note on stderr) until `npm ci` has been run in that folder.
//!
//! Run: `cargo bench --bench pipeline`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use toolgate::executor::{BatchOptions, Executor};
use toolgate::tools::{Tool, ToolContext, ToolFuture, ToolOutput};
use toolgate::{load_policy, CompileOptions, ConfigPaths, ToolCall, Workspace};

/// The trivial tool: a constant answer, no I/O.
#[derive(Debug)]
struct Noop;

impl Tool for Noop {
    fn execute<'a>(&'a self, _: &'a ToolContext, _: Value) -> ToolFuture<'a> {
        Box::pin(async { Ok(ToolOutput::text("ok")) })
    }
}

/// A workspace with `small.txt` (20 lines), the built-in manifests plus
/// `noop`, and the default policy extended to activate `noop`.
fn setup() -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let small: String = (1..=20)
        .map(|i| format!("line {i}: some text of a small file\n"))
        .collect();
    std::fs::write(root.join("small.txt"), small).expect("small.txt");
    let manifests = root.join("config/tool-manifests");
    std::fs::create_dir_all(&manifests).expect("manifests dir");
    for (name, text) in toolgate::config::embedded_manifests() {
        std::fs::write(manifests.join(name), text).expect("manifest");
    }
    std::fs::write(
        manifests.join("noop.toml"),
        "name = \"noop\"\ndescription = \"Does nothing.\"\nimplementation = { exec = [\"true\"] }\n\
         [parameters]\ntype = \"object\"\nproperties.x = { type = \"number\" }\n",
    )
    .expect("noop manifest");
    let policy_file = root.join("config/policy.yaml");
    std::fs::write(
        &policy_file,
        "version: 1\nextends: [\"builtin:default\"]\ntools:\n  active: [noop]\n\
         limits:\n  max_batch_calls: 1000\n",
    )
    .expect("policy");
    let policy = load_policy(
        &ConfigPaths {
            policies: Some(policy_file),
            manifests: Some(manifests),
        },
        &CompileOptions::default(),
    )
    .unwrap_or_else(|d| panic!("{}", d.to_human()));
    let tools: HashMap<String, Arc<dyn Tool>> =
        [("noop".to_string(), Arc::new(Noop) as Arc<dyn Tool>)].into();
    let exec = Executor::with_tools(
        Arc::new(policy),
        Workspace::new(root).expect("workspace"),
        tools,
    )
    .expect("executor");
    (dir, exec)
}

fn calls(n: usize, name: &str, args: Value) -> Vec<ToolCall> {
    (0..n)
        .map(|i| ToolCall {
            id: format!("c{i}"),
            name: name.into(),
            arguments: args.clone(),
        })
        .collect()
}

/// The Pi harness, when it is installed.
fn pi_harness() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/pi");
    if dir.join("node_modules").is_dir() {
        Some(dir.join("run.sh"))
    } else {
        eprintln!(
            "note: Pi's entries skipped; run `npm ci` in {} to include them",
            dir.display()
        );
        None
    }
}

/// Total time of `iters` iterations of `case`, as Pi's harness measured it.
fn run_pi(harness: &Path, case: &str, iters: u64, workspace: &Path) -> Duration {
    let out = Command::new(harness)
        .args(["--case", case, "--iters", &iters.to_string(), "--dir"])
        .arg(workspace)
        .output()
        .expect("run the Pi harness");
    assert!(
        out.status.success(),
        "Pi harness failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the harness prints nanoseconds");
    Duration::from_nanos(ns)
}

fn bench(c: &mut Criterion) {
    let (dir, exec) = setup();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run =
        |calls: Vec<ToolCall>| runtime.block_on(exec.run_batch(calls, BatchOptions::default()));

    // Check the work is real before timing it.
    let reads = run(calls(1000, "read", json!({"path": "small.txt"})));
    assert!(
        reads
            .results
            .iter()
            .all(|r| !r.is_error && r.text().contains("line 20: some text")),
        "read failed: {}",
        reads.results[0].text()
    );
    let noop = run(calls(1, "noop", json!({"x": "1"})));
    assert!(!noop.results[0].is_error, "{}", noop.results[0].text());

    let pi = pi_harness();
    let cases: [(&str, &str, usize, &str, Value); 3] = [
        ("pipeline_call", "trivial", 1, "noop", json!({"x": 1})),
        (
            "pipeline_call100",
            "trivial100",
            100,
            "noop",
            json!({"x": 1}),
        ),
        (
            "reads1000",
            "reads1000",
            1000,
            "read",
            json!({"path": "small.txt"}),
        ),
    ];
    for (group_name, pi_case, n, tool, args) in cases {
        let mut group = c.benchmark_group(group_name);
        group.throughput(Throughput::Elements(n as u64));
        if n >= 1000 {
            group.sample_size(20);
        }
        group.bench_function(BenchmarkId::from_parameter("toolgate"), |b| {
            b.iter_batched(
                || calls(n, tool, args.clone()),
                &run,
                criterion::BatchSize::SmallInput,
            )
        });
        if let Some(harness) = &pi {
            group.sample_size(10);
            group.bench_function(BenchmarkId::from_parameter("pi"), |b| {
                b.iter_custom(|iters| run_pi(harness, pi_case, iters, dir.path()))
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
