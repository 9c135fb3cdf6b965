//! Upstream resources, prompts, completion and logging, served to MCP
//! clients under the servers' prefixes. It only translates: the upstream
//! manager talks to the servers, the executor's redaction
//! ([`redact_passthrough`]) cleans what they answer, and the policy's active
//! set decides which servers a caller sees.
//!
//! Names (docs/upstream.md, "Resources, prompts, completion, logging"):
//!
//! - a prompt `P` of a server with prefix `X` is `X__P`, like its tools;
//! - a resource URI `U` is `toolgate://X/U` (and a template `T` is
//!   `toolgate://X/T`): one URI scheme that every client's URI parser
//!   accepts, whatever `U`'s own scheme; the prefix routes a read (or a URI
//!   a client built from a template) to its server even when two servers
//!   use the same URIs, and the upstream's URI stays readable after it;
//! - a resource's `name` is `X__NAME`; log records' `logger` is `X` or
//!   `X/LOGGER`;
//! - the one server with `prefix = ""` is transparent: its names, URIs and
//!   loggers pass unchanged, and a URI or name that no prefixed server
//!   claims goes to it. One of its names or URIs that a prefixed server
//!   would claim (`X__P`, `toolgate://X/…`) is left out of the listings.
//!
//! Visibility, the strict reading: a server's resources, prompts,
//! completions and log records reach a caller only when at least one of
//! that server's tools is active for the caller (the active set, or the
//! caller's profile; pinned-away tools do not count). A server none of whose
//! tools the policy activates is invisible, whatever else it offers.

// rmcp marks logging and resources/subscribe deprecated (2026 era); the
// handshake era still uses them.
#![allow(deprecated)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, LoggingLevel,
    ReadResourceRequestParams, ReadResourceResult, ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RoleServer};
use rmcp::ErrorData as McpError;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::Gateway;
use crate::config::manifest::Implementation;
use crate::config::server::{prefixed, unprefixed};
use crate::executor::redact_passthrough;
use crate::policy::auth::Identity;
use crate::upstream::{UpstreamEvent, UpstreamManager};

/// The URI scheme of upstream resources.
const SCHEME: &str = "toolgate://";

/// What one MCP session needs beyond tools: its resource subscriptions.
#[derive(Default)]
pub struct Session {
    /// (server, upstream URI) this session subscribed to.
    subscriptions: Mutex<BTreeSet<(String, String)>>,
}

