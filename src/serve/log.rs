//! The decision log: one JSON line per call, so an operator can tell which
//! policy version made every decision.
//!
//! ```json
//! {"time":"2026-11-30T10:00:00.123Z","id":"7","tool":"bash","decision":"deny",
//!  "rule":"no-recursive-delete","reason":"…","policy_version":"3f9c…",
//!  "duration_ms":0.41,"is_error":true,"result_rule":null,
//!  "arguments":{"command":"rm -rf /"}}
//! ```
//!
//! `identity` is who called (a token's id or a JWT's identity claim) and
//! `profile` the tools it had, both `null` without authentication; the
//! token itself is never written.
//!
//! `result_rule` names the after-rule (`results:`) that applied to the
//! call's result, or is `null` when none did.
//!
//! Arguments, the reason and audit findings' reasons are redacted with the
//! policy's rules before they are written:
//! a log is exactly where a leaked key would live forever. `decision` is
//! `null` for calls that never reached the policy (unknown tool, invalid
//! arguments); `reason` then says what happened.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::executor::ToolResult;
use crate::policy::auth::Identity;
use crate::policy::{AuditFinding, Decision, Policy};

/// Where decision lines go.
pub struct DecisionLog {
    out: Mutex<Box<dyn Write + Send>>,
}

impl DecisionLog {
    /// Appends to `path`, or writes to stderr when `None`.
    pub fn open(path: Option<&Path>) -> io::Result<DecisionLog> {
        let out: Box<dyn Write + Send> = match path {
            Some(p) => Box::new(OpenOptions::new().create(true).append(true).open(p)?),
            None => Box::new(io::stderr()),
        };
        Ok(DecisionLog {
            out: Mutex::new(out),
        })
    }

    /// Writes one call's line. A failing log write is reported on stderr and
    /// does not fail the call.
    pub fn record(
        &self,
        policy: &Policy,
        result: &ToolResult,
        arguments: &Value,
        elapsed: Duration,
        identity: Option<&Identity>,
    ) {
        let mut line = Vec::with_capacity(LINE_CAPACITY);
        write_line(&mut line, policy, result, arguments, elapsed, identity);
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // One write per line (`writeln!` on the unbuffered file made two
        // system calls: the line, then its newline).
        if out.write_all(&line).and_then(|_| out.flush()).is_err() {
            eprintln!("toolgate: could not write the decision log");
        }
    }
}

/// Room for a typical line up front (time, ids, a short reason and small
/// arguments), so serializing it does not grow the buffer.
const LINE_CAPACITY: usize = 512;

/// One call's log line, as [`DecisionLog::record`] writes it (without the
/// newline), for tests.
#[cfg(test)]
fn decision_line(
    policy: &Policy,
    result: &ToolResult,
    arguments: &Value,
    elapsed: Duration,
    identity: Option<&Identity>,
) -> String {
    let mut line = Vec::with_capacity(LINE_CAPACITY);
    write_line(&mut line, policy, result, arguments, elapsed, identity);
    // Serialized JSON is UTF-8.
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Appends one call's line (no newline) to `out`.
fn write_line(
    out: &mut Vec<u8>,
    policy: &Policy,
    result: &ToolResult,
    arguments: &Value,
    elapsed: Duration,
    identity: Option<&Identity>,
) {
    let redactor = policy.redactor.get();
    // Copied only when a secret has to be taken out.
    let arguments = redactor.redacted_json(arguments);
    let verdict = result.verdict.as_ref();
    let reason = match verdict {
        Some(v) => Cow::Borrowed(v.reason.as_str()),
        None => Cow::Owned(first_chars(&result.text(), 300)),
    };
    let reason = match redactor.redact(&reason) {
        Cow::Owned(clean) => Cow::Owned(clean),
        Cow::Borrowed(_) => reason,
    };
    // Serialized straight from borrowed fields (no intermediate `Value`
    // map): the same keys in the same order as always.
    let line = Line {
        time: now_rfc3339(),
        id: &result.id,
        tool: &result.name,
        decision: verdict.map(|v| v.decision),
        rule: verdict.and_then(|v| v.rule.as_deref()),
        reason,
        policy_version: &result.policy_version,
        duration_ms: (elapsed.as_secs_f64() * 1e6).round() / 1e3,
        is_error: result.is_error,
        result_rule: result.result_rule.as_deref(),
        arguments: &arguments,
        identity: identity.map(|i| i.id.as_str()),
        profile: identity.and_then(|i| i.profile.as_deref()),
        // `audit` only when an audit-only entry (mode: audit) had a finding.
        audit: verdict
            .map(|v| redacted_findings(policy, &v.audit))
            .filter(|a| !a.is_empty()),
    };
    let start = out.len();
    if let Err(e) = line.write(out) {
        out.truncate(start);
        let fallback =
            json!({"time": line.time, "id": result.id, "error": format!("unloggable call: {e}")});
        out.extend_from_slice(fallback.to_string().as_bytes());
    }
}

/// The fields of one line, in the order they are written.
struct Line<'a> {
    time: String,
    id: &'a str,
    tool: &'a str,
    decision: Option<Decision>,
    rule: Option<&'a str>,
    reason: Cow<'a, str>,
    policy_version: &'a str,
    duration_ms: f64,
    is_error: bool,
    result_rule: Option<&'a str>,
    arguments: &'a Value,
    identity: Option<&'a str>,
    profile: Option<&'a str>,
    /// Left out when `None`.
    audit: Option<Cow<'a, [AuditFinding]>>,
}

