//! Sampling (`sampling/createMessage`) and elicitation (`elicitation/create`)
//! requests from upstream servers, put to the right MCP client (handshake
//! era) and answered back, redacted both ways.
//!
//! Which client: an upstream over stdio sends its request with nothing that
//! names the tool call it belongs to, so toolgate routes by what is running:
//!
//! 1. the session with a `tools/call` of that server in flight: the request
//!    is handed to that call's own task, so over Streamable HTTP it goes out
//!    on the call's response stream (where a client expects it), as the
//!    upstream meant it;
//! 2. with no such call, the one open session that sees the server and
//!    declared the capability.
//!
//! Calls in flight from several sessions at once, or several candidate
//! sessions without a call, are an error answer to the upstream: toolgate
//! cannot tell whose request it is, and asking the wrong user would show
//! them another session's data. Over stdio there is one client. A stateless
//! (2026-era) call in flight is a session of its own: its server's request
//! goes back to its client as an input-required round
//! (serve/upstream_rounds.rs), never to another session.

// rmcp marks sampling deprecated (2026 era); the handshake era still uses it.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::passthrough::visible;
use super::Gateway;
use crate::config::manifest::Implementation;
use crate::executor::redact_passthrough;
use crate::policy::auth::Identity;
use crate::upstream::ClientAsk;

/// An upstream's request, handed to the tool call it belongs to.
pub struct Ask {
    method: &'static str,
    params: Value,
    reply: oneshot::Sender<Result<Value, String>>,
}

impl Ask {
    /// A request of `method` with `params`, and where its answer arrives.
    pub fn new(
        method: &'static str,
        params: Value,
    ) -> (Ask, oneshot::Receiver<Result<Value, String>>) {
        let (reply, answered) = oneshot::channel();
        (
            Ask {
                method,
                params,
                reply,
            },
            answered,
        )
    }

    /// `sampling/createMessage` or `elicitation/create`.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The request's params (already redacted).
    pub fn params(&self) -> &Value {
        &self.params
    }

    /// The client capability the request needs.
    pub fn capability(&self) -> &'static str {
        capability_of(self.method)
    }

    /// Answers the upstream (the answer is redacted on its way).
    pub fn reply(self, answer: Result<Value, String>) {
        let _ = self.reply.send(answer);
    }

    /// Answers the upstream with an error.
    pub fn refuse(self, why: String) {
        self.reply(Err(why));
    }
}

/// One handshake-era `tools/call` of an upstream server, while it runs.
struct InFlight {
    id: u64,
    server: String,
    /// The calling session (its [`super::passthrough::Session`]'s address).
    session: usize,
    asks: mpsc::UnboundedSender<Ask>,
}

/// The handshake-era sessions, and the upstream calls they have in flight.
#[derive(Default)]
pub struct Clients {
    sessions: Mutex<Vec<(Peer<RoleServer>, Option<Identity>)>>,
    calls: Mutex<Vec<InFlight>>,
    next: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running upstream call's end of the routing: requests for it arrive
/// here; dropping it (the call ended) unregisters the call.
pub struct CallAsks {
    clients: Arc<Clients>,
    id: u64,
    asks: mpsc::UnboundedReceiver<Ask>,
}

impl Drop for CallAsks {
    fn drop(&mut self) {
        lock(&self.clients.calls).retain(|c| c.id != self.id);
    }
}

/// Registers the `tools/call` of `name` while it runs, when `name` is an
/// upstream tool. `session` tells one session's calls from another's (each
/// stateless request is a session of its own).
pub fn register_call(gateway: &Gateway, name: &str, session: usize) -> Option<CallAsks> {
    let policy = gateway.policy();
    let Implementation::Upstream { server, .. } = &policy.tools.get(name)?.manifest.implementation
    else {
        return None;
    };
    let clients = gateway.clients.clone();
    let id = clients.next.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    lock(&clients.calls).push(InFlight {
        id,
        server: server.clone(),
        session,
        asks: tx,
    });
    Some(CallAsks {
        clients,
        id,
        asks: rx,
    })
}

/// The next request for the call (never, when it is not an upstream call).
pub async fn next_ask(call: &mut Option<CallAsks>) -> Option<Ask> {
    match call {
        Some(c) => c.asks.recv().await,
        None => std::future::pending().await,
    }
}

/// Puts `ask` to the client of the call `context` serves, from the call's
/// own task (so HTTP sends it on the call's stream), and replies with its
/// answer. Gives up when the call is cancelled.
pub async fn answer(context: &RequestContext<RoleServer>, ask: Ask) {
    let Ask {
        method,
        params,
        reply,
    } = ask;
    let capability = capability_of(method);
    let answer = if !declared(&context.peer, capability) {
        Err(format!(
            "the client that called the tool did not declare {capability}"
        ))
    } else {
        tokio::select! {
            a = put(&context.peer, method, params) => a,
            _ = context.ct.cancelled() => Err("the tool call was cancelled".to_string()),
        }
    };
    let _ = reply.send(answer);
}

fn capability_of(method: &str) -> &'static str {
    if method == "elicitation/create" {
        "elicitation"
    } else {
        "sampling"
    }
}

