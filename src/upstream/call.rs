//! One upstream `tools/call`: forwarded with its progress routed back,
//! cancelled upstream (`notifications/cancelled`) when the call is, given up
//! after the policy's timeout, and the result turned into a tool output.
//! Redaction, result rules and logging happen afterwards in the executor,
//! exactly as for every other tool.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::{json, Value};

use super::connect::Handler;
use crate::text::truncate_head;
use crate::tools::{Content, ToolContext, ToolError, ToolOutput};

/// Removes a call's progress route when the call ends, however it ends.
struct ProgressRoute<'a> {
    handler: &'a Handler,
    token: rmcp::model::ProgressToken,
}

impl Drop for ProgressRoute<'_> {
    fn drop(&mut self) {
        self.handler
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
        self.handler.counts.forget(&self.token);
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
        ToolError::new(format!("upstream {server} is unavailable: {e}"))
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
        .map_err(|e| unavailable(&e))?;
    let id = handle.id.clone();
    handler
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(handle.progress_token.clone(), ctx.progress.clone());
    let _route = ProgressRoute {
        handler: &handler,
        token: handle.progress_token.clone(),
    };
    let cancel_upstream = |reason: &str| {
        let peer = peer.clone();
        let param = CancelledNotificationParam::new(Some(id.clone()), Some(reason.to_string()));
        async move {
            let _ = peer.notify_cancelled(param).await;
        }
    };
    let token = handle.progress_token.clone();
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
    // The progress the server sent before its result reaches the client
    // before the result does (upstream/ordered.rs).
    handler.counts.settle(&token).await;
    match response {
        Ok(ServerResult::CallToolResult(result)) => {
            let v = serde_json::to_value(&result).map_err(|e| unavailable(&e))?;
            output_of(ctx, &v)
        }
        Ok(other) => Err(ToolError::new(format!(
            "upstream {server} answered tools/call with an unexpected result: {}",
            crate::text::shorten(&serde_json::to_string(&other).unwrap_or_default(), 200)
        ))),
        // A JSON-RPC error from the upstream is the tool's failure; a
        // transport error means the server is gone.
        Err(rmcp::ServiceError::McpError(e)) => Err(ToolError::new(format!(
            "upstream {server}: {} (code {})",
            e.message, e.code.0
        ))),
        Err(e) => Err(unavailable(&e)),
    }
}

/// A `CallToolResult` (as JSON) as a tool output: content blocks kept
/// (a block toolgate has no shape for becomes its JSON text), text cut to
/// the policy's output limits, `structuredContent` kept in the details
/// (where redaction reaches it). `isError` makes it an error.
fn output_of(ctx: &ToolContext, result: &Value) -> Result<ToolOutput, ToolError> {
    let max_lines = ctx.limits.max_output_lines as usize;
    let max_bytes = ctx.limits.max_output_bytes as usize;
    let mut content = Vec::new();
    let mut cut = false;
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut c = serde_json::from_value::<Content>(block.clone())
            .unwrap_or_else(|_| Content::text(block.to_string()));
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
    if let Some(s) = result.get("structuredContent").filter(|s| !s.is_null()) {
        details["structuredContent"] = s.clone();
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
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
