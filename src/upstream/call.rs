//! One upstream `tools/call`: forwarded with its progress routed back,
//! cancelled upstream (`notifications/cancelled`) when the call is, given up
//! after the policy's timeout, and the result turned into a tool output.
//! Redaction, result rules and logging happen afterwards in the executor,
//! exactly as for every other tool.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ContentBlock, CustomResult, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{json, Value};

use super::connect::Handler;
use crate::text::truncate_head;
use crate::tools::{Content, RunLimits, ToolContext, ToolError, ToolOutput};

/// Removes a call's progress route, and its answer if it was read and
/// not taken (answer.rs), when the call ends, however it ends.
struct ProgressRoute<'a> {
    handler: &'a Handler,
    token: rmcp::model::ProgressToken,
    id: rmcp::model::RequestId,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        self.handler
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
        self.handler
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(&self.id);
    }
}

/// Forwards one call.
pub async fn call(
    server: &str,
    peer: Peer<RoleClient>,
    handler: Handler,
    tool: &str,
    ctx: &ToolContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let unavailable = |e: &dyn std::fmt::Display| {
        ToolError::new(handler.scrub(&format!("upstream {server} is unavailable: {e}")))
    };
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = match args {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => {
            return Err(ToolError::new(format!(
                "arguments must be an object, not {other}"
            )))
        }
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| {
            handler.transport_failed(&e);
            unavailable(&e)
        })?;
    let id = handle.id.clone();
    handler
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(handle.progress_token.clone(), ctx.progress.clone());
    let _route = ProgressRoute {
        handler: &handler,
        token: handle.progress_token.clone(),
        id: id.clone(),
    };
    let cancel_upstream = |reason: &str| {
        let peer = peer.clone();
        let param = CancelledNotificationParam::new(Some(id.clone()), Some(reason.to_string()));
        async move {
            let _ = peer.notify_cancelled(param).await;
        }
    };
    let response = tokio::select! {
        r = handle.await_response() => r,
        _ = ctx.cancel.cancelled() => {
            cancel_upstream("cancelled by the client").await;
            return Err(ToolError::new("Operation aborted"));
        }
        _ = tokio::time::sleep(ctx.limits.timeout) => {
            cancel_upstream("timed out").await;
            return Err(ToolError::new(format!(
                "upstream {server}: `{tool}` timed out after {}s",
                ctx.limits.timeout.as_secs_f64()
            )));
        }
    };
    // The stdio transport read a plain answer in one pass (answer.rs) and
    // gave rmcp an empty result for it.
    if let Ok(ServerResult::CustomResult(CustomResult(Value::Null))) = &response {
        let filed = handler
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(&id);
        if let Some(answer) = filed {
            return output_from(
                &ctx.limits,
                answer.texts.into_iter().map(|text| Content::Text { text }),
                answer.structured,
                answer.is_error,
            );
        }
    }
    match response {
        Ok(ServerResult::CallToolResult(result)) => {
            let v = serde_json::to_value(&result).map_err(|e| unavailable(&e))?;
            output_of(&ctx.limits, v)
        }
        // The stdio transport hands a `tools/call` answer over as the JSON
        // it came as (stdio.rs): taken when rmcp would have read it as a
        // `CallToolResult`.
        Ok(ServerResult::CustomResult(CustomResult(v))) if is_call_tool_result(&v) => {
            output_of(&ctx.limits, v)
        }
        Ok(other) => Err(ToolError::new(format!(
            "upstream {server} answered tools/call with an unexpected result: {}",
            crate::text::shorten(&serde_json::to_string(&other).unwrap_or_default(), 200)
        ))),
        // A JSON-RPC error from the upstream is the tool's failure; a
        // transport error means the server is gone.
        Err(rmcp::ServiceError::McpError(e)) => Err(ToolError::new(handler.scrub(&format!(
            "upstream {server}: {} (code {})",
            e.message, e.code.0
        )))),
        Err(e) => {
            handler.transport_failed(&e);
            Err(unavailable(&e))
        }
    }
}