impl Line<'_> {
    /// Appends the line as one JSON object, field by field: the bytes
    /// `serde_json` writes for the struct (a derived `Serialize`, which it
    /// was), without escaping the constant keys again for every line.
    fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        fn value(out: &mut Vec<u8>, key: &[u8], v: &impl Serialize) -> serde_json::Result<()> {
            out.extend_from_slice(key);
            serde_json::to_writer(&mut *out, v)
        }
        value(out, b"{\"time\":", &self.time)?;
        value(out, b",\"id\":", &self.id)?;
        value(out, b",\"tool\":", &self.tool)?;
        value(out, b",\"decision\":", &self.decision)?;
        value(out, b",\"rule\":", &self.rule)?;
        value(out, b",\"reason\":", &self.reason)?;
        value(out, b",\"policy_version\":", &self.policy_version)?;
        value(out, b",\"duration_ms\":", &self.duration_ms)?;
        value(out, b",\"is_error\":", &self.is_error)?;
        value(out, b",\"result_rule\":", &self.result_rule)?;
        value(out, b",\"arguments\":", self.arguments)?;
        value(out, b",\"identity\":", &self.identity)?;
        value(out, b",\"profile\":", &self.profile)?;
        if let Some(audit) = &self.audit {
            value(out, b",\"audit\":", audit)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// Audit findings with their reasons redacted like the top-level reason (a
/// reason may quote the call); borrowed when no reason holds a secret.
fn redacted_findings<'a>(policy: &Policy, findings: &'a [AuditFinding]) -> Cow<'a, [AuditFinding]> {
    let redactor = policy.redactor.get();
    let mut out = Cow::Borrowed(findings);
    for (i, finding) in findings.iter().enumerate() {
        if let Cow::Owned(clean) = redactor.redact(&finding.reason) {
            out.to_mut()[i].reason = clean;
        }
    }
    out
}

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The current time as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    rfc3339(super::unix_now())
}

/// `secs` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn rfc3339(secs: f64) -> String {
    let fields = civil(secs);
    let [year, month, day, h, m, s, ms] = fields;
    if !(0..=9999).contains(&year) {
        return format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z");
    }
    // Digit by digit into a fixed buffer: `format!` with padding, and then
    // a loop of powers of ten, were a visible part of a line's cost.
    let mut out = *b"0000-00-00T00:00:00.000Z";
    for (n, (at, width)) in
        fields
            .into_iter()
            .zip([(0, 4), (5, 2), (8, 2), (11, 2), (14, 2), (17, 2), (20, 3)])
    {
        let mut n = n;
        for place in (at..at + width).rev() {
            out[place] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    }
    // ASCII digits and separators only.
    std::str::from_utf8(&out).unwrap_or_default().to_owned()
}

