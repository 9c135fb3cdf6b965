//! One connection to an upstream server and the MCP client session over it
//! (`initialize`, then `tools/list`). The transport is the only difference
//! between the two kinds: a stdio server is started in its own process
//! group with a clean environment, its stderr copied to toolgate's stderr
//! line by line with a `[upstream NAME]` prefix; a `url` server is reached
//! over Streamable HTTP (`http.rs`).

// rmcp marks logging deprecated (2026 era); handshake-era servers use it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, JsonRpcMessage, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, ResourceUpdatedNotificationParam, ServerNotification,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, RoleClient, RunningService, RxJsonRpcMessage,
    ServiceExt, TxJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, ErrorData as McpError};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::{broadcast, Notify};

use super::passthrough::{ClientAsk, UpstreamEvent};

/// Where the client-asking function lives (set once a front-end serves).
pub type AskSlot = Arc<std::sync::RwLock<Option<ClientAsk>>>;
use crate::config::server::{ServerTable, UpstreamTool};
use crate::tools::{Progress, ToolOutput};

/// Where an upstream's notifications go.
#[derive(Clone, Default)]
pub struct Handler {
    /// Progress tokens of running calls -> where their progress goes.
    pub progress: Arc<Mutex<HashMap<ProgressToken, Progress, super::answer::Ids>>>,
    /// A stdio upstream's requests waiting for answers, and the answers of
    /// calls read in one pass (answer.rs) until their call takes them.
    pub pending: Arc<Mutex<super::answer::Pending>>,
    /// Signalled when the upstream says its tools changed.
    pub tools_changed: Arc<Notify>,
    /// Where log records, resource updates and list changes go (with the
    /// server's name); `None` drops them (`toolgate pin`).
    pub events: Option<(String, broadcast::Sender<UpstreamEvent>)>,
    /// Who answers the upstream's sampling and elicitation requests.
    pub asker: AskSlot,
    /// Signalled when a request failed at the transport level (with why):
    /// an HTTP connection is then over (a stdio one ends with its process).
    pub broken: Arc<Notify>,
    broken_reason: Arc<Mutex<Option<String>>>,
    /// The header values of a `url` server (and their longer words), which
    /// [`Handler::scrub`] keeps out of error texts.
    secrets: Arc<Vec<String>>,
}

impl Handler {
    /// A handler whose notifications reach `events` as server `name`'s.
    pub fn with_events(
        name: &str,
        events: broadcast::Sender<UpstreamEvent>,
        asker: AskSlot,
    ) -> Handler {
        Handler {
            events: Some((name.to_string(), events)),
            asker,
            ..Handler::default()
        }
    }

    /// Puts an upstream's request to the client, through the front-end.
    async fn ask<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: P,
    ) -> Result<R, McpError> {
        let ask = self.asker.read().unwrap_or_else(|e| e.into_inner()).clone();
        let (Some(ask), Some((server, _))) = (ask, &self.events) else {
            return Err(McpError::invalid_request(
                format!("{method}: no client to ask"),
                None,
            ));
        };
        let params = serde_json::to_value(params)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let answer = ask(server.clone(), method, params)
            .await
            .map_err(|e| McpError::internal_error(e, None))?;
        serde_json::from_value(answer).map_err(|e| {
            McpError::internal_error(format!("{method}: the client's answer: {e}"), None)
        })
    }

    /// `text` fit for an error message: every header value (and each word
    /// of 8+ characters of one, such as the token after `Bearer `) replaced,
    /// in case an upstream or the HTTP client echoed what was sent, and
    /// rmcp's transport type names (` [rmcp::…]`) left out.
    pub fn scrub(&self, text: &str) -> String {
        scrub(&self.secrets, text)
    }

    /// Records that a request failed at the transport level.
    pub fn transport_failed(&self, why: &dyn std::fmt::Display) {
        *self.broken_reason.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(format!("the connection failed ({why})"));
        self.broken.notify_one();
    }

    /// Why the transport failed, if it did.
    pub fn broken_reason(&self) -> Option<String> {
        self.broken_reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sends an upstream progress update to the call with its token.
    fn route_progress(&self, params: ProgressNotificationParam) {
        let target = self
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&params.progress_token)
            .cloned();
        if let Some(progress) = target {
            let mut details = json!({ "progress": params.progress });
            if let Some(total) = params.total {
                details["total"] = json!(total);
            }
            let mut content = Vec::new();
            if let Some(message) = params.message {
                details["message"] = Value::String(message.clone());
                content.push(crate::tools::Content::text(message));
            }
            // The executor redacts the update before anyone sees it.
            progress.update(ToolOutput { content, details });
        }
    }

    fn emit(&self, event: impl FnOnce(String) -> UpstreamEvent) {
        if let Some((server, tx)) = &self.events {
            // No receiver (no client session yet) is not an error.
            let _ = tx.send(event(server.clone()));
        }
    }
}

impl ClientHandler for Handler {
    // Progress is routed by `InOrder` as it arrives (see there).
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        // Upstreams that run toolgate's sessions may ask its clients to
        // sample or elicit (forwarded when a client declared it).
        if self.events.is_some() {
            if let Ok(c) =
                serde_json::from_value(json!({"sampling": {}, "elicitation": {"form": {}}}))
            {
                info.capabilities = c;
            }
        }
        info
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.ask("sampling/createMessage", params).await
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.ask("elicitation/create", params).await
    }

    async fn on_logging_message(
        &self,
        param: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.emit(|server| UpstreamEvent::Log { server, param });
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.emit(|server| UpstreamEvent::ResourceUpdated {
            server,
            uri: params.uri,
        });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.emit(|_| UpstreamEvent::ResourcesChanged);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.emit(|_| UpstreamEvent::PromptsChanged);
    }
}

