//! Gemini CLI's hook output.
//!
//! BeforeTool: top-level `decision` allow | ask | deny with `reason`; when
//! the sandbox wraps a shell command, `hookSpecificOutput.tool_input` holds
//! the new `command` (Gemini CLI merges it into the arguments).
//! AfterTool: `decision: "deny"` hides the real output from the model and
//! puts `reason` in its place; the redacted output follows as
//! `hookSpecificOutput.additionalContext`. A result rule's note alone is
//! just the `additionalContext`; its `terminate` is `continue: false` with a
//! `stopReason`.

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
        Answer::Confine {
            decision,
            reason,
            input,
        } => Reply::json(&json!({
            "decision": decision.as_str(),
            "reason": reason,
            "hookSpecificOutput": { "tool_input": input },
        })),
        Answer::Block { .. } | Answer::Note { .. } => {
            let name = match event {
                Event::Before => "BeforeTool",
                Event::After => "AfterTool",
            };
            Reply::json(&super::after_json(answer, "deny", name).unwrap_or_default())
        }
    }
}
