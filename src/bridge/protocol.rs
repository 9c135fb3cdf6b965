//! One request line in, one answer line out: the bridge's wire format.
//!
//! This file only translates. A `before` request is decided by
//! [`Executor::preflight`](crate::executor::Executor::preflight) (or, for a
//! tool no manifest describes, the policy's `tools.unknown`), an `after`
//! request is finalized by
//! [`Executor::finalize_hosted`](crate::executor::Executor::finalize_hosted)
//! and its text cut by [`Limits::clip`](crate::policy::Limits::clip), and
//! `tools` and `status` read the gateway's active policy and reload state.

use serde_json::{json, Map, Value};

use crate::executor::ToolResult;
use crate::policy::limits::preview;
use crate::policy::{Decision, ToolCall, UnknownToolDecision, Verdict};
use crate::serve::Gateway;
use crate::tools::Content;

/// The label every redaction leaves in the text (`[REDACTED:rule-id]`):
/// the `redacted` count of an `after` answer is how many more there are
/// after the hook than before it.
const REDACTION_MARK: &str = "[REDACTED:";

/// The answer to one request line, as one JSON value (written as one line).
/// Never fails: a line that cannot be read gets an error answer naming what
/// was wrong, with the request's `id` when it could be found (else `null`).
pub fn answer(gateway: &Gateway, line: &[u8]) -> Value {
    let request = match parse(line) {
        Ok(request) => request,
        Err((id, message)) => return error(id, message),
    };
    let Request { id, kind, mut body } = request;
    let result = match kind.as_str() {
        "before" => before(gateway, &mut body),
        "after" => after(gateway, &mut body),
        "tools" => {
            let policy = gateway.policy();
            let known: Vec<&String> = policy.tools.tools.keys().collect();
            Ok(json!({ "tools": policy.tools.active, "known": known }))
        }
        "status" => serde_json::to_value(gateway.status()).map_err(|e| e.to_string()),
        other => Err(format!(
            "unknown request type `{other}`; the bridge answers before, after, tools and status"
        )),
    };
    match result {
        Ok(Value::Object(fields)) => {
            let mut out = Map::with_capacity(fields.len() + 1);
            out.insert("id".into(), id);
            out.extend(fields);
            Value::Object(out)
        }
        Ok(other) => json!({ "id": id, "result": other }),
        Err(message) => error(id, message),
    }
}

/// An error answer: `{"id": …, "error": "toolgate bridge: …"}`.
pub fn error(id: Value, message: String) -> Value {
    json!({ "id": id, "error": format!("toolgate bridge: {message}") })
}

/// The `reloaded` line written when a new policy becomes active.
pub fn reloaded(gateway: &Gateway) -> Value {
    let status = gateway.status();
    json!({ "type": "reloaded", "version": status.version, "active": status.active_tools })
}

struct Request {
    id: Value,
    kind: String,
    body: Map<String, Value>,
}

fn parse(line: &[u8]) -> Result<Request, (Value, String)> {
    let text = std::str::from_utf8(line).map_err(|e| {
        (
            Value::Null,
            format!(
                "the request line is not valid UTF-8 (byte {})",
                e.valid_up_to()
            ),
        )
    })?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            Value::Null,
            format!("the request line is not valid JSON ({e}); send one JSON object per line"),
        )
    })?;
    let Value::Object(mut body) = value else {
        return Err((
            Value::Null,
            format!("a request must be a JSON object, got {}", preview(&value)),
        ));
    };
    let id = match body.remove("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id,
        Some(other) => {
            return Err((
                Value::Null,
                format!("`id` must be a number or a string, got {}", preview(&other)),
            ))
        }
        None => return Err((Value::Null, "the request has no `id`".to_string())),
    };
    let kind = match body.remove("type") {
        Some(Value::String(kind)) => kind,
        Some(other) => {
            return Err((
                id,
                format!("`type` must be a string, got {}", preview(&other)),
            ))
        }
        None => {
            return Err((
                id,
                "the request has no `type` (before, after, tools or status)".to_string(),
            ))
        }
    };
    Ok(Request { id, kind, body })
}

/// The call a `before` or `after` request names.
fn call(body: &mut Map<String, Value>) -> Result<ToolCall, String> {
    let tool = match body.remove("tool") {
        Some(Value::String(tool)) if !tool.is_empty() => tool,
        Some(other) => {
            return Err(format!(
                "`tool` must be a tool's name, got {}",
                preview(&other)
            ))
        }
        None => return Err("the request has no `tool`".to_string()),
    };
    let id = match body.remove("call_id") {
        Some(Value::String(id)) => id,
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(format!(
                "`call_id` must be a string, got {}",
                preview(&other)
            ))
        }
    };
    let arguments = match body.remove("input") {
        Some(input @ Value::Object(_)) => input,
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(other) => {
            return Err(format!(
                "`input` of {tool} must be a JSON object, got {}",
                preview(&other)
            ))
        }
    };
    Ok(ToolCall {
        id,
        name: tool,
        arguments,
    })
}