/// Whether rmcp reads `v` as a `CallToolResult` (its `Deserialize`): an
/// object with `resultType` absent or `"complete"`, at least one of
/// `content`, `structuredContent`, `isError`, and each of them (and `_meta`)
/// of its type; every content block one that rmcp knows.
fn is_call_tool_result(v: &Value) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    let present = |k: &str| m.get(k).filter(|v| !v.is_null());
    if present("resultType").is_some_and(|t| t != "complete")
        || present("isError").is_some_and(|e| !e.is_boolean())
        || present("_meta").is_some_and(|e| !e.is_object())
        || (present("content").is_none()
            && !m.contains_key("structuredContent")
            && present("isError").is_none())
    {
        return false;
    }
    match present("content") {
        None => true,
        Some(Value::Array(blocks)) => blocks.iter().all(|b| {
            // A text block (the common case) without building rmcp's types.
            let text = b.as_object().is_some_and(|o| {
                o.get("type").is_some_and(|t| t == "text")
                    && o.get("text").is_some_and(Value::is_string)
                    && o.get("annotations").is_none_or(Value::is_null)
                    && o.get("_meta").is_none_or(Value::is_null)
            });
            text || serde_json::from_value::<ContentBlock>(b.clone()).is_ok()
        }),
        Some(_) => false,
    }
}

/// A `CallToolResult` (as JSON) as a tool output: content blocks kept
/// (a block toolgate has no shape for becomes its JSON text), text cut to
/// the policy's output limits, `structuredContent` kept in the details
/// (where redaction reaches it). `isError` makes it an error.
fn output_of(limits: &RunLimits, mut result: Value) -> Result<ToolOutput, ToolError> {
    let blocks = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    let structured = result.get_mut("structuredContent").map(Value::take);
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    output_from(
        limits,
        blocks.into_iter().map(content_of),
        structured,
        is_error,
    )
}

/// [`output_of`] from the result's parts: its content blocks, its
/// `structuredContent` (`null` is none) and whether `isError` is `true`.
fn output_from(
    limits: &RunLimits,
    blocks: impl Iterator<Item = Content>,
    structured: Option<Value>,
    is_error: bool,
) -> Result<ToolOutput, ToolError> {
    let max_lines = limits.max_output_lines as usize;
    let max_bytes = limits.max_output_bytes as usize;
    let mut content = Vec::new();
    let mut cut = false;
    for mut c in blocks {
        if let Content::Text { text } = &mut c {
            let t = truncate_head(text, max_lines, max_bytes);
            if t.truncated() {
                cut = true;
                *text = t.content;
            }
        }
        content.push(c);
    }
    if cut {
        content.push(Content::text(format!(
            "[Output truncated to the policy's limits ({max_lines} lines, {max_bytes} bytes).]"
        )));
    }
    let mut details = json!({});
    if let Some(s) = structured.filter(|s| !s.is_null()) {
        details["structuredContent"] = s;
    }
    if is_error {
        let message = content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        return Err(ToolError { message, details });
    }
    Ok(ToolOutput { content, details })
}

