//! Claude Code's hook output.
//!
//! PreToolUse: `hookSpecificOutput.permissionDecision` allow | ask | deny with
//! `permissionDecisionReason`, and `updatedInput` when the sandbox wraps a
//! `Bash` command. PostToolUse: top-level `decision: "block"` and
//! `reason`, the redacted output as `hookSpecificOutput.additionalContext`
//! (a block cannot undo the tool; it tells the model what happened); a
//! result rule's note alone is just the `additionalContext`, and its
//! `terminate` is `continue: false` with a `stopReason`.

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
        Answer::Confine {
            decision,
            reason,
            input,
        } => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision.as_str(),
                "permissionDecisionReason": reason,
                "updatedInput": input,
            }
        })),
        Answer::Block { .. } | Answer::Note { .. } => {
            Reply::json(&super::after_json(answer, "block", event_name(event)).unwrap_or_default())
        }
    }
}

fn event_name(event: Event) -> &'static str {
    match event {
        Event::Before => "PreToolUse",
        Event::After => "PostToolUse",
    }
}
