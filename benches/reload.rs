//! Change-to-effect reload latency: from a policy file's save to the moment
//! a decision made through the gateway reflects it.
//!
//! Each iteration rewrites the policy (alternating between a version that
//! allows reading `notes.txt` and one that denies it) and polls the
//! gateway's decision until it flips. The time includes the file-system
//! event, the quiet period ([`toolgate::serve::reload::QUIET`]), compiling
//! the policy and the atomic swap. Criterion reports the mean and median; the
//! bench also prints the median and p99 of every save it timed.
//!
//! Run: `cargo bench --bench reload`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use toolgate::serve::{reload, Gateway, GatewayConfig};
use toolgate::{ConfigPaths, Decision, ToolCall};

const ALLOW: &str = "version: 1\nextends: [\"builtin:default\"]\n";
const DENY: &str = "version: 1\nextends: [\"builtin:default\"]\npaths:\n  deny: [\"notes.txt\"]\n";

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("notes.txt"), "hello\n").expect("notes");
    std::fs::create_dir(dir.path().join("policies")).expect("policies");
    let policy = dir.path().join("policies/main.yaml");
    std::fs::write(&policy, ALLOW).expect("policy");
    let gateway = Gateway::start(GatewayConfig {
        paths: ConfigPaths {
            policies: Some(dir.path().join("policies")),
            manifests: None,
        },
        workspace: dir.path().to_path_buf(),
        decision_log: Some(dir.path().join("decisions.jsonl")),
        ..GatewayConfig::default()
    })
    .expect("gateway");
    let _watch = reload::watch(gateway.clone()).expect("watch");
    let call = ToolCall {
        id: "r".into(),
        name: "read".into(),
        arguments: json!({"path": "notes.txt"}),
    };
    let samples = Mutex::new(Vec::new());
    let mut revision = 0u64;

    let mut group = c.benchmark_group("reload");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("change_to_effect", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                revision += 1;
                let (text, want) = if revision % 2 == 1 {
                    (DENY, Decision::Deny)
                } else {
                    (ALLOW, Decision::Allow)
                };
                let started = Instant::now();
                std::fs::write(&policy, format!("# revision {revision}\n{text}")).expect("save");
                while gateway.eval(&call).decision != want {
                    assert!(
                        started.elapsed() < Duration::from_secs(10),
                        "the reload never took effect"
                    );
                    std::thread::sleep(Duration::from_micros(200));
                }
                let took = started.elapsed();
                samples.lock().expect("samples").push(took);
                total += took;
            }
            total
        })
    });
    group.finish();

    let mut all = samples.into_inner().expect("samples");
    all.sort();
    if !all.is_empty() {
        let pick = |q: f64| all[((all.len() as f64 - 1.0) * q).round() as usize];
        eprintln!(
            "reload change-to-effect over {} saves: median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            all.len(),
            pick(0.5).as_secs_f64() * 1e3,
            pick(0.99).as_secs_f64() * 1e3,
            pick(1.0).as_secs_f64() * 1e3
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