impl Session {
    fn subs(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.subscriptions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The servers `identity` sees (server -> prefix): those with at least one
/// tool active for it.
pub(super) fn visible(gateway: &Gateway, identity: Option<&Identity>) -> BTreeMap<String, String> {
    let Some(manager) = gateway.upstreams() else {
        return BTreeMap::new();
    };
    let servers: BTreeSet<String> = gateway
        .active_tools_for(identity)
        .into_iter()
        .filter_map(|info| match &info.manifest.implementation {
            Implementation::Upstream { server, .. } => Some(server.clone()),
            _ => None,
        })
        .collect();
    manager
        .prefixes()
        .into_iter()
        .filter(|(server, _)| servers.contains(server))
        .collect()
}

fn manager(gateway: &Gateway) -> Result<&Arc<UpstreamManager>, McpError> {
    gateway
        .upstreams()
        .ok_or_else(|| McpError::invalid_params("no upstream servers are running", None))
}

/// `toolgate://PREFIX/URI`, or `URI` itself for the transparent server.
fn wrap(prefix: &str, uri: &str) -> String {
    if prefix.is_empty() {
        uri.to_string()
    } else {
        format!("{SCHEME}{prefix}/{uri}")
    }
}

/// The server and upstream URI a `toolgate://PREFIX/URI` names, among the
/// visible servers.
fn unwrap_uri(visible: &BTreeMap<String, String>, uri: &str) -> Result<(String, String), McpError> {
    let not_found = || {
        McpError::resource_not_found(
            format!(
                "resource {uri} not found: upstream resources are `{SCHEME}PREFIX/URI` \
                 for a server with an active tool"
            ),
            None,
        )
    };
    let server_of = |prefix: &str| {
        visible
            .iter()
            .find(|(_, p)| p.as_str() == prefix)
            .map(|(s, _)| s.clone())
    };
    let claimed = uri
        .strip_prefix(SCHEME)
        .and_then(|rest| rest.split_once('/'))
        .filter(|(prefix, _)| !prefix.is_empty())
        .and_then(|(prefix, inner)| Some((server_of(prefix)?, inner.to_string())));
    match claimed {
        Some(found) => Ok(found),
        // No prefixed server claims it: the transparent server's own URI.
        None => server_of("")
            .map(|server| (server, uri.to_string()))
            .ok_or_else(not_found),
    }
}

/// The server and upstream name a `PREFIX__NAME` names (the longest prefix
/// that fits), among the visible servers.
fn unwrap_name(visible: &BTreeMap<String, String>, name: &str) -> Option<(String, String)> {
    visible
        .iter()
        .filter_map(|(server, prefix)| {
            let rest = unprefixed(prefix, name)?;
            Some((prefix.len(), server.clone(), rest.to_string()))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, server, rest)| (server, rest))
}

fn upstream_error(e: String) -> McpError {
    McpError::internal_error(e, None)
}

fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| {
        McpError::internal_error(format!("an upstream answer did not convert: {e}"), None)
    })
}

/// Rewrites `field` of each item (a name or a URI) with `rename`.
fn rename_each(items: &mut Value, field: &str, rename: impl Fn(&str) -> String) {
    for item in items.as_array_mut().into_iter().flatten() {
        if let Some(Value::String(s)) = item.get_mut(field) {
            *s = rename(s);
        }
    }
}

/// Leaves out the transparent server's items that a read or get would route
/// to a prefixed server instead (a prompt `X__P`, a URI `toolgate://X/…`),
/// so that nothing listed leads somewhere else.
fn keep_routable(visible: &BTreeMap<String, String>, server: &str, what: &str, items: &mut Value) {
    let Some(list) = items.as_array_mut() else {
        return;
    };
    list.retain(|item| {
        let (field, routed) = match what {
            "resources" => (
                "uri",
                item["uri"].as_str().map(|u| unwrap_uri(visible, u).ok()),
            ),
            "templates" => (
                "uriTemplate",
                item["uriTemplate"]
                    .as_str()
                    .map(|u| unwrap_uri(visible, u).ok()),
            ),
            _ => (
                "name",
                item["name"].as_str().map(|n| unwrap_name(visible, n)),
            ),
        };
        let ok = routed.flatten().is_some_and(|(s, _)| s == server);
        if !ok {
            tracing::warn!(
                server,
                item = %item[field],
                "an upstream {what} item is not listed: its name is under another server's prefix"
            );
        }
        ok
    });
}

/// Collects one list from every visible server; a server that fails is left
/// out (and logged), so one broken server does not hide the others.
async fn collect(
    gateway: &Gateway,
    identity: Option<&Identity>,
    what: &str,
    fix: impl Fn(&str, &mut Value),
) -> Result<Vec<Value>, McpError> {
    let visible = visible(gateway, identity);
    let mut all = Vec::new();
    if visible.is_empty() {
        return Ok(all);
    }
    let manager = manager(gateway)?;
    let policy = gateway.policy();
    for (server, prefix) in &visible {
        let listed = match what {
            "resources" => manager.list_resources(server).await,
            "templates" => manager.list_resource_templates(server).await,
            _ => manager.list_prompts(server).await,
        };
        match listed {
            Ok(mut items) => {
                fix(prefix, &mut items);
                if prefix.is_empty() {
                    keep_routable(&visible, server, what, &mut items);
                }
                redact_passthrough(&policy, &mut items);
                all.extend(items.as_array().cloned().unwrap_or_default());
            }
            Err(e) => tracing::warn!(server, error = %e, "upstream {what} not listed"),
        }
    }
    Ok(all)
}

