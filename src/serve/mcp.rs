//! The MCP front-end: the gateway's active tools served with `rmcp`, over
//! stdio ([`serve_stdio`]) and Streamable HTTP ([`super::http`]).
//!
//! It only translates. `tools/list` is the policy's active tools in their
//! fixed order with their manifests' schemas; `tools/call` runs the call
//! through [`Gateway::call`] (the executor, the decision log, metrics) and
//! turns the [`ToolResult`] into a `CallToolResult`. What MCP adds:
//!
//! - an unknown or inactive tool is a JSON-RPC error `-32602`, decided
//!   before anything runs; every other failure (policy denial, invalid
//!   arguments, tool error) is a result with `isError: true` whose text is
//!   the reason, so the model can correct itself;
//! - with `_meta.progressToken`, each (already redacted) tool update becomes
//!   `notifications/progress`, all sent before the response; an update
//!   whose details carry `progress` (and `total`, `message`) sets those
//!   values, one carrying `log: {level, data, logger}` becomes a
//!   `notifications/message` at or above the level the client set with
//!   `logging/setLevel`;
//! - `notifications/cancelled` (or, over HTTP, a closed stream) cancels the
//!   call's token: tools stop and bash kills its process group; rmcp sends
//!   no response for a cancelled request;
//! - `ask` goes to the user through elicitation when the client declared it
//!   (see [`super::approve`]: a request while the call waits, or in the
//!   stateless era an `InputRequiredResult` round); otherwise the executor
//!   blocks the call with a reason saying approval is required;
//! - a reload that changes the active tools sends
//!   `notifications/tools/list_changed`: to each handshake-era session, and
//!   to each `subscriptions/listen` stream of the stateless era.
//!
//! Logging (`logging/setLevel`, `notifications/message`) is deprecated by
//! the 2026 revision but still served, for the handshake era's clients.
//!
//! Both protocol eras are rmcp's: the 2025-11-25 `initialize` handshake and
//! the stateless 2026-07-28 era (`server/discover`, per-request `_meta`).

// rmcp marks the logging types deprecated (SEP-2577); we serve them anyway.
#![allow(deprecated)]

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleServer, ServiceExt, SubscriptionContext,
};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc;

use super::approve::{self, Answered, ElicitationApprover, PendingApprovals};
use super::mcp_updates::{level_rank, UpdateForwarder};
use super::passthrough;
use super::upstream_ask;
use super::upstream_rounds;
use super::Gateway;
use crate::executor::{Approver, BatchOptions, Event, EventKind, EventSink, ToolResult};
use crate::policy::auth::Identity;
use crate::policy::tools::ToolInfo;
use crate::policy::ToolCall;
use crate::tools::ToolOutput;

/// What the server tells clients about itself on `initialize` and
/// `server/discover`.
const INSTRUCTIONS: &str = "Tools served by toolgate. Every call is decided by a policy: \
    a denied call comes back as an error result whose text says why and what is allowed.";

/// The MCP server handler. Cheap to clone; HTTP makes one per session (and
/// per stateless request), all sharing one [`Gateway`].
#[derive(Clone)]
pub struct McpServer {
    gateway: Arc<Gateway>,
    /// Set once this session's list-changed watcher runs.
    watching: Arc<AtomicBool>,
    /// The least severe log level the client wants (`logging/setLevel`).
    log_level: Arc<AtomicU8>,
    /// Stateless-era approval questions; shared by every handler of a server.
    approvals: Arc<PendingApprovals>,
    /// Upstream resource subscriptions of this session.
    passthrough: Arc<passthrough::Session>,
}

/// How an `ask` is put to the user for one request.
enum Asking {
    /// Nobody can be asked: the executor blocks the call.
    Nobody,
    /// This approver answers.
    Approver(Arc<dyn Approver>),
    /// Answer the request with this question first (stateless era).
    FirstAsk(rmcp::model::InputRequiredResult),
}

impl McpServer {
    /// A handler serving `gateway`'s tools.
    pub fn new(gateway: Arc<Gateway>) -> McpServer {
        McpServer::with_approvals(gateway, Arc::default())
    }

