//! Upstream MCP servers fronted by the gateway (`[server]` manifests).
//!
//! The [`UpstreamManager`] runs each server (a supervisor task per server:
//! start, `initialize`, `tools/list`, pin check, restart with backoff when
//! it dies), hands the compiler what they listed ([`UpstreamCatalog`]), and
//! forwards the executor's calls to them ([`Upstreams`]). Nothing here
//! decides: an upstream tool is a manifest tool like any other, so active
//! sets, validation against its `inputSchema`, before-rules, redaction,
//! result rules, limits and the decision log all come from the executor.

mod answer;
mod call;
mod connect;
mod http;
mod passthrough;
pub mod pin;
mod stdio;
mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::service::{Peer, RoleClient};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::config::server::{LoadedServer, PinMode, UpstreamCatalog, UpstreamTool};
use crate::tools::upstream::Upstreams;
use crate::tools::{ToolContext, ToolError, ToolFuture};
use connect::{kill_group, Handler};
use pin::Lock;

pub use connect::list_tools;
pub use passthrough::{Answer, ClientAsk, UpstreamEvent};

/// How long a server has to start and list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// The first restart delay; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One server as `/status` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct UpstreamStatus {
    /// The server's name.
    pub name: String,
    /// `up`, `starting`, `down`, or `idle` (a lazy server not used yet).
    pub state: &'static str,
    /// Why it is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many tools it listed.
    pub tools: usize,
    /// How often it was restarted after it died.
    pub restarts: u64,
    /// Its pin mode.
    pub pin: PinMode,
    /// Tools that differ from the lock file: upstream name -> what changed.
    pub pin_mismatches: BTreeMap<String, String>,
}

#[derive(Default)]
struct State {
    conn: Option<(Peer<RoleClient>, Handler)>,
    pgid: Option<i32>,
    down: Option<String>,
    tools: Option<Vec<UpstreamTool>>,
    mismatches: BTreeMap<String, String>,
    restarts: u64,
    /// A lazy server not started yet: its tools are those of its lock file
    /// until the first call (or resource/prompt request) starts it.
    idle: bool,
}

struct Server {
    loaded: LoadedServer,
    state: Mutex<State>,
    stop: CancellationToken,
}

impl Server {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn name(&self) -> &str {
        self.loaded.name()
    }

    /// Why `tool` may not be called now (pin = block and it changed).
    fn withheld(&self, tool: &str) -> Option<String> {
        if self.loaded.manifest.server.pin != PinMode::Block {
            return None;
        }
        let state = self.lock();
        let what = state.mismatches.get(tool)?;
        Some(format!(
            "upstream tool {} is withheld: {what} since it was pinned in {}.lock; \
             an operator must review it and accept it with `toolgate pin {}`",
            self.loaded.manifest.server.tool_name(tool),
            self.name(),
            self.name()
        ))
    }

    /// Checks a listing against the lock file (writing one on first use)
    /// and keeps both.
    fn apply_listing(&self, tools: Vec<UpstreamTool>) {
        let mode = self.loaded.manifest.server.pin;
        let mismatches = match (mode, self.loaded.lock_path()) {
            (PinMode::Off, _) | (_, None) => BTreeMap::new(),
            (_, Some(path)) => pin_check(self.name(), &path, &tools),
        };
        for (tool, what) in &mismatches {
            tracing::warn!(server = self.name(), tool, what, pin = ?mode, "upstream tool differs from its pin");
        }
        let mut state = self.lock();
        state.tools = Some(tools);
        state.mismatches = mismatches;
    }

    /// Checks the last listing against the lock file again (after
    /// `toolgate pin`). True when the result changed.
    fn recheck_pins(&self) -> bool {
        let tools = self.lock().tools.clone();
        let Some(tools) = tools else { return false };
        let before = self.lock().mismatches.clone();
        self.apply_listing(tools);
        self.lock().mismatches != before
    }
}

/// What differs from the lock file; a missing lock is written (the first
/// load pins), an unreadable one withholds every tool.
fn pin_check(server: &str, path: &Path, tools: &[UpstreamTool]) -> BTreeMap<String, String> {
    match Lock::read(path) {
        Ok(Some(lock)) => lock.mismatches(tools),
        Ok(None) => {
            if let Err(e) = Lock::of(server, tools).write(path) {
                tracing::error!(server, error = %e, "cannot write the lock file");
            } else {
                tracing::info!(server, lock = %path.display(), "pinned the upstream's tools (first load)");
            }
            BTreeMap::new()
        }
        Err(e) => tools
            .iter()
            .map(|t| (t.name.clone(), format!("the lock file is unusable ({e})")))
            .collect(),
    }
}