fn scrub(secrets: &[String], text: &str) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), "[header value]");
        }
    }
    while let Some(at) = text.find(" [rmcp::") {
        let Some(len) = text[at..].find(']') else {
            break;
        };
        text.replace_range(at..at + len + 1, "");
    }
    text
}

/// An upstream transport whose progress notifications are routed as they
/// arrive. rmcp runs each notification's handler as a task of its own but
/// hands a response to its caller at once, so progress routed in
/// `on_progress` could lose the race with the result (and be dropped, its
/// route gone); routed here, every update sent before the result is
/// delivered before it.
struct InOrder<T> {
    inner: T,
    handler: Handler,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(n) = &message {
            if let ServerNotification::ProgressNotification(p) = &n.notification {
                self.handler.route_progress(p.params.clone());
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// A running upstream session.
pub struct Connection {
    /// The MCP session (dropping it closes the transport).
    pub service: RunningService<RoleClient, Handler>,
    /// The process of a stdio server (`None` over HTTP).
    pub child: Option<tokio::process::Child>,
    /// Its process group id.
    pub pgid: Option<i32>,
    /// Its notification routing.
    pub handler: Handler,
}

impl Connection {
    /// The peer to send requests to.
    pub fn peer(&self) -> Peer<RoleClient> {
        self.service.peer().clone()
    }

    /// Resolves when the connection is over, with why: a stdio server's
    /// process exited; an HTTP one's transport failed or closed.
    pub async fn ended(&mut self) -> String {
        match &mut self.child {
            Some(child) => match child.wait().await {
                Ok(s) => format!("the server exited ({s})"),
                Err(e) => format!("the server is gone ({e})"),
            },
            None => {
                let why = super::http::ended(&self.service, &self.handler.broken)
                    .await
                    .or_else(|| self.handler.broken_reason())
                    .unwrap_or_else(|| "the connection failed".to_string());
                self.handler.scrub(&why)
            }
        }
    }
}

/// Kills a process group (the upstream and everything it started).
pub fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid.filter(|p| *p > 0) {
        // SAFETY: kill(2) with a negative pid signals a process group; no
        // memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Starts (stdio) or reaches (HTTP) the server and completes the MCP
/// handshake.
pub async fn connect(table: &ServerTable, workspace: &Path) -> Result<Connection, String> {
    connect_with(table, workspace, Handler::default()).await
}

/// [`connect`] with `handler` receiving the server's notifications.
pub async fn connect_with(
    table: &ServerTable,
    workspace: &Path,
    handler: Handler,
) -> Result<Connection, String> {
    if let Some(url) = &table.url {
        let mut handler = handler;
        let mut secrets: Vec<String> = Vec::new();
        for (_, value) in table.header_values().unwrap_or_default() {
            secrets.extend(
                value
                    .split_whitespace()
                    .filter(|w| w.len() >= 8)
                    .map(String::from),
            );
            secrets.push(value);
        }
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        handler.secrets = Arc::new(secrets);
        let transport = super::http::transport(table, url).map_err(|e| handler.scrub(&e))?;
        let service = handler
            .clone()
            .serve(InOrder {
                inner: transport,
                handler: handler.clone(),
            })
            .await
            .map_err(|e| {
                handler.scrub(&format!(
                    "MCP handshake with {url} failed: {}",
                    super::http::handshake_error(&e)
                ))
            })?;
        return Ok(Connection {
            service,
            child: None,
            pgid: None,
            handler,
        });
    }
    let argv = table.command.as_deref().unwrap_or_default();
    let Some((program, args)) = argv.split_first() else {
        return Err("no command to run".to_string());
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(workspace)
        .env_clear()
        .envs(
            table
                .env
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v))),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let pgid = child.id().map(|p| p as i32);
    if let Some(stderr) = child.stderr.take() {
        let name = table.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[upstream {name}] {line}");
            }
        });
    }
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        kill_group(pgid);
        return Err("cannot open the server's stdio".to_string());
    };
    let transport = InOrder {
        inner: super::stdio::StdioTransport::new(
            &table.name,
            stdout,
            stdin,
            handler.pending.clone(),
        ),
        handler: handler.clone(),
    };
    match handler.clone().serve(transport).await {
        Ok(service) => Ok(Connection {
            service,
            child: Some(child),
            pgid,
            handler,
        }),
        Err(e) => {
            kill_group(pgid);
            Err(format!("MCP handshake failed: {e}"))
        }
    }
}

/// The server's tools (`tools/list`, every page).
pub async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<UpstreamTool>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        let v = serde_json::to_value(&t).map_err(|e| e.to_string())?;
        let tool: UpstreamTool =
            serde_json::from_value(v).map_err(|e| format!("tools/list: {e}"))?;
        out.push(tool);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_texts_lose_header_values_and_type_names() {
        let secrets = [
            "Bearer tok-12345678".to_string(),
            "tok-12345678".to_string(),
        ];
        assert_eq!(
            super::scrub(
                &secrets,
                "Transport [rmcp::a::B<c::D>] error: saw Bearer tok-12345678 and tok-12345678"
            ),
            "Transport error: saw [header value] and [header value]"
        );
    }
}