    /// A handler that shares its stateless-era approval questions with
    /// others (HTTP serves each stateless request with a new handler).
    pub fn with_approvals(gateway: Arc<Gateway>, approvals: Arc<PendingApprovals>) -> McpServer {
        McpServer {
            gateway,
            watching: Arc::new(AtomicBool::new(false)),
            log_level: Arc::new(AtomicU8::new(level_rank(LoggingLevel::Info))),
            approvals,
            passthrough: Arc::default(),
        }
    }

    /// Who answers when the policy says `ask`: elicitation, when the client
    /// declared it.
    fn asking(
        &self,
        context: &RequestContext<RoleServer>,
        request: &CallToolRequestParams,
        call: &ToolCall,
        identity: Option<&Identity>,
    ) -> Asking {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        if !declared {
            return Asking::Nobody;
        }
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !stateless {
            return Asking::Approver(Arc::new(ElicitationApprover {
                peer: context.peer.clone(),
                cancel: context.ct.clone(),
                gateway: self.gateway.clone(),
            }));
        }
        // The stateless era forbids server-to-client requests: a call that
        // needs approval is answered with the question, and the client
        // calls again with the user's answer.
        if let Some(state) = &request.request_state {
            let response = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(approve::APPROVAL_KEY));
            if let Some(answer) = self.approvals.answer(state, call, response) {
                return Asking::Approver(Arc::new(Answered(answer)));
            }
            // An unknown or expired question: ask again.
        }
        match approve::needs_approval(&self.gateway, call, identity) {
            Some(verdict) => {
                let form = approve::approval_form(&self.gateway, call, &verdict);
                match approve::input_required(form, self.approvals.ask(call)) {
                    Some(question) => Asking::FirstAsk(question),
                    None => Asking::Nobody,
                }
            }
            None => Asking::Nobody,
        }
    }
}

/// The tools `identity` sees (its profile's, or the active set) as MCP
/// `Tool`s.
pub fn tool_list_for(gateway: &Gateway, identity: Option<&Identity>) -> Vec<Tool> {
    gateway
        .active_tools_for(identity)
        .iter()
        .filter_map(mcp_tool)
        .collect()
}

/// The caller of an HTTP request, as the authentication middleware found
/// it (`None` over stdio and without `auth:`).
fn caller(context: &RequestContext<RoleServer>) -> Option<Identity> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| super::auth::http::identity_of(&parts.extensions))
}

/// One manifest as an MCP tool: name, title (the manifest's label),
/// description and `inputSchema`.
fn mcp_tool(info: &ToolInfo) -> Option<Tool> {
    let mut tool = serde_json::json!({
        "name": info.name(),
        "description": info.manifest.description,
        "inputSchema": info.schema(),
    });
    if let Some(label) = &info.manifest.label {
        tool["title"] = Value::String(label.clone());
    }
    match serde_json::from_value(tool) {
        Ok(t) => Some(t),
        Err(e) => {
            // Manifest compilation requires an object schema, so this is a
            // bug; leave the tool out rather than fail the whole list.
            tracing::error!(tool = info.name(), error = %e, "tool cannot be listed over MCP");
            None
        }
    }
}

/// A toolgate result as an MCP `CallToolResult`. The content blocks already
/// have MCP's shape; one that does not convert makes the result an error
/// (fail closed: never a success the model cannot read).
pub fn call_tool_result(result: &ToolResult) -> CallToolResult {
    // Sized to the blocks: collecting a `Result` iterator starts at four
    // (large) blocks, an allocation the system allocator's per-thread
    // cache does not serve, which cost more than the rest of this function.
    let mut blocks = Vec::with_capacity(result.content.len());
    let content = result
        .content
        .iter()
        .try_for_each(|c| content_block(c).map(|b| blocks.push(b)))
        .map(|()| blocks);
    match content {
        Ok(content) if result.is_error => CallToolResult::error(content),
        Ok(content) => {
            let mut r = CallToolResult::success(content);
            // An upstream tool's structured result (redacted with the
            // details it travels in).
            r.structured_content = result.details.get("structuredContent").cloned();
            r
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "Tool {} returned content that is not valid MCP content: {e}",
            result.name
        ))]),
    }
}