/// `resources/list`: every visible server's resources.
pub async fn list_resources(
    gateway: &Gateway,
    identity: Option<&Identity>,
) -> Result<ListResourcesResult, McpError> {
    let items = collect(gateway, identity, "resources", |prefix, items| {
        rename_each(items, "uri", |u| wrap(prefix, u));
        rename_each(items, "name", |n| prefixed(prefix, n));
    })
    .await?;
    Ok(ListResourcesResult::with_all_items(typed(Value::Array(
        items,
    ))?))
}

/// `resources/templates/list`: every visible server's URI templates.
pub async fn list_resource_templates(
    gateway: &Gateway,
    identity: Option<&Identity>,
) -> Result<ListResourceTemplatesResult, McpError> {
    let items = collect(gateway, identity, "templates", |prefix, items| {
        rename_each(items, "uriTemplate", |u| wrap(prefix, u));
        rename_each(items, "name", |n| prefixed(prefix, n));
    })
    .await?;
    Ok(ListResourceTemplatesResult::with_all_items(typed(
        Value::Array(items),
    )?))
}

/// `prompts/list`: every visible server's prompts.
pub async fn list_prompts(
    gateway: &Gateway,
    identity: Option<&Identity>,
) -> Result<ListPromptsResult, McpError> {
    let items = collect(gateway, identity, "prompts", |prefix, items| {
        rename_each(items, "name", |n| prefixed(prefix, n));
    })
    .await?;
    Ok(ListPromptsResult::with_all_items(typed(Value::Array(
        items,
    ))?))
}

/// Wraps the URI of each embedded resource in prompt messages.
fn wrap_embedded(prefix: &str, messages: &mut Value) {
    for m in messages.as_array_mut().into_iter().flatten() {
        if let Some(Value::String(uri)) = m.pointer_mut("/content/resource/uri") {
            *uri = wrap(prefix, uri);
        }
    }
}

/// `resources/read` of a `toolgate://PREFIX/URI`, redacted.
pub async fn read_resource(
    gateway: &Gateway,
    identity: Option<&Identity>,
    request: ReadResourceRequestParams,
) -> Result<ReadResourceResult, McpError> {
    let visible = visible(gateway, identity);
    let (server, uri) = unwrap_uri(&visible, &request.uri)?;
    let mut result = manager(gateway)?
        .read_resource(&server, &uri)
        .await
        .map_err(upstream_error)?;
    if let Some(contents) = result.get_mut("contents") {
        rename_each(contents, "uri", |u| wrap(&visible[&server], u));
    }
    redact_passthrough(&gateway.policy(), &mut result);
    typed(result)
}

/// `prompts/get` of a `PREFIX__NAME`, redacted.
pub async fn get_prompt(
    gateway: &Gateway,
    identity: Option<&Identity>,
    request: GetPromptRequestParams,
) -> Result<GetPromptResult, McpError> {
    let visible = visible(gateway, identity);
    let Some((server, name)) = unwrap_name(&visible, &request.name) else {
        return Err(McpError::invalid_params(
            format!("Prompt {} not found", request.name),
            None,
        ));
    };
    let mut params = serde_json::to_value(&request).map_err(|e| upstream_error(e.to_string()))?;
    params["name"] = Value::String(name);
    let mut result = manager(gateway)?
        .get_prompt(&server, params)
        .await
        .map_err(upstream_error)?;
    if let Some(messages) = result.get_mut("messages") {
        wrap_embedded(&visible[&server], messages);
    }
    redact_passthrough(&gateway.policy(), &mut result);
    typed(result)
}