/// Runs the upstream servers and forwards calls to them.
pub struct UpstreamManager {
    workspace: PathBuf,
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    changed: Arc<watch::Sender<u64>>,
    me: Weak<UpstreamManager>,
    runtime: tokio::runtime::Handle,
    /// Upstream notifications for the MCP sessions (see `passthrough`).
    events: broadcast::Sender<UpstreamEvent>,
    /// Resource subscriptions: (server, upstream URI) -> sessions.
    subscriptions: Mutex<BTreeMap<(String, String), usize>>,
    /// Who answers upstream sampling and elicitation requests.
    asker: connect::AskSlot,
}

impl UpstreamManager {
    /// A manager whose servers run in `workspace`. Must be created inside a
    /// tokio runtime (supervisors are tasks on it).
    pub fn new(workspace: &Path) -> Arc<UpstreamManager> {
        let (changed, _) = watch::channel(0);
        Arc::new_cyclic(|me| UpstreamManager {
            workspace: workspace.to_path_buf(),
            servers: Mutex::default(),
            changed: Arc::new(changed),
            me: me.clone(),
            runtime: tokio::runtime::Handle::current(),
            events: broadcast::channel(256).0,
            subscriptions: Mutex::default(),
            asker: connect::AskSlot::default(),
        })
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Server>>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notified when a server's tools or pins changed (the gateway then
    /// compiles again and tells clients).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Makes the running servers those of `servers`: starts new ones, stops
    /// removed ones, restarts those whose manifest changed, and leaves the
    /// others (and their calls) alone, only checking their pins again.
    /// Returns, per started eager server, a receiver that resolves once it
    /// listed its tools (or failed to).
    pub fn reconcile(&self, servers: &[LoadedServer]) -> Vec<oneshot::Receiver<()>> {
        let mut ready = Vec::new();
        let mut changed = false;
        let mut current = self.servers();
        let wanted: BTreeMap<&str, &LoadedServer> = servers.iter().map(|s| (s.name(), s)).collect();
        current.retain(|name, s| {
            let keep = wanted.get(name.as_str()).is_some_and(|w| {
                w.file.text == s.loaded.file.text && w.file.path == s.loaded.file.path
            });
            if !keep {
                tracing::info!(server = %name, "stopping upstream server");
                s.stop.cancel();
                kill_group(s.lock().pgid);
                changed = true;
            }
            keep
        });
        for (name, loaded) in wanted {
            if let Some(s) = current.get(name) {
                changed |= s.recheck_pins();
                continue;
            }
            let server = Arc::new(Server {
                loaded: loaded.clone(),
                state: Mutex::default(),
                stop: CancellationToken::new(),
            });
            if let Some(tools) = lazy_tools(loaded) {
                tracing::info!(server = %name, tools = tools.len(), "lazy upstream server: its pinned tools are listed; it starts on first use");
                let mut st = server.lock();
                st.tools = Some(tools);
                st.idle = true;
                drop(st);
                current.insert(name.to_string(), server);
                changed = true;
                continue;
            }
            let rx = self.supervise(&server);
            if loaded.manifest.server.start == crate::config::server::StartMode::Eager {
                ready.push(rx);
            }
            current.insert(name.to_string(), server);
            changed = true;
        }
        drop(current);
        if changed {
            self.changed.send_modify(|n| *n += 1);
        }
        ready
    }

    /// Starts `servers` and waits (up to [`START_TIMEOUT`]) until every
    /// eager one listed its tools or failed.
    pub async fn start(&self, servers: &[LoadedServer]) {
        let ready = self.reconcile(servers);
        let all = futures_all(ready);
        let _ = tokio::time::timeout(START_TIMEOUT, all).await;
    }

    /// Runs `server`'s supervisor (start, restart with backoff, re-list);
    /// the receiver resolves once it listed its tools (or failed to).
    fn supervise(&self, server: &Arc<Server>) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.runtime.spawn(supervise(
            server.clone(),
            self.workspace.clone(),
            (
                self.changed.clone(),
                self.events.clone(),
                self.asker.clone(),
            ),
            Some(tx),
        ));
        rx
    }

    /// Starts `server` if it is an idle lazy one; the receiver resolves once
    /// it listed its tools (or failed to).
    fn wake(&self, server: &Arc<Server>) -> Option<oneshot::Receiver<()>> {
        {
            let mut st = server.lock();
            if !st.idle {
                return None;
            }
            st.idle = false;
        }
        tracing::info!(
            server = server.name(),
            "starting lazy upstream server on first use"
        );
        Some(self.supervise(server))
    }