/// One content block in MCP's type: text directly (what nearly every tool
/// returns), the other kinds through their JSON, which has MCP's shape.
fn content_block(content: &crate::tools::Content) -> serde_json::Result<ContentBlock> {
    match content {
        crate::tools::Content::Text { text } => Ok(ContentBlock::text(text.clone())),
        other => serde_json::to_value(other).and_then(serde_json::from_value),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        // Upstream servers: their resources, prompts and completions are
        // passed through (serve/passthrough.rs).
        if self
            .gateway
            .upstreams()
            .is_some_and(|m| !m.prefixes().is_empty())
        {
            let more = ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_completions()
                .build();
            capabilities.prompts = more.prompts;
            capabilities.resources = more.resources;
            capabilities.completions = more.completions;
        }
        InitializeResult::new(capabilities)
            .with_server_info(Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // One page: a tool set is tens of tools, not thousands.
        let identity = caller(&context);
        Ok(ListToolsResult::with_all_items(tool_list_for(
            &self.gateway,
            identity.as_ref(),
        )))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // rmcp runs each request in a task of its own that holds this
        // future and is moved a few times: boxed, it stays small however
        // much the executor's pipeline holds.
        Box::pin(self.run_call(request, context)).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level
            .store(level_rank(request.level), Ordering::Relaxed);
        Box::pin(passthrough::set_level(&self.gateway, request.level)).await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A handshake-era session: tell it when a reload changes the tools,
        // and pass upstream notifications on.
        if !self.watching.swap(true, Ordering::AcqRel) {
            let identity = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| super::auth::http::identity_of(&parts.extensions));
            let level = self.log_level.clone();
            self.gateway
                .clients
                .add(context.peer.clone(), identity.clone());
            tokio::spawn(passthrough::forward_events(
                self.gateway.clone(),
                context.peer.clone(),
                identity,
                self.passthrough.clone(),
                move |l| level_rank(l) >= level.load(Ordering::Relaxed),
            ));
            tokio::spawn(watch_tools_changed(self.gateway.clone(), context.peer));
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Box::pin(passthrough::list_resources(
            &self.gateway,
            caller(&context).as_ref(),
        ))
        .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Box::pin(passthrough::list_resource_templates(
            &self.gateway,
            caller(&context).as_ref(),
        ))
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let who = caller(&context);
        let result = Box::pin(passthrough::read_resource(
            &self.gateway,
            who.as_ref(),
            request,
        ))
        .await;
        result.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = caller(&context);
        Box::pin(passthrough::subscribe(
            &self.gateway,
            who.as_ref(),
            &self.passthrough,
            &request.uri,
        ))
        .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = caller(&context);
        Box::pin(passthrough::unsubscribe(
            &self.gateway,
            who.as_ref(),
            &self.passthrough,
            &request.uri,
        ))
        .await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Box::pin(passthrough::list_prompts(
            &self.gateway,
            caller(&context).as_ref(),
        ))
        .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let who = caller(&context);
        let result = Box::pin(passthrough::get_prompt(
            &self.gateway,
            who.as_ref(),
            request,
        ))
        .await;
        result.map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Box::pin(passthrough::complete(
            &self.gateway,
            caller(&context).as_ref(),
            request,
        ))
        .await
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        // A stateless-era `subscriptions/listen` stream.
        let mut changed = self.gateway.subscribe_tools_changed();
        changed.mark_unchanged();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                r = changed.changed() => {
                    if r.is_err() {
                        return Ok(());
                    }
                    if context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl McpServer {
    /// `tools/call`: the call through the gateway, its updates as
    /// notifications, its result as a `CallToolResult`.
    async fn run_call(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let identity = caller(&context);
        let profile = identity.as_ref().and_then(|i| i.profile.as_deref());
        // Checked before anything runs: a tool the model cannot see (not
        // active, or not in the caller's profile) does not exist, and that
        // is a protocol error, not a tool failure.
        if let Err(not_found) = self.gateway.policy().tools.active_tool_for(profile, &name) {
            return Err(McpError::invalid_params(not_found.to_string(), None));
        }
        let call = ToolCall {
            id: format!("mcp-{}", context.id),
            name,
            // Taken: nothing below reads the request's arguments again.
            arguments: Value::Object(request.arguments.take().unwrap_or_default()),
        };
        let mut forwarder = UpdateForwarder::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log_level.clone(),
        );
        // A stateless retry answering an upstream's question
        // (serve/upstream_rounds.rs).
        let who = identity.as_ref().map(|i| i.id.clone());
        if let Some(running) =
            upstream_rounds::resume(&self.gateway.rounds, &request, &call, who.as_deref())
        {
            let waited = upstream_rounds::wait(
                &self.gateway,
                running,
                &context,
                &mut forwarder,
                call_tool_result,
                &call,
                who.as_deref(),
            );
            return Ok(waited.await);
        }
        let approver = match self.asking(&context, &request, &call, identity.as_ref()) {
            Asking::Nobody => None,
            Asking::Approver(a) => Some(a),
            Asking::FirstAsk(question) => return Ok(question.into()),
        };
        let (updates_tx, mut updates) = mpsc::unbounded_channel::<ToolOutput>();
        // Only updates are read here: the executor builds no other event.
        let events = EventSink::only(&[EventKind::Update], move |event| {
            if let Event::ToolExecutionUpdate { partial, .. } = event {
                let _ = updates_tx.send(partial.clone());
            }
        });
        let options = BatchOptions {
            events: Some(events),
            cancel: context.ct.clone(),
            approver,
            identity,
            ..BatchOptions::default()
        };

        // The call and the forwarding share this task, so every
        // notification is written before the response (which rmcp sends
        // only after this returns), and elicitation requests keep rmcp's
        // task-local link to this request (HTTP routes them on its stream).
        // An upstream's sampling and elicitation requests made during the
        // call come here too, and go out from this task (serve/upstream_ask.rs).
        let session = Arc::as_ptr(&self.passthrough) as usize;
        let mut asks = upstream_ask::register_call(&self.gateway, &call.name, session);
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if let Some(asks) = asks.take_if(|_| stateless) {
            // Its server's questions become input-required rounds.
            let running =
                upstream_rounds::start(self.gateway.clone(), call.clone(), options, asks, updates);
            let waited = upstream_rounds::wait(
                &self.gateway,
                running,
                &context,
                &mut forwarder,
                call_tool_result,
                &call,
                who.as_deref(),
            );
            return Ok(waited.await);
        }
        let run = self.gateway.call(call, options);
        tokio::pin!(run);
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                Some(partial) = updates.recv() => forwarder.send(&partial).await,
                Some(ask) = upstream_ask::next_ask(&mut asks) => upstream_ask::answer(&context, ask).await,
            }
        };
        while let Ok(partial) = updates.try_recv() {
            forwarder.send(&partial).await;
        }
        if context.ct.is_cancelled() {
            // rmcp drops the response of a cancelled request; say why in
            // the server's own log only.
            tracing::info!(id = %context.id, "tool call cancelled by the client");
        }
        Ok(call_tool_result(&result).into())
    }
}

/// Sends `notifications/tools/list_changed` to one handshake-era session
/// each time a reload changes the active tools, until the session closes.
async fn watch_tools_changed(gateway: Arc<Gateway>, peer: Peer<RoleServer>) {
    let mut changed = gateway.subscribe_tools_changed();
    changed.mark_unchanged();
    drop(gateway);
    // A session that ends while nothing changes is noticed by this tick.
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        tokio::select! {
            r = changed.changed() => {
                if r.is_err() || peer.notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
            _ = tick.tick() => {
                if peer.is_transport_closed() {
                    return;
                }
            }
        }
    }
}

/// Serves MCP on stdin/stdout until the client closes stdin. Only protocol
/// messages go to stdout; logs go to stderr.
pub async fn serve_stdio(gateway: Arc<Gateway>) -> Result<(), String> {
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    // Responses ready at the same time go out in one write.
    let (stdout, written) = super::stdio_out::coalescing(stdout);
    // Requests read, and answers written, without rmcp's untagged-union
    // buffering for `tools/call` (serve/stdio_in.rs).
    let transport = super::stdio_in::StdioServerTransport::new(stdin, stdout);
    let served = match McpServer::new(gateway).serve(transport).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("MCP over stdio stopped: {e}")),
        Err(e) => Err(format!("MCP over stdio: {e}")),
    };
    // The session dropped its writer: wait until what it handed over is
    // written (bounded: a client that stopped reading must not hold us).
    let _ = tokio::time::timeout(Duration::from_secs(5), written).await;
    served
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