/// One content block as toolgate's [`Content`]; one it has no shape for
/// becomes its JSON text.
fn content_of(mut block: Value) -> Content {
    if block.get("type").is_some_and(|t| t == "text") {
        if let Some(Value::String(text)) = block.get_mut("text") {
            return Content::Text {
                text: std::mem::take(text),
            };
        }
    }
    serde_json::from_value::<Content>(block.clone())
        .unwrap_or_else(|_| Content::text(block.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own `CallToolResult` reading says.
    fn rmcp_reads(v: &Value) -> bool {
        serde_json::from_value::<rmcp::model::CallToolResult>(v.clone()).is_ok()
    }

    #[test]
    fn the_shape_check_agrees_with_rmcp() {
        for v in [
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
            json!({"content": [{"type": "text", "text": "hi", "annotations": {"priority": 1.0}}]}),
            json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}),
            json!({"content": []}),
            json!({"structuredContent": null}),
            json!({"isError": true}),
            json!({"content": [], "resultType": "complete"}),
            json!({"content": [], "resultType": "input_required"}),
            json!({"content": [{"type": "text", "text": 7}]}),
            json!({"content": [{"type": "video", "url": "x"}]}),
            json!({"content": [{"text": "no type"}]}),
            json!({"content": "text"}),
            json!({"isError": "yes"}),
            json!({"content": [], "_meta": 3}),
            json!({"tools": []}),
            json!({"_meta": {}}),
            json!([1]),
            json!(null),
        ] {
            assert_eq!(is_call_tool_result(&v), rmcp_reads(&v), "{v}");
        }
    }

    #[test]
    fn blocks_become_contents_as_before() {
        let blocks = [
            json!({"type": "text", "text": "hi", "annotations": {"priority": 1.0}}),
            json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
            json!({"type": "resource_link", "uri": "file:///x", "name": "x"}),
            json!({"type": "text", "text": 7}),
        ];
        for b in blocks {
            let before = serde_json::from_value::<Content>(b.clone())
                .unwrap_or_else(|_| Content::text(b.to_string()));
            assert_eq!(content_of(b.clone()), before, "{b}");
        }
    }

    /// What the general way makes of an answer line: the output when its
    /// result reads as a `CallToolResult`.
    fn general(line: &str, limits: &RunLimits) -> Option<Result<ToolOutput, ToolError>> {
        let mut v: Value = serde_json::from_str(line).ok()?;
        let m = v.as_object_mut()?;
        if m.contains_key("method") || m.contains_key("error") {
            return None;
        }
        let result = m.remove("result")?;
        is_call_tool_result(&result).then(|| output_of(limits, result))
    }

    /// The one-pass reading (answer.rs) gives what the general way gives
    /// whenever it reads an answer, and reads the usual ones.
    #[test]
    fn the_one_pass_answer_agrees_with_the_general_way() {
        let text = |t: &str| json!({"type": "text", "text": t});
        let results = [
            // usual answers: read in one pass
            (true, json!({"content": [text("hello")], "isError": false})),
            (
                true,
                json!({"content": [text("hello")], "structuredContent": {"result": "hello"}, "isError": false}),
            ),
            (
                true,
                json!({"content": [text("bad"), text("worse")], "isError": true}),
            ),
            (
                true,
                json!({"content": [text("a\nb\nc\nd\ne"), text(&"x".repeat(100)), text("")]}),
            ),
            (true, json!({"content": []})),
            (true, json!({"structuredContent": null})),
            (
                true,
                json!({"structuredContent": {"n": 1.5e300, "k": [1, -0.0, null]}, "isError": true}),
            ),
            (true, json!({"isError": true})),
            (
                true,
                json!({"content": [text("é😀\u{1}")], "resultType": "complete", "_meta": {"a": 1}}),
            ),
            (
                true,
                json!({"content": [{"type": "text", "text": "x", "annotations": null, "_meta": null, "other": 3}], "isError": null, "extra": [1]}),
            ),
            // anything else: the general way
            (
                false,
                json!({"content": [{"type": "text", "text": "hi", "annotations": {"priority": 1.0}}]}),
            ),
            (
                false,
                json!({"content": [{"type": "text", "text": "hi", "_meta": {}}]}),
            ),
            (
                false,
                json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}),
            ),
            (
                false,
                json!({"content": [{"type": "resource_link", "uri": "file:///x", "name": "x"}]}),
            ),
            (
                false,
                json!({"content": [], "resultType": "input_required"}),
            ),
            (false, json!({"content": [{"type": "text", "text": 7}]})),
            (false, json!({"content": [{"text": "no type"}]})),
            (false, json!({"content": "text"})),
            (false, json!({"content": null})),
            (false, json!({"isError": "yes"})),
            (false, json!({"content": [], "_meta": 3})),
            (false, json!({"tools": []})),
            (false, json!({"_meta": {}})),
            (false, json!([1])),
            (false, json!(null)),
            (false, json!("text")),
        ];
        let small = RunLimits {
            max_output_lines: 3,
            max_output_bytes: 40,
            ..RunLimits::default()
        };
        let mut lines: Vec<(bool, String)> = results
            .iter()
            .map(|(fast, r)| {
                (
                    *fast,
                    json!({"jsonrpc": "2.0", "id": 7, "result": r}).to_string(),
                )
            })
            .collect();
        // lines the general way reads differently, or must read
        let usual = r#"{"type":"text","text":"hi"}"#;
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{usual}]}},"error":{{"code":1,"message":"m"}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"x","result":{{"content":[{usual}]}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{usual}],"content":[]}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"id":8,"result":{{"content":[{usual}]}}}}"#),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","type":"image","text":"x"}]}}"#.to_string(),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"isError":false,"isError":true,"content":[{usual}]}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"result":{{"content":[{usual}]}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{{"content":[{usual}]}}}}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#.to_string(),
        ] {
            lines.push((false, line));
        }
        lines.push((true, format!(r#"{{"id":"s7","jsonrpc":"2.0","result":{{"content":[{usual}]}},"x":{{"y":[1,2]}}}}"#)));
        for (fast, line) in &lines {
            let read = super::super::answer::read(line.as_bytes());
            assert_eq!(read.is_some(), *fast, "{line}");
            let Some((_, answer)) = read else { continue };
            for limits in [RunLimits::default(), small] {
                let one_pass = output_from(
                    &limits,
                    answer
                        .texts
                        .iter()
                        .cloned()
                        .map(|text| Content::Text { text }),
                    answer.structured.clone(),
                    answer.is_error,
                );
                assert_eq!(Some(one_pass), general(line, &limits), "{line}");
            }
        }
    }
}
