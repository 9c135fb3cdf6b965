//! The executor's limits: argument size and depth before any walk, calls
//! per batch, and calls running at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::tests::{call, executor_with};
use super::*;
use crate::tools::{ToolContext, ToolFuture, ToolOutput};

/// Counts how many of its calls run at once.
#[derive(Debug, Default)]
struct Gauge {
    running: AtomicUsize,
    peak: AtomicUsize,
}

impl Tool for Gauge {
    fn execute<'a>(&'a self, _ctx: &'a ToolContext, _args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(40)).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::text("done"))
        })
    }
}

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

#[tokio::test]
async fn arguments_over_the_size_limit_are_refused_before_validation() {
    let (_dir, exec) = executor_with("limits:\n  max_argument_bytes: 100\n", vec![]);
    let result = exec
        .run_call(
            call("1", "fast", json!({"x": 1, "pad": "y".repeat(200)})),
            BatchOptions::default(),
        )
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("larger than 100B (limits.max_argument_bytes)"),
        "{}",
        result.text()
    );
    let verdict = result.verdict.expect("logged as a decision");
    assert_eq!(verdict.rule.as_deref(), Some("limits.max_argument_bytes"));
    // Under the limit the same call runs.
    let ok = exec
        .run_call(call("2", "fast", json!({"x": 1})), BatchOptions::default())
        .await;
    assert!(!ok.is_error, "{}", ok.text());
}

#[tokio::test]
async fn arguments_over_the_depth_limit_are_refused_before_validation() {
    let (_dir, exec) = executor_with("", vec![]);
    // 100 deep: parses (serde_json allows 128) but is over the default 32.
    let result = exec
        .run_call(
            call("1", "fast", json!({"x": 1, "deep": nested(100)})),
            BatchOptions::default(),
        )
        .await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("more than 32 levels deep (limits.max_argument_depth)"),
        "{}",
        result.text()
    );
    // As deep as a parser hands over (serde_json stops at 128; deeper values
    // cannot even be cloned or dropped safely, serde_json recurses there).
    let result = exec
        .run_call(call("2", "fast", nested(127)), BatchOptions::default())
        .await;
    assert!(result.text().contains("limits.max_argument_depth"));
}

#[tokio::test]
async fn a_batch_over_the_limit_runs_none_of_its_calls() {
    let gauge = Arc::new(Gauge::default());
    let (_dir, exec) = executor_with(
        "limits:\n  max_batch_calls: 3\n",
        vec![("slow", gauge.clone() as Arc<dyn Tool>)],
    );
    let calls: Vec<ToolCall> = (0..4)
        .map(|i| call(&i.to_string(), "slow", json!({})))
        .collect();
    let outcome = exec.run_batch(calls, BatchOptions::default()).await;
    assert_eq!(outcome.results.len(), 4);
    for r in &outcome.results {
        assert!(r.is_error);
        assert!(
            r.text().contains("4 tool calls, over the limit of 3"),
            "{}",
            r.text()
        );
    }
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 0, "nothing ran");
    let calls: Vec<ToolCall> = (0..3)
        .map(|i| call(&i.to_string(), "slow", json!({})))
        .collect();
    let outcome = exec.run_batch(calls, BatchOptions::default()).await;
    assert!(outcome.results.iter().all(|r| !r.is_error));
}

#[tokio::test]
async fn concurrent_calls_wait_for_a_permit() {
    let gauge = Arc::new(Gauge::default());
    let (_dir, exec) = executor_with(
        "limits:\n  max_concurrent_calls: 2\n",
        vec![("slow", gauge.clone() as Arc<dyn Tool>)],
    );
    let exec = Arc::new(exec);
    // One batch of 5 and, at the same time, 3 single calls: 8 calls, at
    // most 2 running at any moment, all of them finishing.
    let batch = {
        let exec = exec.clone();
        tokio::spawn(async move {
            let calls: Vec<ToolCall> = (0..5)
                .map(|i| call(&i.to_string(), "slow", json!({})))
                .collect();
            exec.run_batch(calls, BatchOptions::default()).await
        })
    };
    let mut singles = Vec::new();
    for i in 0..3 {
        let exec = exec.clone();
        singles.push(tokio::spawn(async move {
            exec.run_call(
                call(&format!("s{i}"), "slow", json!({})),
                BatchOptions::default(),
            )
            .await
        }));
    }
    let outcome = batch.await.unwrap();
    assert!(outcome.results.iter().all(|r| !r.is_error));
    for s in singles {
        assert!(!s.await.unwrap().is_error);
    }
    assert_eq!(gauge.peak.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_call_cancelled_while_waiting_for_a_permit_never_runs() {
    let gauge = Arc::new(Gauge::default());
    let (_dir, exec) = executor_with(
        "limits:\n  max_concurrent_calls: 1\n",
        vec![("slow", gauge.clone() as Arc<dyn Tool>)],
    );
    let options = BatchOptions::default();
    let cancel = options.cancel.clone();
    let calls: Vec<ToolCall> = (0..3)
        .map(|i| call(&i.to_string(), "slow", json!({})))
        .collect();
    let run = exec.run_batch(calls, options);
    let stop = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(run, stop);
    let aborted = outcome
        .results
        .iter()
        .filter(|r| r.text() == pipeline::ABORTED)
        .count();
    assert_eq!(aborted, 2, "{:?}", outcome.results);
}
