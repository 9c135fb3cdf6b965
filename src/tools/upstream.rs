//! Upstream tools: the tools of an MCP server toolgate fronts (a `[server]`
//! manifest). The executor runs them like any other [`Tool`]; what forwards
//! a call to the server is an [`Upstreams`] the front-end that runs the
//! servers provides (`toolgate serve`). Without one (`toolgate call`,
//! embedders), a call gets an error result saying the server is not running.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolContext, ToolError, ToolFuture};

/// Forwards calls to upstream servers.
pub trait Upstreams: Send + Sync {
    /// Calls `tool` (the upstream's own name) on `server` with `args`
    /// (already allowed by the policy). Honors `ctx.cancel`, sends progress
    /// to `ctx.progress`, and gives up after `ctx.limits.timeout`.
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        ctx: &'a ToolContext,
        args: Value,
    ) -> ToolFuture<'a>;
}

/// One upstream tool as the executor runs it.
pub struct UpstreamTool {
    server: String,
    tool: String,
    upstreams: Option<Arc<dyn Upstreams>>,
}

impl UpstreamTool {
    /// The tool `tool` of `server`, forwarded through `upstreams`.
    pub fn new(server: &str, tool: &str, upstreams: Option<Arc<dyn Upstreams>>) -> UpstreamTool {
        UpstreamTool {
            server: server.to_string(),
            tool: tool.to_string(),
            upstreams,
        }
    }
}

impl fmt::Debug for UpstreamTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UpstreamTool({}/{})", self.server, self.tool)
    }
}

impl Tool for UpstreamTool {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        match &self.upstreams {
            Some(u) => u.call(&self.server, &self.tool, ctx, args),
            None => Box::pin(async move {
                Err(ToolError::new(format!(
                    "upstream {} is unavailable: upstream servers run only under `toolgate serve`",
                    self.server
                )))
            }),
        }
    }
}