/// allow, ask or deny, as the executor would decide the call before running
/// it; a call it would refuse outright (inactive tool, invalid arguments, a
/// limit) is a deny carrying the error result's text.
fn before(gateway: &Gateway, body: &mut Map<String, Value>) -> Result<Value, String> {
    let call = call(body)?;
    let executor = gateway.executor();
    let verdict = if executor.snapshot().policy.tool(&call.name).is_none() {
        // A host's own tool no manifest describes: the policy's
        // `tools.unknown` decides; `defer` leaves it to the host.
        let policy = gateway.policy();
        let mut verdict = policy.unknown_tool_verdict(&call.name);
        if policy.unknown_tools == UnknownToolDecision::Defer {
            verdict.decision = Decision::Allow;
        }
        verdict
    } else {
        match executor.preflight(&call) {
            Ok((_, verdict)) => verdict,
            Err(result) => refused(&result),
        }
    };
    serde_json::to_value(verdict).map_err(|e| e.to_string())
}

/// The verdict behind an immediate error result.
fn refused(result: &ToolResult) -> Verdict {
    let mut verdict = result
        .verdict
        .clone()
        .unwrap_or_else(|| Verdict::deny(None, String::new()));
    verdict.decision = Decision::Deny;
    verdict.reason = result.text();
    verdict
}

/// The host's result with the after-hook applied: redacted content and
/// details, result rules, text cut to the output limits.
fn after(gateway: &Gateway, body: &mut Map<String, Value>) -> Result<Value, String> {
    let call = call(body)?;
    let content: Vec<Content> = match body.remove("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(content) => serde_json::from_value(content).map_err(|e| {
            format!(
                "`content` must be an array of content blocks ({e}); the result cannot be checked"
            )
        })?,
    };
    let details = match body.remove("details") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(details) => details,
    };
    let is_error = match body.remove("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(format!(
                "`is_error` must be true or false, got {}",
                preview(&other)
            ))
        }
    };
    let mut structured = body.remove("structured_content").filter(|v| !v.is_null());
    let mut result = ToolResult::error(&call.id, &call.name, String::new());
    result.content = content;
    result.details = details;
    result.is_error = is_error;
    let marks_before = marks(&result.content, &result.details, structured.as_ref());

    let executor = gateway.executor();
    let snapshot = executor.snapshot();
    executor.finalize_hosted(&snapshot, &call.arguments, &mut result);
    let policy = &snapshot.policy;
    if let Some(value) = structured.as_mut() {
        crate::executor::redact_value(policy.redactor(), value);
    }
    // Counted before the output limits cut the text.
    let redacted =
        marks(&result.content, &result.details, structured.as_ref()).saturating_sub(marks_before);
    for block in &mut result.content {
        if let Content::Text { text } = block {
            let clipped = policy.limits.clip(text);
            if clipped.len() != text.len() {
                *text = clipped;
            }
        }
    }
    let mut out = json!({
        "content": result.content,
        "details": result.details,
        "is_error": result.is_error,
        "terminate": result.terminate,
        "redacted": redacted,
    });
    if let Some(rule) = &result.result_rule {
        out["result_rule"] = Value::from(rule.as_str());
    }
    if let Some(value) = structured {
        out["structured_content"] = value;
    }
    Ok(out)
}

/// How many redaction labels a result carries.
fn marks(content: &[Content], details: &Value, structured: Option<&Value>) -> usize {
    fn in_value(value: &Value) -> usize {
        match value {
            Value::String(s) => s.matches(REDACTION_MARK).count(),
            Value::Array(items) => items.iter().map(in_value).sum(),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| k.matches(REDACTION_MARK).count() + in_value(v))
                .sum(),
            _ => 0,
        }
    }
    let text: usize = content
        .iter()
        .map(|block| match block {
            Content::Text { text } => text.matches(REDACTION_MARK).count(),
            Content::Resource { resource } => in_value(resource),
            Content::Image { .. } | Content::Audio { .. } => 0,
        })
        .sum();
    text + in_value(details) + structured.map_or(0, in_value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_names_what_was_wrong_and_keeps_the_id_it_found() {
        assert!(matches!(parse(b"{"), Err((Value::Null, m)) if m.contains("not valid JSON")));
        assert!(matches!(parse(b"[1]"), Err((Value::Null, m)) if m.contains("JSON object")));
        assert!(
            matches!(parse(b"{\"type\":\"x\"}"), Err((Value::Null, m)) if m.contains("no `id`"))
        );
        assert!(
            matches!(parse(b"{\"id\":7}"), Err((id, m)) if id == json!(7) && m.contains("no `type`"))
        );
        assert!(matches!(parse(b"\xff"), Err((Value::Null, m)) if m.contains("UTF-8")));
    }

    #[test]
    fn redaction_labels_are_counted_everywhere_a_result_carries_text() {
        let content = vec![Content::text("a [REDACTED:x] b [REDACTED:y]")];
        let details = json!({"k": ["[REDACTED:z]"], "[REDACTED:w]": 1});
        assert_eq!(marks(&content, &details, Some(&json!("[REDACTED:v]"))), 5);
    }
}
