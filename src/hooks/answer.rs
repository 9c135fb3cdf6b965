//! Deciding one hook call with the compiled policy: the before-event through
//! the same verdict code as every other front-end, the after-event through
//! the policy's redaction rules and limits.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::translate::{self, Translation};
use super::{Agent, Answer, Event, HookOptions, Payload};
use crate::config::ConfigPaths;
use crate::policy::decide::{decide, CallFacts, ToolStatus};
use crate::policy::{Redactor, UnknownToolDecision};
use crate::text::truncate_head;
use crate::{CompileOptions, CompiledPolicy, Verdict, Workspace};

/// The answer to `payload`; every failure is a refusal in the event's format.
pub(super) fn answer(agent: Agent, args: &HookOptions, payload: &Payload) -> Answer {
    let refuse = |reason: String| Answer::refuse(payload.event, reason);
    let paths = ConfigPaths {
        policies: args.policies.clone(),
        manifests: args.manifests.clone(),
    };
    let loaded = crate::config::load(&paths);
    let compiled = match &loaded {
        Ok(l) => crate::compile(l, &CompileOptions::default()),
        Err(d) => Err(d.clone()),
    };
    // The hook process ends as soon as it has answered: freeing what it
    // loaded would be wasted work on every tool call.
    std::mem::forget(loaded);
    let policy = match compiled {
        Ok(p) => p,
        Err(d) => {
            let mut errors = d.to_human();
            if errors.len() > 2000 {
                let cut = (0..=2000)
                    .rev()
                    .find(|i| errors.is_char_boundary(*i))
                    .unwrap_or(0);
                errors.truncate(cut);
                errors.push('…');
            }
            return refuse(format!(
                "toolgate: the policy did not load, so every call is denied until it is fixed (run `toolgate check`): {}",
                errors.trim_end()
            ));
        }
    };
    let answer = match payload.event {
        Event::Before => before(agent, args, &policy, payload),
        Event::After => after(&policy, payload),
    };
    std::mem::forget(policy);
    answer
}

/// The workspace: `--workspace`, else the CLI's `cwd`.
fn workspace(args: &HookOptions, payload: &Payload) -> Result<Workspace, String> {
    let dir = match (&args.workspace, &payload.cwd) {
        (Some(dir), _) => dir.clone(),
        (None, Some(cwd)) if std::path::Path::new(cwd).is_absolute() => cwd.into(),
        (None, Some(cwd)) => {
            return Err(format!(
                "toolgate: `cwd` must be an absolute path, got `{cwd}`; the call is denied"
            ))
        }
        (None, None) => {
            return Err(
                "toolgate: the hook input has no `cwd` and no --workspace was given, so paths cannot be resolved; the call is denied"
                    .to_string(),
            )
        }
    };
    Workspace::new(&dir).map_err(|e| {
        format!(
            "toolgate: the workspace `{}` cannot be opened ({e}); the call is denied",
            dir.display()
        )
    })
}

fn before(agent: Agent, args: &HookOptions, policy: &CompiledPolicy, payload: &Payload) -> Answer {
    let refuse = |reason: String| Answer::refuse(Event::Before, reason);
    let ws = match workspace(args, payload) {
        Ok(ws) => ws,
        Err(reason) => return refuse(reason),
    };
    let empty = Map::new();
    let input = payload.tool_input.as_ref().unwrap_or(&empty);
    let name = &payload.tool_name;
    match translate::translate(policy, agent.key(), name, input, &payload.tool_use_id) {
        Translation::Refused { rule, reason } => refuse(format!("toolgate rule {rule}: {reason}")),
        Translation::Unknown if policy.unknown_tools == UnknownToolDecision::Defer => {
            Answer::Silent
        }
        Translation::Unknown => {
            // The CLI's own tool (TodoWrite, web_fetch, …) or an MCP tool no
            // manifest describes: the policy's `tools.unknown` decides, through
            // the same code as a call to an unknown tool anywhere else.
            let facts = CallFacts {
                tool: name.clone(),
                status: ToolStatus::Unknown,
                args: None,
                paths: Vec::new(),
                shell: None,
                problems: Vec::new(),
                roots: Vec::new(),
            };
            from_verdict(decide(policy, &ws, &facts))
        }
        Translation::Calls(calls) => {
            // A patch is one call per file: the strictest verdict stands, the
            // first at its level giving the reason, as within one call.
            let mut best: Option<Verdict> = None;
            for mapped in &calls {
                let v = policy.evaluate_in(&ws, &mapped.call, mapped.workdir.as_deref());
                if best.as_ref().is_none_or(|b| v.decision > b.decision) {
                    best = Some(v);
                }
            }
            match best {
                Some(v) => from_verdict(v),
                None => refuse(format!(
                    "toolgate: {name} names nothing to check; the call is denied"
                )),
            }
        }
    }
}