/// `completion/complete` for a prefixed prompt or URI template; values
/// redacted. Anything else (toolgate's own prompts: it has none) completes
/// to nothing.
pub async fn complete(
    gateway: &Gateway,
    identity: Option<&Identity>,
    request: CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let visible = visible(gateway, identity);
    let mut params = serde_json::to_value(&request).map_err(|e| upstream_error(e.to_string()))?;
    let target = match params["ref"]["type"].as_str() {
        Some("ref/prompt") => params["ref"]["name"]
            .as_str()
            .and_then(|n| unwrap_name(&visible, n))
            .map(|(server, name)| (server, "name", name)),
        Some("ref/resource") => params["ref"]["uri"]
            .as_str()
            .and_then(|u| unwrap_uri(&visible, u).ok())
            .map(|(server, uri)| (server, "uri", uri)),
        _ => None,
    };
    let Some((server, field, inner)) = target else {
        return Ok(CompleteResult::default());
    };
    params["ref"][field] = Value::String(inner);
    let mut result = manager(gateway)?
        .complete(&server, params)
        .await
        .map_err(upstream_error)?;
    redact_passthrough(&gateway.policy(), &mut result);
    typed(result)
}

/// `resources/subscribe` to a `toolgate://PREFIX/URI`.
pub async fn subscribe(
    gateway: &Gateway,
    identity: Option<&Identity>,
    session: &Session,
    uri: &str,
) -> Result<(), McpError> {
    let (server, inner) = unwrap_uri(&visible(gateway, identity), uri)?;
    if session.subs().insert((server.clone(), inner.clone())) {
        manager(gateway)?
            .subscribe_resource(&server, &inner)
            .await
            .map_err(upstream_error)?;
    }
    Ok(())
}

/// `resources/unsubscribe`.
pub async fn unsubscribe(
    gateway: &Gateway,
    identity: Option<&Identity>,
    session: &Session,
    uri: &str,
) -> Result<(), McpError> {
    let (server, inner) = unwrap_uri(&visible(gateway, identity), uri)?;
    if session.subs().remove(&(server.clone(), inner.clone())) {
        manager(gateway)?
            .unsubscribe_resource(&server, &inner)
            .await
            .map_err(upstream_error)?;
    }
    Ok(())
}

/// `logging/setLevel`, forwarded to every upstream that logs.
pub async fn set_level(gateway: &Gateway, level: LoggingLevel) {
    if let Some(m) = gateway.upstreams() {
        m.set_level(level).await;
    }
}

