//! Claude Code's hook output.
//!
//! PreToolUse: `hookSpecificOutput.permissionDecision` allow | ask | deny with
//! `permissionDecisionReason`. PostToolUse: top-level `decision: "block"` and
//! `reason`, the redacted output as `hookSpecificOutput.additionalContext`
//! (a block cannot undo the tool; it tells the model what happened).

use serde_json::json;

use super::{Answer, Event, Reply};

pub(super) fn render(answer: &Answer, event: Event) -> Reply {
    match answer {
        Answer::Silent => Reply::silent(),
        Answer::Decide { decision, reason } => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision.as_str(),
                "permissionDecisionReason": reason,
            }
        })),
        Answer::Block { reason, context } => {
            let mut out = json!({ "decision": "block", "reason": reason });
            if let Some(context) = context {
                out["hookSpecificOutput"] = json!({
                    "hookEventName": event_name(event),
                    "additionalContext": context,
                });
            }
            Reply::json(&out)
        }
    }
}

fn event_name(event: Event) -> &'static str {
    match event {
        Event::Before => "PreToolUse",
        Event::After => "PostToolUse",
    }
}
