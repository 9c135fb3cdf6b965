//! Gemini CLI's hook output.
//!
//! BeforeTool: top-level `decision` allow | ask | deny with `reason`.
//! AfterTool: `decision: "deny"` hides the real output from the model and
//! puts `reason` in its place; the redacted output follows as
//! `hookSpecificOutput.additionalContext`.

use serde_json::json;

use super::{Answer, Event, Reply};
use crate::policy::Decision;

pub(super) fn render(answer: &Answer, event: Event) -> Reply {
    match answer {
        Answer::Silent => Reply::silent(),
        Answer::Decide {
            decision: Decision::Allow,
            ..
        } => Reply::json(&json!({ "decision": "allow" })),
        Answer::Decide { decision, reason } => Reply::json(&json!({
            "decision": decision.as_str(),
            "reason": reason,
        })),
        Answer::Block { reason, context } => {
            let mut out = json!({ "decision": "deny", "reason": reason });
            if let Some(context) = context {
                out["hookSpecificOutput"] = json!({
                    "hookEventName": match event { Event::Before => "BeforeTool", Event::After => "AfterTool" },
                    "additionalContext": context,
                });
            }
            Reply::json(&out)
        }
    }
}
