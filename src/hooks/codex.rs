//! Codex's hook output: Claude Code's format, validated more strictly.
//!
//! Codex rejects `permissionDecision: "ask"` (toolgate answers deny, saying
//! that a person's approval is needed) and accepts `allow` only together with
//! `updatedInput`. toolgate's allow is therefore the call's own input handed
//! back unchanged, for the tools whose input Codex can take back (`Bash`,
//! `apply_patch`); for any other tool Codex would fail the call on an
//! `updatedInput`, so toolgate says nothing and Codex's own approval flow
//! goes on. A deny always carries a non-empty reason, which Codex requires.

use serde_json::{json, Value};

use super::{Answer, Event, Payload, Reply};
use crate::policy::Decision;

/// Codex tools whose hook input can be handed back as `updatedInput`.
const REWRITABLE: &[&str] = &["Bash", "apply_patch"];

pub(super) fn render(answer: &Answer, event: Event, payload: Option<&Payload>) -> Reply {
    match answer {
        Answer::Silent => Reply::silent(),
        Answer::Decide {
            decision: Decision::Allow,
            ..
        } => match payload {
            Some(p) if REWRITABLE.contains(&p.tool_name.as_str()) => {
                let input = p.tool_input.clone().map(Value::Object).unwrap_or(json!({}));
                Reply::json(&json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "updatedInput": input,
                    }
                }))
            }
            _ => Reply::silent(),
        },
        // Allowed and confined: the rewritten input is the `updatedInput`.
        Answer::Confine {
            decision: Decision::Allow,
            input,
            ..
        } => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": input,
            }
        })),
        Answer::Confine {
            decision, reason, ..
        } => render(
            &Answer::Decide {
                decision: *decision,
                reason: reason.clone(),
            },
            event,
            payload,
        ),
        Answer::Decide { decision, reason } => {
            let reason = if *decision == Decision::Ask {
                let stop = if reason.ends_with(['.', '!', '?']) {
                    ""
                } else {
                    "."
                };
                format!("{reason}{stop} Approval is needed, and a Codex hook cannot ask for it, so toolgate denies the call: ask the user to run it, or to change the policy.")
            } else {
                reason.clone()
            };
            Reply::json(&deny(&reason))
        }
        Answer::Block { .. } | Answer::Note { .. } => {
            let name = match event {
                Event::Before => "PreToolUse",
                Event::After => "PostToolUse",
            };
            Reply::json(&super::after_json(answer, "block", name).unwrap_or_default())
        }
    }
}

fn deny(reason: &str) -> Value {
    // Codex refuses a deny whose reason is blank.
    let reason = if reason.trim().is_empty() {
        "toolgate: denied"
    } else {
        reason
    };
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}
