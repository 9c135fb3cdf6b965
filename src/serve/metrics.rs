//! Prometheus metrics: decisions by source (a tool `call`, or an `eval` that
//! only asked), tool, decision and rule; result rules that applied, by tool
//! and rule; reloads; call latency. Rendered as the text exposition format
//! at `/metrics`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::executor::ToolResult;
use crate::policy::auth::{Identity, IdentitySource};
use crate::policy::Verdict;

/// Upper bounds of the latency histogram's buckets, in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0,
];

/// A decisions counter's labels: source (`call` or `eval`), tool, decision,
/// rule, identity label (empty without authentication).
type DecisionKey = (&'static str, String, String, String, String);

/// The `identity` label of a caller, with bounded cardinality: a static
/// token's id (the policy lists them), or `jwt:PROFILE` for a JWT caller
/// (`jwt:default` without a profile) — never a raw JWT subject, of which
/// there may be any number. Empty without authentication (no label).
pub fn identity_label(identity: Option<&Identity>) -> String {
    match identity {
        None => String::new(),
        Some(i) if i.source == IdentitySource::Jwt => {
            format!("jwt:{}", i.profile.as_deref().unwrap_or("default"))
        }
        Some(i) => i.id.clone(),
    }
}

/// An audit-findings counter's labels: source, tool, decision, rule.
type AuditKey = (&'static str, String, String, String);

/// The gateway's counters.
#[derive(Default)]
pub struct Metrics {
    /// (source, tool, decision, rule, identity) -> count; source is `call`
    /// or `eval`.
    decisions: Mutex<BTreeMap<DecisionKey, u64>>,
    /// The same labels for audit-only findings (`mode: audit`).
    audit: Mutex<BTreeMap<AuditKey, u64>>,
    /// (tool, result rule) -> count of results the rule applied to.
    result_rules: Mutex<BTreeMap<(String, String), u64>>,
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
    pub fn record_call(&self, result: &ToolResult, elapsed: Duration, identity: &str) {
        let (decision, rule) = match &result.verdict {
            Some(v) => (
                v.decision.as_str().to_string(),
                v.rule.clone().unwrap_or_default(),
            ),
            None => ("none".to_string(), String::new()),
        };
        self.count_decision("call", &result.name, decision, rule, identity);
        if let Some(v) = &result.verdict {
            self.count_audit("call", &result.name, v);
        }
        if let Some(rule) = &result.result_rule {
            let mut r = self.result_rules.lock().unwrap_or_else(|e| e.into_inner());
            *r.entry((result.name.clone(), rule.clone())).or_insert(0) += 1;
        }
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
    pub fn record_eval(&self, tool: &str, verdict: &Verdict, identity: &str) {
        self.count_decision(
            "eval",
            tool,
            verdict.decision.as_str().to_string(),
            verdict.rule.clone().unwrap_or_default(),
            identity,
        );
        self.count_audit("eval", tool, verdict);
    }

    fn count_audit(&self, source: &'static str, tool: &str, verdict: &Verdict) {
        if verdict.audit.is_empty() {
            return;
        }
        let mut a = self.audit.lock().unwrap_or_else(|e| e.into_inner());
        for f in &verdict.audit {
            let key = (
                source,
                tool.to_string(),
                f.decision.as_str().to_string(),
                f.rule.clone(),
            );
            *a.entry(key).or_insert(0) += 1;
        }
    }

    fn count_decision(
        &self,
        source: &'static str,
        tool: &str,
        decision: String,
        rule: String,
        identity: &str,
    ) {
        let mut d = self.decisions.lock().unwrap_or_else(|e| e.into_inner());
        *d.entry((
            source,
            tool.to_string(),
            decision,
            rule,
            identity.to_string(),
        ))
        .or_insert(0) += 1;
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
            "# HELP toolgate_audit_findings_total What audit-only entries (mode: audit) would have decided, by source, tool, decision and rule; never part of a decision."
        );
        let _ = writeln!(out, "# TYPE toolgate_audit_findings_total counter");
        for ((source, tool, decision, rule), n) in
            self.audit.lock().unwrap_or_else(|e| e.into_inner()).iter()
        {
            let _ = writeln!(
                out,
                "toolgate_audit_findings_total{{mode=\"audit\",source=\"{source}\",tool=\"{}\",decision=\"{}\",rule=\"{}\"}} {n}",
                escape(tool),
                escape(decision),
                escape(rule)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolgate_decisions_total Decisions, by source (call or eval), tool, decision and rule."
        );
        let _ = writeln!(out, "# TYPE toolgate_decisions_total counter");
        for ((source, tool, decision, rule, identity), n) in self
            .decisions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let identity = if identity.is_empty() {
                String::new()
            } else {
                format!(",identity=\"{}\"", escape(identity))
            };
            let _ = writeln!(
                out,
                "toolgate_decisions_total{{source=\"{source}\",tool=\"{}\",decision=\"{}\",rule=\"{}\"{identity}}} {n}",
                escape(tool),
                escape(decision),
                escape(rule)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolgate_result_rules_total Results an after-rule (results:) applied to, by tool and rule."
        );
        let _ = writeln!(out, "# TYPE toolgate_result_rules_total counter");
        for ((tool, rule), n) in self
            .result_rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "toolgate_result_rules_total{{tool=\"{}\",rule=\"{}\"}} {n}",
                escape(tool),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Decision;

    #[test]
    fn calls_and_evals_are_counted_apart() {
        let metrics = Metrics::default();
        let deny = Verdict {
            decision: Decision::Deny,
            reason: "no".into(),
            rule: Some("no-rm".into()),
            terminate: false,
            audit: Vec::new(),
        };
        let mut result = ToolResult::error("1", "bash", "denied");
        result.verdict = Some(deny.clone());
        metrics.record_call(&result, Duration::from_millis(2), "");
        metrics.record_call(&result, Duration::from_millis(2), "");
        metrics.record_eval("bash", &deny, "");
        let mut audited = deny.clone();
        audited.audit.push(crate::policy::AuditFinding {
            decision: Decision::Ask,
            rule: "review-pushes".into(),
            reason: "r".into(),
        });
        metrics.record_eval("bash", &audited, "");
        let text = metrics.render("v1");
        assert!(text.contains("toolgate_audit_findings_total{mode=\"audit\",source=\"eval\",tool=\"bash\",decision=\"ask\",rule=\"review-pushes\"} 1"), "{text}");
        assert!(text.contains(
            "toolgate_decisions_total{source=\"call\",tool=\"bash\",decision=\"deny\",rule=\"no-rm\"} 2"
        ), "{text}");
        assert!(text.contains(
            "toolgate_decisions_total{source=\"eval\",tool=\"bash\",decision=\"deny\",rule=\"no-rm\"} 2"
        ), "{text}");
        assert!(!text.contains("toolgate_result_rules_total{"), "{text}");
        result.result_rule = Some("stop-on-failed-tests".into());
        metrics.record_call(&result, Duration::from_millis(2), "");
        let text = metrics.render("v1");
        assert!(
            text.contains(
                "toolgate_result_rules_total{tool=\"bash\",rule=\"stop-on-failed-tests\"} 1"
            ),
            "{text}"
        );
        // Only calls have a latency.
        assert!(
            text.contains("toolgate_call_duration_seconds_count 3"),
            "{text}"
        );
    }

    #[test]
    fn identity_labels_are_token_ids_or_jwt_profiles() {
        let token = Identity::new("ci-bot", Some("readonly".into()));
        let jwt = Identity {
            source: IdentitySource::Jwt,
            ..Identity::new("alice@example.com", None)
        };
        assert_eq!(identity_label(None), "");
        assert_eq!(identity_label(Some(&token)), "ci-bot");
        assert_eq!(identity_label(Some(&jwt)), "jwt:default");
        let metrics = Metrics::default();
        let result = ToolResult::error("1", "bash", "denied");
        metrics.record_call(&result, Duration::ZERO, &identity_label(Some(&jwt)));
        let text = metrics.render("v1");
        assert!(text.contains("identity=\"jwt:default\"} 1"), "{text}");
        assert!(!text.contains("alice"), "{text}");
    }
}
