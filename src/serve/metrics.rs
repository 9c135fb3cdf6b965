//! Prometheus metrics: decisions by tool, decision and rule; reloads; call
//! latency. Rendered as the text exposition format at `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::executor::ToolResult;
use crate::policy::Verdict;

/// Upper bounds of the latency histogram's buckets, in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0,
];

/// The gateway's counters.
#[derive(Default)]
pub struct Metrics {
    /// (tool, decision, rule) -> count, for calls and evals.
    decisions: Mutex<BTreeMap<(String, String, String), u64>>,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
    latency: Mutex<Histogram>,
}

#[derive(Default)]
struct Histogram {
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Metrics {
    /// Counts a finished call and its latency.
    pub fn record_call(&self, result: &ToolResult, elapsed: Duration) {
        let (decision, rule) = match &result.verdict {
            Some(v) => (
                v.decision.as_str().to_string(),
                v.rule.clone().unwrap_or_default(),
            ),
            None => ("none".to_string(), String::new()),
        };
        self.count_decision(&result.name, decision, rule);
        let mut h = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        if h.buckets.is_empty() {
            h.buckets = vec![0; LATENCY_BUCKETS.len()];
        }
        let secs = elapsed.as_secs_f64();
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.buckets[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// Counts an eval-only decision.
    pub fn record_eval(&self, tool: &str, verdict: &Verdict) {
        self.count_decision(
            tool,
            verdict.decision.as_str().to_string(),
            verdict.rule.clone().unwrap_or_default(),
        );
    }

    fn count_decision(&self, tool: &str, decision: String, rule: String) {
        let mut d = self.decisions.lock().unwrap_or_else(|e| e.into_inner());
        *d.entry((tool.to_string(), decision, rule)).or_insert(0) += 1;
    }

    /// Counts a reload.
    pub fn record_reload(&self, ok: bool) {
        let counter = if ok {
            &self.reloads_ok
        } else {
            &self.reloads_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self, policy_version: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP toolgate_decisions_total Tool calls decided, by tool, decision and rule."
        );
        let _ = writeln!(out, "# TYPE toolgate_decisions_total counter");
        for ((tool, decision, rule), n) in self
            .decisions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "toolgate_decisions_total{{tool=\"{}\",decision=\"{}\",rule=\"{}\"}} {n}",
                escape(tool),
                escape(decision),
                escape(rule)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolgate_reloads_total Policy reloads, by result."
        );
        let _ = writeln!(out, "# TYPE toolgate_reloads_total counter");
        let _ = writeln!(
            out,
            "toolgate_reloads_total{{result=\"ok\"}} {}",
            self.reloads_ok.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "toolgate_reloads_total{{result=\"failed\"}} {}",
            self.reloads_failed.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP toolgate_call_duration_seconds Time from call to result."
        );
        let _ = writeln!(out, "# TYPE toolgate_call_duration_seconds histogram");
        let h = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            let n = h.buckets.get(i).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "toolgate_call_duration_seconds_bucket{{le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "toolgate_call_duration_seconds_bucket{{le=\"+Inf\"}} {}",
            h.count
        );
        let _ = writeln!(out, "toolgate_call_duration_seconds_sum {}", h.sum);
        let _ = writeln!(out, "toolgate_call_duration_seconds_count {}", h.count);
        let _ = writeln!(
            out,
            "# HELP toolgate_policy_info The active policy version."
        );
        let _ = writeln!(out, "# TYPE toolgate_policy_info gauge");
        let _ = writeln!(
            out,
            "toolgate_policy_info{{version=\"{}\"}} 1",
            escape(policy_version)
        );
        out
    }
}

/// Escapes a Prometheus label value.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
