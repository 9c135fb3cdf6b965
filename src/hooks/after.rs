//! The after-event (PostToolUse / AfterTool): the CLI's tool response
//! checked by the policy's redaction rules and its result rules.
//!
//! The result rules are the policy's own ([`crate::policy::results`]): this
//! module only reads the CLI's response into the facts they test (text,
//! error state, exit code) and writes the matching rule's actions in the
//! hook's terms. A hook cannot rewrite what the tool returned, so:
//! `replace` and `redact_all` block with the replacement attached, `is_error:
//! true` blocks with the note as the reason, a `note` alone is additional
//! context, and `terminate` ends the agent's turn (`continue: false`).

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::translate::{self, Translation};
use super::{Agent, Answer, HookOptions, Payload};
use crate::policy::results::ResultRule;
use crate::policy::rules::ResultFacts;
use crate::Policy;

/// The answer to an after-event.
pub(super) fn after(
    agent: Agent,
    args: &HookOptions,
    policy: &Policy,
    payload: &Payload,
) -> Answer {
    let Some(response) = &payload.tool_response else {
        return Answer::Silent;
    };
    let redactor = policy.redactor();
    let secret_rules = redactor.matching_rules_in_json(response);
    let secrets = (!secret_rules.is_empty()).then(|| {
        let ids = secret_rules.join(", ");
        let mut redacted = response.clone();
        redactor.redact_json(&mut redacted);
        let redacted = match redacted {
            Value::String(s) => s,
            other => serde_json::to_string_pretty(&other).unwrap_or_default(),
        };
        let reason = format!(
            "toolgate rule redact[{ids}]: the output of {} contains secrets ({ids}). Do not repeat, store or use them; the output with the secrets redacted is attached.",
            payload.tool_name
        );
        (reason, policy.limits.clip(&redacted))
    });
    let rule = if policy.results().is_empty() {
        None
    } else {
        result_rule(agent, args, policy, payload, response)
    };
    match (rule, secrets) {
        (None, None) => Answer::Silent,
        (None, Some((reason, redacted))) => Answer::Block {
            reason,
            context: Some(redacted),
            stop: None,
        },
        (Some(rule), secrets) => rule_answer(rule, &payload.tool_name, secrets),
    }
}

/// The first result rule that matches the CLI's call and response, asked of
/// the policy for each manifest call the CLI's call maps to.
fn result_rule<'p>(
    agent: Agent,
    args: &HookOptions,
    policy: &'p Policy,
    payload: &Payload,
    response: &Value,
) -> Option<&'p ResultRule> {
    let empty = Map::new();
    let input = payload.tool_input.as_ref().unwrap_or(&empty);
    let Translation::Calls(calls) = translate::translate(
        policy,
        agent.key(),
        &payload.tool_name,
        input,
        &payload.tool_use_id,
    ) else {
        return None;
    };
    let workspace: PathBuf = match (&args.workspace, &payload.cwd) {
        (Some(dir), _) => dir.clone(),
        (None, Some(cwd)) => cwd.into(),
        (None, None) => PathBuf::from("."),
    };
    // Redaction comes first, as in the executor: the rules see what the
    // model would see.
    let text = policy
        .redactor()
        .redact(&response_text(response))
        .into_owned();
    let is_error = response_is_error(response);
    calls.iter().find_map(|mapped| {
        let reports = policy
            .tool(&mapped.call.name)
            .is_some_and(|t| t.reports_exit_code());
        let facts = ResultFacts {
            text: &text,
            is_error,
            exit_code: if reports {
                response_exit_code(response).or((!is_error).then_some(0))
            } else {
                None
            },
        };
        let call_args = mapped.call.arguments.as_object().unwrap_or(&empty);
        policy
            .results()
            .first_match(&mapped.call.name, call_args, &workspace, &facts)
    })
}