/// Whether the client behind `peer` declared `capability`.
fn declared(peer: &Peer<RoleServer>, capability: &str) -> bool {
    peer.peer_info()
        .and_then(|i| serde_json::to_value(&i.capabilities).ok())
        .is_some_and(|c| c.get(capability).is_some_and(|v| !v.is_null()))
}

/// Sends the request to one client and returns its answer as JSON.
async fn put(peer: &Peer<RoleServer>, method: &str, params: Value) -> Result<Value, String> {
    let bad = |e: serde_json::Error| format!("{method}: {e}");
    if capability_of(method) == "elicitation" {
        let r = peer
            .create_elicitation(serde_json::from_value(params).map_err(bad)?)
            .await
            .map_err(|e| format!("{method}: the client: {e}"))?;
        serde_json::to_value(r).map_err(bad)
    } else {
        let r = peer
            .create_message(serde_json::from_value(params).map_err(bad)?)
            .await
            .map_err(|e| format!("{method}: the client: {e}"))?;
        serde_json::to_value(r).map_err(bad)
    }
}

/// Where one upstream request goes.
enum Route {
    /// To this running call.
    Call(mpsc::UnboundedSender<Ask>),
    /// To this session.
    Session(Peer<RoleServer>),
}

impl Clients {
    /// Records a session that finished its handshake.
    pub fn add(&self, peer: Peer<RoleServer>, identity: Option<Identity>) {
        let mut all = lock(&self.sessions);
        all.retain(|(p, _)| !p.is_transport_closed());
        all.push((peer, identity));
    }

    /// Where a `capability` request of `server` goes (see the module docs).
    fn route(&self, gateway: &Gateway, server: &str, capability: &str) -> Result<Route, String> {
        {
            let calls = lock(&self.calls);
            let mut mine = calls.iter().filter(|c| c.server == server);
            if let Some(first) = mine.next() {
                if mine.any(|c| c.session != first.session) {
                    return Err(format!(
                        "calls of upstream {server} are running for several clients; toolgate \
                         cannot tell which one this {capability} request is for"
                    ));
                }
                return Ok(Route::Call(first.asks.clone()));
            }
        }
        let mut all = lock(&self.sessions);
        all.retain(|(p, _)| !p.is_transport_closed());
        let fit: Vec<&Peer<RoleServer>> = all
            .iter()
            .filter(|(p, who)| {
                visible(gateway, who.as_ref()).contains_key(server) && declared(p, capability)
            })
            .map(|(p, _)| p)
            .collect();
        match fit.as_slice() {
            [one] => Ok(Route::Session((*one).clone())),
            [] => Err(format!(
                "no connected client that sees upstream {server} declared {capability}"
            )),
            _ => Err(format!(
                "several connected clients see upstream {server}; toolgate cannot tell \
                 which one this {capability} request is for"
            )),
        }
    }
}

/// The gateway's answer to upstream sampling and elicitation requests: put
/// to the client [`Clients::route`] picks, with the request and the answer
/// redacted (a secret goes neither from an upstream to the user or model,
/// nor back).
pub fn client_ask(gateway: std::sync::Weak<Gateway>, clients: Arc<Clients>) -> ClientAsk {
    Arc::new(move |server, method, mut params| {
        let gateway = gateway.clone();
        let clients = clients.clone();
        Box::pin(async move {
            let gateway = gateway.upgrade().ok_or("toolgate is shutting down")?;
            let route = clients.route(&gateway, &server, capability_of(method))?;
            redact_passthrough(&gateway.policy(), &mut params);
            let mut answer = match route {
                Route::Session(peer) => put(&peer, method, params).await?,
                Route::Call(call) => {
                    let (ask, answered) = Ask::new(method, params);
                    call.send(ask)
                        .map_err(|_| "the tool call ended".to_string())?;
                    answered
                        .await
                        .map_err(|_| "the tool call ended".to_string())??
                }
            };
            redact_passthrough(&gateway.policy(), &mut answer);
            Ok(answer)
        })
    })
}