/// Forwards upstream notifications to one handshake-era session until it
/// closes: log records (of visible servers, at or above the session's
/// level, `wants`), updates of resources it subscribed to, and resource and
/// prompt list changes.
pub async fn forward_events(
    gateway: Arc<Gateway>,
    peer: Peer<RoleServer>,
    identity: Option<Identity>,
    session: Arc<Session>,
    wants: impl Fn(LoggingLevel) -> bool + Send + 'static,
) {
    let Some(manager) = gateway.upstreams().cloned() else {
        return;
    };
    let mut events = manager.events();
    drop(manager);
    let mut tick = tokio::time::interval(Duration::from_secs(30));
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            _ = tick.tick() => {
                if peer.is_transport_closed() {
                    return;
                }
                continue;
            }
        };
        let sent = match event {
            Err(RecvError::Closed) => return,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(
                    dropped = n,
                    "upstream notifications dropped for a slow client"
                );
                continue;
            }
            Ok(UpstreamEvent::Log { server, mut param }) => {
                let visible = visible(&gateway, identity.as_ref());
                let Some(prefix) = visible.get(&server) else {
                    continue;
                };
                if !wants(param.level) {
                    continue;
                }
                if !prefix.is_empty() {
                    param.logger = Some(match param.logger.take() {
                        Some(l) => format!("{prefix}/{l}"),
                        None => prefix.clone(),
                    });
                }
                redact_passthrough(&gateway.policy(), &mut param.data);
                if let Some(l) = param.logger.as_mut() {
                    let mut v = Value::String(std::mem::take(l));
                    redact_passthrough(&gateway.policy(), &mut v);
                    *l = v.as_str().unwrap_or_default().to_string();
                }
                peer.notify_logging_message(param).await
            }
            Ok(UpstreamEvent::ResourceUpdated { server, uri }) => {
                if !session.subs().contains(&(server.clone(), uri.clone())) {
                    continue;
                }
                let Some(prefix) = visible(&gateway, identity.as_ref()).remove(&server) else {
                    continue;
                };
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(wrap(
                    &prefix, &uri,
                )))
                .await
            }
            Ok(UpstreamEvent::ResourcesChanged) => peer.notify_resource_list_changed().await,
            Ok(UpstreamEvent::PromptsChanged) => peer.notify_prompt_list_changed().await,
        };
        if sent.is_err() && peer.is_transport_closed() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> BTreeMap<String, String> {
        [("everything", "ev"), ("ev2", "ev__x"), ("fs", "fs")]
            .into_iter()
            .map(|(s, p)| (s.to_string(), p.to_string()))
            .collect()
    }

    #[test]
    fn uris_are_wrapped_and_routed_by_prefix() {
        let v = servers();
        let u = wrap("ev", "demo://resource/static/document/a.md");
        assert_eq!(u, "toolgate://ev/demo://resource/static/document/a.md");
        assert_eq!(
            unwrap_uri(&v, &u).unwrap(),
            (
                "everything".to_string(),
                "demo://resource/static/document/a.md".to_string()
            )
        );
        assert!(unwrap_uri(&v, "demo://resource/x").is_err());
        assert!(unwrap_uri(&v, "toolgate://other/demo://x").is_err());
        assert!(unwrap_uri(&v, "toolgate://ev").is_err());
    }

    #[test]
    fn the_transparent_server_gets_what_no_prefix_claims() {
        let mut v = servers();
        v.insert("plain".to_string(), String::new());
        assert_eq!(wrap("", "test://static-text"), "test://static-text");
        assert_eq!(
            unwrap_uri(&v, "test://static-text").unwrap(),
            ("plain".to_string(), "test://static-text".to_string())
        );
        // A prefixed server's URI still goes to it.
        assert_eq!(
            unwrap_uri(&v, "toolgate://ev/demo://x").unwrap().0,
            "everything"
        );
        assert_eq!(
            unwrap_name(&v, "test_simple_prompt"),
            Some(("plain".to_string(), "test_simple_prompt".to_string()))
        );
        assert_eq!(unwrap_name(&v, "ev__p").unwrap().0, "everything");
        // Its own items that a prefixed server would claim are not listed.
        let mut prompts = serde_json::json!([{"name": "ok"}, {"name": "ev__shadowed"}]);
        keep_routable(&v, "plain", "prompts", &mut prompts);
        assert_eq!(prompts, serde_json::json!([{"name": "ok"}]));
        let mut uris = serde_json::json!([{"uri": "toolgate://fs/x"}, {"uri": "file:///a"}]);
        keep_routable(&v, "plain", "resources", &mut uris);
        assert_eq!(uris, serde_json::json!([{"uri": "file:///a"}]));
        // Without it, an unprefixed URI or name is not found.
        assert!(unwrap_uri(&servers(), "test://static-text").is_err());
        assert_eq!(unwrap_name(&servers(), "test_simple_prompt"), None);
    }

    #[test]
    fn names_take_the_longest_visible_prefix() {
        let v = servers();
        assert_eq!(
            unwrap_name(&v, "ev__simple-prompt"),
            Some(("everything".to_string(), "simple-prompt".to_string()))
        );
        assert_eq!(
            unwrap_name(&v, "ev__x__p"),
            Some(("ev2".to_string(), "p".to_string()))
        );
        assert_eq!(unwrap_name(&v, "zz__p"), None);
        assert_eq!(unwrap_name(&v, "evsimple"), None);
    }
}