/// A verdict as the CLI sees it: the reason always names the rule.
fn from_verdict(v: Verdict) -> Answer {
    let reason = match &v.rule {
        // Command rules with an id already name it in their reason.
        Some(rule) if !v.reason.contains(rule.as_str()) => {
            format!("toolgate rule {rule}: {}", v.reason)
        }
        _ => format!("toolgate: {}", v.reason),
    };
    Answer::Decide {
        decision: v.decision,
        reason,
    }
}

/// The after-event: a response holding a secret is blocked, with the
/// redacted response attached for the model.
fn after(policy: &CompiledPolicy, payload: &Payload) -> Answer {
    let Some(response) = &payload.tool_response else {
        return Answer::Silent;
    };
    let redactor = policy.redactor.get();
    let mut rules: Vec<String> = Vec::new();
    for_each_string(response, &mut |s| {
        for id in redactor.matching_rules(s) {
            if !rules.iter().any(|r| r == id) {
                rules.push(id.to_string());
            }
        }
    });
    if rules.is_empty() {
        return Answer::Silent;
    }
    let ids = rules.join(", ");
    let redacted = match redact_value(response, redactor) {
        Value::String(s) => s,
        other => serde_json::to_string_pretty(&other).unwrap_or_default(),
    };
    Answer::Block {
        reason: format!(
            "toolgate rule redact[{ids}]: the output of {} contains secrets ({ids}). Do not repeat, store or use them; the output with the secrets redacted is attached.",
            payload.tool_name
        ),
        context: Some(limit(&redacted, policy)),
    }
}

/// Calls `f` on every string of `value`: object keys and values at any depth.
fn for_each_string(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| for_each_string(v, f)),
        Value::Object(map) => {
            for (k, v) in map {
                f(k);
                for_each_string(v, f);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn redact_value(value: &Value, redactor: &Redactor) -> Value {
    let text = |s: &str| match redactor.redact(s) {
        Cow::Borrowed(_) => s.to_string(),
        Cow::Owned(r) => r,
    };
    match value {
        Value::String(s) => Value::String(text(s)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| redact_value(v, redactor)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (text(k), redact_value(v, redactor)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The policy's output limits, applied to what is handed back to the model.
fn limit(text: &str, policy: &CompiledPolicy) -> String {
    let lines = usize::try_from(policy.limits.max_output_lines).unwrap_or(usize::MAX);
    let bytes = usize::try_from(policy.limits.max_output_bytes).unwrap_or(usize::MAX);
    let t = truncate_head(text, lines, bytes);
    if t.truncated() {
        format!(
            "{}\n[toolgate: truncated to {} of {} lines]",
            t.content, t.output_lines, t.total_lines
        )
    } else {
        t.content
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_is_visited() {
        let v = serde_json::json!({"a": ["x", {"k": "y"}], "n": 1, "z": null});
        let mut seen = Vec::new();
        for_each_string(&v, &mut |s| seen.push(s.to_string()));
        assert_eq!(seen, ["a", "x", "k", "y", "n", "z"]);
    }
}