    /// Starts `server` if it is an idle lazy one and waits (up to
    /// [`START_TIMEOUT`]) until it listed its tools.
    async fn ensure_started(&self, server: &str) {
        let Some(s) = self.servers().get(server).cloned() else {
            return;
        };
        if let Some(rx) = self.wake(&s) {
            let _ = tokio::time::timeout(START_TIMEOUT, rx).await;
        }
    }

    /// What the running servers listed, for the compiler.
    pub fn catalog(&self) -> UpstreamCatalog {
        self.servers()
            .iter()
            .filter_map(|(name, s)| s.lock().tools.clone().map(|t| (name.clone(), t)))
            .collect()
    }

    /// Why the upstream tool may not be listed or called, when it may not.
    pub fn withheld(&self, server: &str, tool: &str) -> Option<String> {
        self.servers().get(server)?.withheld(tool)
    }

    /// Every server's state, for `/status`.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.servers()
            .values()
            .map(|s| {
                let st = s.lock();
                UpstreamStatus {
                    name: s.name().to_string(),
                    state: match (&st.conn, &st.down) {
                        _ if st.idle => "idle",
                        (Some(_), _) => "up",
                        (None, Some(_)) => "down",
                        (None, None) => "starting",
                    },
                    error: st.down.clone(),
                    tools: st.tools.as_ref().map_or(0, Vec::len),
                    restarts: st.restarts,
                    pin: s.loaded.manifest.server.pin,
                    pin_mismatches: st.mismatches.clone(),
                }
            })
            .collect()
    }

    /// Stops every server and kills their process groups.
    pub fn shutdown(&self) {
        for s in self.servers().values() {
            s.stop.cancel();
            kill_group(s.lock().pgid);
        }
    }

    /// This manager as the executor's [`Upstreams`].
    pub fn as_upstreams(&self) -> Arc<dyn Upstreams> {
        Arc::new(Forwarder(self.me.clone()))
    }
}

impl Drop for UpstreamManager {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn futures_all(receivers: Vec<oneshot::Receiver<()>>) {
    for r in receivers {
        let _ = r.await;
    }
}

/// The executor's handle on the manager (weak: the gateway owns it).
struct Forwarder(Weak<UpstreamManager>);

impl Upstreams for Forwarder {
    fn call<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        ctx: &'a ToolContext,
        args: Value,
    ) -> ToolFuture<'a> {
        Box::pin(async move {
            let unavailable =
                |why: &str| ToolError::new(format!("upstream {server} is unavailable: {why}"));
            let manager = self
                .0
                .upgrade()
                .ok_or_else(|| unavailable("shutting down"))?;
            let s = manager
                .servers()
                .get(server)
                .cloned()
                .ok_or_else(|| unavailable("it is not configured"))?;
            // A lazy server starts on its first call.
            if let Some(rx) = manager.wake(&s) {
                drop(manager);
                let _ = tokio::time::timeout(START_TIMEOUT, rx).await;
            } else {
                drop(manager);
            }
            if let Some(reason) = s.withheld(tool) {
                return Err(ToolError::new(reason));
            }
            let conn = {
                let st = s.lock();
                match (&st.conn, &st.down) {
                    (Some(c), _) => Ok(c.clone()),
                    (None, Some(why)) => Err(unavailable(why)),
                    (None, None) => Err(unavailable("it is starting")),
                }
            };
            let (peer, handler) = conn?;
            call::call(server, peer, handler, tool, ctx, args).await
        })
    }
}

/// The tools of a lazy server that can wait for its first use: those of its
/// lock file. `None` (start it now, in the background) for an eager server,
/// or one without a readable lock (its tools must be listed to be known).
fn lazy_tools(loaded: &LoadedServer) -> Option<Vec<UpstreamTool>> {
    let table = &loaded.manifest.server;
    if table.start != crate::config::server::StartMode::Lazy || table.pin == PinMode::Off {
        return None;
    }
    let lock = Lock::read(&loaded.lock_path()?).ok()??;
    Some(lock.tools())
}

