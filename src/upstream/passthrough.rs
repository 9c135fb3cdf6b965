//! What an upstream server offers besides tools, reached by server name:
//! resources (list, templates, read, subscribe), prompts (list, get),
//! completion, `logging/setLevel`, and the notifications that go with them
//! ([`UpstreamEvent`]). Everything here speaks the upstream's own names and
//! URIs as JSON; the MCP front-end (`serve::passthrough`) decides which
//! servers a caller sees, prefixes the names and redacts what comes back.

// rmcp marks logging and resources/subscribe deprecated (2026 era); the
// handshake era still uses them.
#![allow(deprecated)]

use std::collections::BTreeMap;

use rmcp::model::{
    CompleteRequestParams, GetPromptRequestParams, LoggingLevel, LoggingMessageNotificationParam,
    ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient};
use serde_json::Value;

use super::UpstreamManager;

/// A notification from an upstream server that clients may need.
#[derive(Clone, Debug)]
pub enum UpstreamEvent {
    /// `notifications/message` (a log record).
    Log {
        /// The server's name.
        server: String,
        /// The record, as the upstream sent it.
        param: LoggingMessageNotificationParam,
    },
    /// `notifications/resources/updated` for a subscribed URI.
    ResourceUpdated {
        /// The server's name.
        server: String,
        /// The upstream's URI.
        uri: String,
    },
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
}

/// Asks the connected client on an upstream's behalf: `(server, method,
/// params)` -> the client's result. `method` is `sampling/createMessage` or
/// `elicitation/create`. The MCP front-end provides it (it knows the
/// sessions, which servers each sees, and redacts both ways).
pub type ClientAsk = std::sync::Arc<
    dyn Fn(
            String,
            &'static str,
            Value,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Answer> + Send>>
        + Send
        + Sync,
>;

/// What an upstream answered, or why it could not.
pub type Answer = Result<Value, String>;

fn json<T: serde::Serialize>(value: T) -> Answer {
    serde_json::to_value(value).map_err(|e| e.to_string())
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| e.to_string())
}

impl UpstreamManager {
    /// Server name -> tool/prompt prefix, for every configured server.
    pub fn prefixes(&self) -> BTreeMap<String, String> {
        self.servers()
            .iter()
            .map(|(name, s)| (name.clone(), s.loaded.manifest.server.prefix().to_string()))
            .collect()
    }

    /// The session of a running server, or why there is none.
    fn peer(&self, server: &str) -> Result<Peer<RoleClient>, String> {
        let s = self
            .servers()
            .get(server)
            .cloned()
            .ok_or_else(|| format!("upstream {server} is not configured"))?;
        let st = s.lock();
        match (&st.conn, &st.down) {
            (Some((peer, _)), _) => Ok(peer.clone()),
            (None, Some(why)) => Err(format!("upstream {server} is unavailable: {why}")),
            (None, None) => Err(format!("upstream {server} is unavailable: it is starting")),
        }
    }

    /// Whether the running server declared `capability` (`resources`,
    /// `prompts`, `completions`, `logging`) when it started. A server that
    /// did not is skipped, not asked.
    fn offers(&self, server: &str, capability: &str) -> bool {
        self.peer(server).ok().is_some_and(|p| {
            p.peer_info()
                .and_then(|info| serde_json::to_value(&info.capabilities).ok())
                .is_some_and(|c| c.get(capability).is_some_and(|v| !v.is_null()))
        })
    }

    /// `resources/list` (every page) of `server`: a list of `Resource`s.
    pub async fn list_resources(&self, server: &str) -> Answer {
        self.ensure_started(server).await;
        if !self.offers(server, "resources") {
            return Ok(Value::Array(Vec::new()));
        }
        let peer = self.peer(server)?;
        json(peer.list_all_resources().await.map_err(|e| e.to_string())?)
    }

    /// `resources/templates/list` (every page) of `server`.
    pub async fn list_resource_templates(&self, server: &str) -> Answer {
        self.ensure_started(server).await;
        if !self.offers(server, "resources") {
            return Ok(Value::Array(Vec::new()));
        }
        let peer = self.peer(server)?;
        json(
            peer.list_all_resource_templates()
                .await
                .map_err(|e| e.to_string())?,
        )
    }

