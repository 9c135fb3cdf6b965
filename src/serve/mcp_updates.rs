//! How a call's tool updates become MCP notifications while it runs: log
//! records (`details.log`) become `notifications/message` at or above the
//! session's level, everything else `notifications/progress` when the
//! request carried a progress token, with values that only ever increase
//! (MCP requires it) and the last line of output as the message.

// rmcp marks the logging types deprecated (SEP-2577); we serve them anyway.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;

use super::upstream_rounds;
use crate::text::shorten;
use crate::tools::ToolOutput;

/// Turns a call's tool updates into notifications: log records into
/// `notifications/message`, the rest into `notifications/progress` when the
/// request carried a progress token.
pub(super) struct UpdateForwarder {
    peer: Peer<RoleServer>,
    progress: Option<ProgressSteps>,
    log_level: Arc<AtomicU8>,
}

impl upstream_rounds::Forward for UpdateForwarder {
    fn send(&mut self, partial: &ToolOutput) -> impl std::future::Future<Output = ()> + Send {
        UpdateForwarder::send(self, partial)
    }
}

impl UpdateForwarder {
    /// A forwarder for one call: progress only when the request carried a
    /// progress token; log records at or above the session's `log_level`.
    pub(super) fn new(
        peer: Peer<RoleServer>,
        progress_token: Option<ProgressToken>,
        log_level: Arc<AtomicU8>,
    ) -> UpdateForwarder {
        UpdateForwarder {
            peer,
            progress: progress_token.map(|token| ProgressSteps { token, last: None }),
            log_level,
        }
    }

    /// Sends one update as a progress or log notification.
    pub(super) async fn send(&mut self, partial: &ToolOutput) {
        if let Some(record) = partial.details.get("log") {
            if let Some(param) = log_message(record) {
                if level_rank(param.level) >= self.log_level.load(Ordering::Relaxed) {
                    if let Err(e) = self.peer.notify_logging_message(param).await {
                        tracing::debug!(error = %e, "log notification not sent");
                    }
                }
            }
            return;
        }
        if let Some(param) = self.progress.as_mut().and_then(|p| p.next(partial)) {
            if let Err(e) = self.peer.notify_progress(param).await {
                tracing::debug!(error = %e, "progress notification not sent");
            }
        }
    }
}

/// Severity order of MCP log levels (RFC 5424's, least severe first).
pub(super) fn level_rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A tool's `log` record (`{"level": "info", "data": …, "logger": "…"}`) as
/// a log notification; an unknown level counts as `info`.
fn log_message(record: &Value) -> Option<LoggingMessageNotificationParam> {
    let data = record.get("data")?.clone();
    let level = record
        .get("level")
        .cloned()
        .and_then(|l| serde_json::from_value(l).ok())
        .unwrap_or(LoggingLevel::Info);
    let mut param = LoggingMessageNotificationParam::new(level, data);
    param.logger = record
        .get("logger")
        .and_then(Value::as_str)
        .map(String::from);
    Some(param)
}

/// The progress values of one call, kept strictly increasing.
struct ProgressSteps {
    token: ProgressToken,
    last: Option<f64>,
}

impl ProgressSteps {
    /// The notification for one update, or `None` when its progress would
    /// not be an increase (MCP requires every notification to increase).
    fn next(&mut self, partial: &ToolOutput) -> Option<ProgressNotificationParam> {
        let number = |key: &str| partial.details.get(key).and_then(Value::as_f64);
        // A tool that knows how far it is says so in its details; otherwise
        // each update counts one step.
        let (progress, total) = match number("progress") {
            Some(p) if p.is_finite() => (p, number("total").filter(|t| t.is_finite())),
            _ => (self.last.map_or(1.0, |l| l.floor() + 1.0), None),
        };
        if self.last.is_some_and(|last| progress <= last) {
            return None;
        }
        self.last = Some(progress);
        let mut param = ProgressNotificationParam::new(self.token.clone(), progress);
        param.total = total;
        param.message = progress_message(partial);
        Some(param)
    }
}

/// The message of a progress notification: the tool's own `message` detail,
/// else the last line of its (redacted) output so far, shortened.
fn progress_message(partial: &ToolOutput) -> Option<String> {
    if let Some(m) = partial.details.get("message").and_then(Value::as_str) {
        return Some(m.to_string());
    }
    let text = partial.content.iter().rev().find_map(|c| match c {
        crate::tools::Content::Text { text } => Some(text.as_str()),
        _ => None,
    })?;
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    Some(shorten(line.trim(), 200))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Content;

    fn peerless_forwarder() -> ProgressSteps {
        ProgressSteps {
            token: ProgressToken(rmcp::model::NumberOrString::Number(1)),
            last: None,
        }
    }

    fn update(text: &str, details: Value) -> ToolOutput {
        ToolOutput {
            content: vec![Content::text(text)],
            details,
        }
    }

    #[test]
    fn progress_counts_updates_and_uses_the_last_line() {
        let mut f = peerless_forwarder();
        let a = f.next(&update("1\n", Value::Null)).unwrap();
        let b = f.next(&update("1\n2\n", Value::Null)).unwrap();
        assert_eq!((a.progress, b.progress), (1.0, 2.0));
        assert_eq!(b.message.as_deref(), Some("2"));
        assert_eq!(b.total, None);
    }

    #[test]
    fn progress_from_details_never_goes_back() {
        let mut f = peerless_forwarder();
        let d = |p: f64| serde_json::json!({"progress": p, "total": 100, "message": "m"});
        let first = f.next(&update("", d(0.0))).unwrap();
        assert_eq!((first.progress, first.total), (0.0, Some(100.0)));
        assert_eq!(first.message.as_deref(), Some("m"));
        assert_eq!(f.next(&update("", d(50.0))).unwrap().progress, 50.0);
        assert!(f.next(&update("", d(50.0))).is_none());
        assert!(f.next(&update("", d(10.0))).is_none());
        assert_eq!(f.next(&update("", d(100.0))).unwrap().progress, 100.0);
        // A counted step after explicit progress still increases.
        assert_eq!(f.next(&update("x", Value::Null)).unwrap().progress, 101.0);
    }

    #[test]
    fn log_records_become_log_messages() {
        let m = log_message(&serde_json::json!({"level": "warning", "data": "x", "logger": "t"}))
            .unwrap();
        assert_eq!(level_rank(m.level), 3);
        assert_eq!(m.logger.as_deref(), Some("t"));
        let m = log_message(&serde_json::json!({"level": "loud", "data": {"a": 1}})).unwrap();
        assert_eq!(level_rank(m.level), 1);
        assert!(log_message(&serde_json::json!({"level": "info"})).is_none());
    }

    #[test]
    fn long_messages_are_shortened_on_a_char_boundary() {
        assert_eq!(shorten("héllo", 2), "hé…");
        assert_eq!(shorten("hi", 5), "hi");
    }
}