/// `secs` since the epoch as year, month, day, hour, minute, second and
/// millisecond (UTC).
fn civil(secs: f64) -> [i64; 7] {
    let millis = (secs * 1000.0) as i64;
    let (days, ms_of_day) = (millis.div_euclid(86_400_000), millis.rem_euclid(86_400_000));
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar),
    // counting in 400-year eras that start on March 1st.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    [
        year,
        month,
        day,
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::redact_value;

    /// The line as it was built before it was serialized from a struct
    /// (a `json!` map): the bytes must not change.
    fn line_as_a_map(
        policy: &Policy,
        result: &ToolResult,
        arguments: &Value,
        elapsed: Duration,
        identity: Option<&Identity>,
    ) -> String {
        let mut arguments = arguments.clone();
        redact_value(policy.redactor.get(), &mut arguments);
        let (decision, rule, reason) = match &result.verdict {
            Some(v) => (json!(v.decision), json!(v.rule), v.reason.clone()),
            None => (Value::Null, Value::Null, first_chars(&result.text(), 300)),
        };
        let reason = policy.redactor.get().redact(&reason).into_owned();
        let mut line = json!({
            "time": "T", "id": result.id, "tool": result.name, "decision": decision,
            "rule": rule, "reason": reason, "policy_version": result.policy_version,
            "duration_ms": (elapsed.as_secs_f64() * 1e6).round() / 1e3,
            "is_error": result.is_error, "result_rule": result.result_rule,
            "arguments": arguments, "identity": identity.map(|i| i.id.as_str()),
            "profile": identity.and_then(|i| i.profile.as_deref()),
        });
        if let Some(v) = result.verdict.as_ref().filter(|v| !v.audit.is_empty()) {
            let mut audit = v.audit.clone();
            for finding in &mut audit {
                finding.reason = policy.redactor.get().redact(&finding.reason).into_owned();
            }
            line["audit"] = json!(audit);
        }
        line.to_string()
    }

    #[test]
    fn the_line_has_the_same_bytes_as_the_map_it_was_built_from_before() {
        let policy = Policy::from_yaml("version: 1\nextends: [builtin:default]\n").unwrap();
        let key = "ghp_0123456789abcdefghij0123456789abcdef";
        let mut denied = ToolResult::error("mcp-7", "bash", "no");
        let mut verdict = crate::policy::Verdict::deny(
            Some(crate::policy::RuleId::Named("no-rm".into())),
            "rm \"quoted\" é",
        );
        verdict.audit.push(crate::policy::AuditFinding {
            decision: crate::policy::Decision::Ask,
            rule: "audit-only".into(),
            reason: "would ask".into(),
        });
        verdict.audit.push(crate::policy::AuditFinding {
            decision: crate::policy::Decision::Deny,
            rule: "audit-quotes".into(),
            reason: format!("would deny `echo {key}`"),
        });
        denied.verdict = Some(verdict);
        denied.policy_version = "3f9c".into();
        let mut allowed = ToolResult::error("mcp-8", "ls", "x".repeat(400));
        allowed.is_error = false;
        allowed.result_rule = Some("cut".into());
        let mut ok = crate::policy::Verdict::deny(None, "allowed");
        ok.decision = crate::policy::Decision::Allow;
        allowed.verdict = Some(ok);
        let unknown = ToolResult::error("9", "nope", format!("unknown tool {key}"));
        let who = Identity {
            id: "ci-bot".into(),
            profile: Some("readonly".into()),
            source: crate::policy::auth::IdentitySource::default(),
        };
        let args = json!({"command": format!("echo {key}"), "n": 1.5, "z": [null, true], "a": {}});
        // Clean arguments are serialized borrowed, not copied and redacted.
        let clean = json!({"text": "hello", "n": [1, {"k": "v"}]});
        for (result, args) in [
            (&denied, &args),
            (&allowed, &args),
            (&unknown, &args),
            (&allowed, &clean),
            (&denied, &clean),
        ] {
            for identity in [None, Some(&who)] {
                for elapsed in [Duration::ZERO, Duration::from_micros(1234567)] {
                    let got = decision_line(&policy, result, args, elapsed, identity);
                    // Byte for byte, after the time (which differs).
                    let time = serde_json::from_str::<Value>(&got).unwrap()["time"].clone();
                    assert!(time.as_str().is_some_and(|t| t.ends_with('Z')), "{got}");
                    let got = got.replacen(&format!("\"time\":{time}"), "\"time\":\"T\"", 1);
                    let want = line_as_a_map(&policy, result, args, elapsed, identity);
                    assert_eq!(got, want);
                    assert!(!want.contains(key), "{want}");
                }
            }
        }
    }

    #[test]
    fn the_line_names_the_result_rule_that_applied() {
        let policy = Policy::from_yaml("version: 1\n").unwrap();
        let mut result = ToolResult::error("1", "bash", "failed");
        let line = |r: &ToolResult| -> Value {
            serde_json::from_str(&decision_line(&policy, r, &json!({}), Duration::ZERO, None))
                .unwrap()
        };
        assert_eq!(line(&result)["result_rule"], Value::Null);
        result.result_rule = Some("stop-on-failed-tests".into());
        assert_eq!(line(&result)["result_rule"], "stop-on-failed-tests");
    }

    #[test]
    fn audit_findings_are_logged_only_when_there_are_some() {
        let policy = Policy::from_yaml("version: 1\n").unwrap();
        let mut result = ToolResult::error("1", "bash", "x");
        let mut verdict = crate::policy::Verdict::deny(None, "no");
        result.verdict = Some(verdict.clone());
        let line = |r: &ToolResult| -> Value {
            serde_json::from_str(&decision_line(&policy, r, &json!({}), Duration::ZERO, None))
                .unwrap()
        };
        assert!(line(&result).get("audit").is_none());
        verdict.audit.push(crate::policy::AuditFinding {
            decision: crate::policy::Decision::Deny,
            rule: "no-network".into(),
            reason: "no network".into(),
        });
        result.verdict = Some(verdict);
        assert_eq!(
            line(&result)["audit"],
            json!([{"decision": "deny", "rule": "no-network", "reason": "no network"}])
        );
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400.5), "2000-02-29T00:00:00.500Z");
        assert_eq!(rfc3339(1_796_036_400.0), "2026-11-30T11:00:00.000Z");
        assert_eq!(rfc3339(-1.0), "1969-12-31T23:59:59.000Z");
        assert_eq!(rfc3339(253_402_300_800.0), "10000-01-01T00:00:00.000Z");
    }

    /// Written digit by digit, the same text `format!` with padding gives,
    /// over four centuries in uneven steps.
    #[test]
    fn timestamps_match_the_padded_format() {
        let mut secs = -86_400.0 * 400.0;
        while secs < 13_000_000_000.0 {
            let [year, month, day, h, m, s, ms] = civil(secs);
            assert_eq!(
                rfc3339(secs),
                format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}Z"),
                "{secs}"
            );
            secs += 86_399.123 * 3.7;
        }
    }
}