/// A matching rule's actions in the hook's terms. Found secrets still block
/// with the redacted output unless the rule replaces the output anyway.
fn rule_answer(rule: &ResultRule, tool: &str, secrets: Option<(String, String)>) -> Answer {
    let label = format!("toolgate result rule {}", rule.id);
    let note = rule.then.note.as_deref();
    let stop = rule.then.terminate.then(|| {
        format!(
            "{label}: {}",
            note.unwrap_or("the policy ends the turn after this result.")
        )
    });
    let joined = |first: String| match note {
        Some(n) => format!("{first}\n\n{n}"),
        None => first,
    };
    if let Some(replacement) = rule.replacement() {
        return Answer::Block {
            reason: format!(
                "{label}: the output of {tool} is withheld by the policy; what to read instead is attached."
            ),
            context: Some(joined(replacement)),
            stop,
        };
    }
    let as_error = rule.then.is_error == Some(true);
    match secrets {
        Some((reason, redacted)) => Answer::Block {
            reason: if as_error {
                format!(
                    "{reason} {label}: {}",
                    note.unwrap_or("the policy marks this result as an error.")
                )
            } else {
                reason
            },
            context: Some(joined(redacted)),
            stop,
        },
        None if as_error => Answer::Block {
            reason: format!(
                "{label}: {}",
                note.unwrap_or("the policy marks this result as an error.")
            ),
            context: None,
            stop,
        },
        // `is_error: false` alone has nothing to say in a hook: the CLI
        // already shows the output as it is.
        None if note.is_none() && stop.is_none() => Answer::Silent,
        None => Answer::Note {
            context: note.map(str::to_string),
            stop,
        },
    }
}

/// The text of a CLI's tool response: Claude Code's `stdout` and `stderr`,
/// Gemini's `llmContent`, a plain string (Codex), else the response as JSON.
fn response_text(response: &Value) -> String {
    let Value::Object(o) = response else {
        return match response {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
    };
    if o.contains_key("stdout") || o.contains_key("stderr") {
        return ["stdout", "stderr"]
            .iter()
            .filter_map(|k| o.get(*k).and_then(Value::as_str))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
    }
    for key in ["llmContent", "content", "output"] {
        if let Some(s) = o.get(key).and_then(Value::as_str) {
            return s.to_string();
        }
    }
    serde_json::to_string_pretty(response).unwrap_or_default()
}

/// Whether the CLI reports the call as failed: `is_error: true`,
/// `success: false`, or an `error` that is set.
fn response_is_error(response: &Value) -> bool {
    let Value::Object(o) = response else {
        return false;
    };
    o.get("is_error").and_then(Value::as_bool) == Some(true)
        || o.get("success").and_then(Value::as_bool) == Some(false)
        || o.get("error")
            .is_some_and(|e| !(e.is_null() || e == &Value::Bool(false) || e == ""))
}

/// The exit code the CLI reports, when it has a field for it.
fn response_exit_code(response: &Value) -> Option<i64> {
    let o = response.as_object()?;
    ["exit_code", "exitCode", "returncode"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn responses_are_read_per_cli() {
        let claude = json!({"stdout": "a\n", "stderr": "b", "interrupted": false});
        assert_eq!(response_text(&claude), "a\n\nb");
        assert_eq!(response_text(&json!("plain")), "plain");
        assert_eq!(response_text(&json!({"llmContent": "g"})), "g");
        assert!(response_is_error(&json!({"error": "boom"})));
        assert!(!response_is_error(&json!({"error": null, "stdout": ""})));
        assert_eq!(response_exit_code(&json!({"exit_code": 3})), Some(3));
    }

    fn rule(then: crate::policy::results::ResultActions) -> ResultRule {
        ResultRule {
            id: "r".into(),
            tools: vec!["bash".into()],
            cond: crate::policy::rules::Cond::IsError(false),
            then,
        }
    }

    #[test]
    fn secrets_still_block_unless_the_rule_replaces_the_output() {
        use crate::policy::results::ResultActions;
        let secrets = || Some(("redact[x]".to_string(), "[REDACTED:x]".to_string()));
        let note = rule(ResultActions {
            note: Some("Look.".into()),
            ..Default::default()
        });
        assert_eq!(
            rule_answer(&note, "Bash", secrets()),
            Answer::Block {
                reason: "redact[x]".into(),
                context: Some("[REDACTED:x]\n\nLook.".into()),
                stop: None,
            }
        );
        assert_eq!(
            rule_answer(&note, "Bash", None),
            Answer::Note {
                context: Some("Look.".into()),
                stop: None,
            }
        );
        let hidden = rule(ResultActions {
            redact_all: true,
            terminate: true,
            ..Default::default()
        });
        let Answer::Block { context, stop, .. } = rule_answer(&hidden, "Bash", secrets()) else {
            panic!("a replaced output blocks");
        };
        assert_eq!(context.as_deref(), Some("[REDACTED:r]"));
        assert!(stop.unwrap().starts_with("toolgate result rule r:"));
        let quiet = rule(ResultActions {
            is_error: Some(false),
            ..Default::default()
        });
        assert_eq!(rule_answer(&quiet, "Bash", None), Answer::Silent);
    }
}