    /// `prompts/list` (every page) of `server`.
    pub async fn list_prompts(&self, server: &str) -> Answer {
        self.ensure_started(server).await;
        if !self.offers(server, "prompts") {
            return Ok(Value::Array(Vec::new()));
        }
        let peer = self.peer(server)?;
        json(peer.list_all_prompts().await.map_err(|e| e.to_string())?)
    }

    /// `resources/read` of the upstream's `uri`: a `ReadResourceResult`.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Answer {
        self.ensure_started(server).await;
        let peer = self.peer(server)?;
        let params = ReadResourceRequestParams::new(uri);
        json(
            peer.read_resource(params)
                .await
                .map_err(|e| format!("upstream {server}: {e}"))?,
        )
    }

    /// `prompts/get`: `params` is the client's request with the upstream's
    /// own prompt name; the answer is a `GetPromptResult`.
    pub async fn get_prompt(&self, server: &str, params: Value) -> Answer {
        self.ensure_started(server).await;
        let peer = self.peer(server)?;
        let params: GetPromptRequestParams = parse(params)?;
        json(
            peer.get_prompt(params)
                .await
                .map_err(|e| format!("upstream {server}: {e}"))?,
        )
    }

    /// `completion/complete`: `params` names the upstream's own prompt or
    /// URI template; the answer is a `CompleteResult`.
    pub async fn complete(&self, server: &str, params: Value) -> Answer {
        self.ensure_started(server).await;
        let peer = self.peer(server)?;
        let params: CompleteRequestParams = parse(params)?;
        json(
            peer.complete(params)
                .await
                .map_err(|e| format!("upstream {server}: {e}"))?,
        )
    }

    /// `resources/subscribe` for the upstream's `uri`. Several sessions may
    /// subscribe to one URI: only the first reaches the upstream.
    pub async fn subscribe_resource(&self, server: &str, uri: &str) -> Result<(), String> {
        let first = {
            let mut subs = self.lock_subscriptions();
            let n = subs
                .entry((server.to_string(), uri.to_string()))
                .or_insert(0);
            *n += 1;
            *n == 1
        };
        if !first {
            return Ok(());
        }
        self.ensure_started(server).await;
        let peer = self.peer(server)?;
        peer.subscribe(SubscribeRequestParams::new(uri))
            .await
            .map_err(|e| format!("upstream {server}: {e}"))
    }

    /// `resources/unsubscribe`: the last session to leave unsubscribes
    /// upstream.
    pub async fn unsubscribe_resource(&self, server: &str, uri: &str) -> Result<(), String> {
        let last = {
            let mut subs = self.lock_subscriptions();
            let key = (server.to_string(), uri.to_string());
            match subs.get_mut(&key) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    subs.remove(&key);
                    true
                }
                None => false,
            }
        };
        if !last {
            return Ok(());
        }
        let peer = self.peer(server)?;
        peer.unsubscribe(UnsubscribeRequestParams::new(uri))
            .await
            .map_err(|e| format!("upstream {server}: {e}"))
    }

    /// `logging/setLevel` on every running server that offers logging.
    pub async fn set_level(&self, level: LoggingLevel) {
        let names: Vec<String> = self.servers().keys().cloned().collect();
        for server in names {
            if !self.offers(&server, "logging") {
                continue;
            }
            if let Ok(peer) = self.peer(&server) {
                if let Err(e) = peer.set_level(SetLevelRequestParams::new(level)).await {
                    tracing::debug!(server, error = %e, "logging/setLevel not forwarded");
                }
            }
        }
    }

    /// Lets upstream sampling and elicitation requests reach clients
    /// through `ask` (without it, they are answered "method not found").
    pub fn set_client_ask(&self, ask: ClientAsk) {
        *self.asker.write().unwrap_or_else(|e| e.into_inner()) = Some(ask);
    }

    /// Notifications from every server (log records, resource updates,
    /// list changes), for the MCP sessions to forward.
    pub fn events(&self) -> tokio::sync::broadcast::Receiver<UpstreamEvent> {
        self.events.subscribe()
    }

    fn lock_subscriptions(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), usize>> {
        self.subscriptions.lock().unwrap_or_else(|e| e.into_inner())
    }
}