/// Keeps one server running: start, list, pin check; on exit, restart with
/// backoff; on stop, kill its process group.
async fn supervise(
    server: Arc<Server>,
    workspace: PathBuf,
    (changed, events, asker): (
        Arc<watch::Sender<u64>>,
        broadcast::Sender<UpstreamEvent>,
        connect::AskSlot,
    ),
    mut ready: Option<oneshot::Sender<()>>,
) {
    let name = server.name().to_string();
    let table = server.loaded.manifest.server.clone();
    let mut backoff = FIRST_BACKOFF;
    loop {
        let started = tokio::time::timeout(START_TIMEOUT, async {
            let handler = Handler::with_events(&name, events.clone(), asker.clone());
            let conn = connect::connect_with(&table, &workspace, handler).await?;
            let tools = match list_tools(&conn.peer()).await {
                Ok(t) => t,
                Err(e) => {
                    kill_group(conn.pgid);
                    return Err(e);
                }
            };
            Ok((conn, tools))
        });
        let outcome = tokio::select! {
            _ = server.stop.cancelled() => return,
            r = started => r.unwrap_or_else(|_| Err(format!("no answer within {}s", START_TIMEOUT.as_secs()))),
        };
        match outcome {
            Ok((mut conn, tools)) => {
                backoff = FIRST_BACKOFF;
                tracing::info!(server = %name, tools = tools.len(), "upstream server ready");
                server.apply_listing(tools);
                {
                    let mut st = server.lock();
                    st.conn = Some((conn.peer(), conn.handler.clone()));
                    st.pgid = conn.pgid;
                    st.down = None;
                }
                changed.send_modify(|n| *n += 1);
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
                let tools_changed = conn.handler.tools_changed.clone();
                let why = loop {
                    tokio::select! {
                        _ = server.stop.cancelled() => {
                            kill_group(conn.pgid);
                            return;
                        }
                        why = conn.ended() => break why,
                        _ = tools_changed.notified() => {
                            match list_tools(&conn.peer()).await {
                                Ok(tools) => {
                                    tracing::info!(server = %name, "upstream tools changed: listed again");
                                    server.apply_listing(tools);
                                    changed.send_modify(|n| *n += 1);
                                }
                                Err(e) => tracing::warn!(server = %name, error = %e, "re-listing failed"),
                            }
                        }
                    }
                };
                kill_group(conn.pgid);
                tracing::error!(server = %name, "{why}; restarting in {:?}", backoff);
                let mut st = server.lock();
                st.conn = None;
                st.pgid = None;
                st.down = Some(why);
                st.restarts += 1;
            }
            Err(e) => {
                tracing::error!(server = %name, error = %e, "upstream server did not start; retrying in {:?}", backoff);
                server.lock().down = Some(e);
                if let Some(r) = ready.take() {
                    let _ = r.send(());
                }
            }
        }
        tokio::select! {
            _ = server.stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// What `toolgate pin NAME` did.
#[derive(Debug)]
pub struct Pinned {
    /// The lock file written.
    pub lock: PathBuf,
    /// A unified diff of the old lock and the new one (empty when nothing
    /// changed).
    pub diff: String,
    /// How many tools are pinned now.
    pub tools: usize,
}

/// Starts the server `name` declares (among `servers`), lists its tools and
/// writes its lock file to accept them as they are now, returning the diff
/// against what was pinned. The server is stopped afterwards.
pub async fn pin_server(
    servers: &[LoadedServer],
    name: &str,
    workspace: &Path,
) -> Result<Pinned, String> {
    let Some(server) = servers.iter().find(|s| s.name() == name) else {
        let known: Vec<&str> = servers.iter().map(LoadedServer::name).collect();
        return Err(if known.is_empty() {
            format!("no server manifest declares `{name}` (no `[server]` manifests found)")
        } else {
            format!(
                "no server manifest declares `{name}`; servers: {}",
                known.join(", ")
            )
        });
    };
    let lock_path = server
        .lock_path()
        .ok_or_else(|| format!("server `{name}` has no manifest file to put a lock beside"))?;
    let table = &server.manifest.server;
    let listed = tokio::time::timeout(START_TIMEOUT, async {
        let conn = connect::connect(table, workspace).await?;
        let tools = list_tools(&conn.peer()).await;
        kill_group(conn.pgid);
        tools
    })
    .await
    .map_err(|_| {
        format!(
            "server `{name}` did not list its tools within {}s",
            START_TIMEOUT.as_secs()
        )
    })?
    .map_err(|e| format!("server `{name}`: {e}"))?;
    let old = Lock::read(&lock_path)?
        .map(|l| l.to_text())
        .unwrap_or_default();
    let lock = Lock::of(name, &listed);
    let new = lock.to_text();
    lock.write(&lock_path)?;
    Ok(Pinned {
        lock: lock_path,
        diff: if old == new {
            String::new()
        } else {
            pin::diff(&old, &new)
        },
        tools: listed.len(),
    })
}
