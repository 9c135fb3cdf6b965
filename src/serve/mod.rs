//! The long-running gateway: what `toolgate serve` runs.
//!
//! A [`Gateway`] owns the [`Executor`] and everything an operator needs
//! around it: reloading the policy without a restart (keeping the last good
//! one when a new one is broken), the decision log, metrics and status. The
//! MCP front-ends ([`mcp`], over stdio and Streamable HTTP) and the HTTP
//! operations endpoints ([`admin`]) only translate their wire formats into
//! calls on it.

mod admin;
mod approve;
pub mod auth;
mod guard;
mod http;
mod log;
mod mcp;
mod mcp_updates;
mod metrics;
mod passthrough;
pub mod reload;
mod start;
mod stdio_in;
mod stdio_out;
mod upstream_ask;
mod upstream_rounds;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwapOption;
use serde::Serialize;
use tokio::sync::watch;

pub use http::HttpOptions;
pub use start::{run, ServeError, ServeOptions, Transport};

use crate::config::{ConfigPaths, Diagnostics};
use crate::executor::{BatchOptions, Executor, ToolResult};
use crate::policy::auth::Identity;
use crate::policy::tools::ToolInfo;
use crate::policy::{CompileOptions, Policy, ToolCall, Verdict, Workspace};
use crate::upstream::{UpstreamManager, UpstreamStatus};

/// Where the gateway's configuration comes from.
#[derive(Clone, Debug, Default)]
pub struct GatewayConfig {
    /// Policy and manifest locations (reloaded from the same places).
    pub paths: ConfigPaths,
    /// Profile and other compile options.
    pub options: CompileOptions,
    /// The workspace tools run in.
    pub workspace: PathBuf,
    /// The decision log's file; `None` logs to stderr.
    pub decision_log: Option<PathBuf>,
    /// Every policy must have `auth.required: true` (serving other hosts
    /// with `--allow-remote`): one without it does not start, and a reload
    /// that drops it is rejected.
    pub require_auth: bool,
}

/// What `/status` reports about the active policy and the last reload.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The active policy's version hash.
    pub version: String,
    /// When it was loaded (RFC 3339, UTC).
    pub loaded_at: String,
    /// The files it was compiled from.
    pub files: Vec<String>,
    /// The active tools, in `tools/list` order.
    pub active_tools: Vec<String>,
    /// Successful reloads since start.
    pub reloads_ok: u64,
    /// Failed reloads since start.
    pub reloads_failed: u64,
    /// Why the last reload failed (each error as `FILE:LINE:COL: message`),
    /// `None` when it succeeded. The policy above is still the active one.
    pub last_reload_error: Option<Vec<String>>,
    /// The upstream servers (`[server]` manifests): state and pin
    /// mismatches.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<UpstreamStatus>,
}

/// Loads and compiles the configuration; with upstream servers, makes the
/// running servers those the manifests declare and compiles with what they
/// listed.
fn load_with(
    config: &GatewayConfig,
    upstream: Option<&UpstreamManager>,
) -> Result<Policy, Diagnostics> {
    let loaded = crate::config::load(&config.paths)?;
    let mut options = config.options.clone();
    if let Some(m) = upstream {
        m.reconcile(&loaded.servers);
        options.upstream = Some(Arc::new(m.catalog()));
    }
    crate::compile(&loaded, &options)
}

/// What a reload did.
#[derive(Debug)]
pub enum ReloadOutcome {
    /// A new policy is active; `tools_changed` when the active set changed.
    Applied {
        /// The new version hash.
        version: String,
        /// Whether clients must be told the tool list changed.
        tools_changed: bool,
    },
    /// The files compiled to the version already active: nothing to do.
    Unchanged,
    /// The new files did not compile; the last good policy stays active.
    Rejected(Diagnostics),
}

/// The gateway: executor, reload, log, metrics, status.
pub struct Gateway {
    executor: Executor,
    config: GatewayConfig,
    status: Mutex<Status>,
    log: log::DecisionLog,
    /// Counters and histograms for `/metrics`.
    pub metrics: metrics::Metrics,
    tools_changed: watch::Sender<u64>,
    reloads: watch::Sender<u64>,
    upstream: Option<Arc<UpstreamManager>>,
    /// Checks HTTP callers under the active policy's `auth:`.
    auth: ArcSwapOption<auth::Authenticator>,
    /// MCP sessions upstream sampling and elicitation requests may go to.
    clients: Arc<upstream_ask::Clients>,
    /// Stateless upstream calls waiting for their client's answer.
    rounds: upstream_rounds::Rounds,
}

/// The checker for `policy`'s `auth:` (`None` without one), or why it
/// cannot be used (a JWKS key that does not decode, or `auth.required`
/// missing where the gateway requires it).
fn authenticator_for(
    policy: &Policy,
    config: &GatewayConfig,
) -> Result<Option<Arc<auth::Authenticator>>, String> {
    let required = policy.auth().is_some_and(|a| a.required);
    if config.require_auth && !required {
        return Err(
            "the policy must set `auth.required: true` to serve other hosts \
             (--allow-remote); add an `auth:` section with tokens or a JWT issuer"
                .to_string(),
        );
    }
    match policy.auth() {
        None => Ok(None),
        Some(a) => auth::Authenticator::new(a.clone())
            .map(|a| Some(Arc::new(a)))
            .map_err(|e| format!("auth: {e}")),
    }
}

impl Gateway {
    /// Loads the policy and opens the workspace. Fails (and nothing serves)
    /// when the policy does not compile.
    pub fn start(config: GatewayConfig) -> Result<Arc<Gateway>, String> {
        let policy = crate::load_policy(&config.paths, &config.options)
            .map_err(|d| format!("{}the policy did not load", d.to_human()))?;
        Gateway::with_policy(config, policy, None)
    }

    /// Like [`Gateway::start`], running the upstream servers the manifests
    /// declare: eager ones have listed their tools (or failed) before this
    /// returns. Must run inside a tokio runtime.
    pub async fn start_with_upstreams(config: GatewayConfig) -> Result<Arc<Gateway>, String> {
        let loaded = crate::config::load(&config.paths)
            .map_err(|d| format!("{}the policy did not load", d.to_human()))?;
        let manager = UpstreamManager::new(&config.workspace);
        manager.start(&loaded.servers).await;
        let mut options = config.options.clone();
        options.upstream = Some(Arc::new(manager.catalog()));
        let policy = crate::compile(&loaded, &options)
            .map_err(|d| format!("{}the policy did not load", d.to_human()))?;
        Gateway::with_policy(config, policy, Some(manager))
    }

    fn with_policy(
        config: GatewayConfig,
        policy: Policy,
        upstream: Option<Arc<UpstreamManager>>,
    ) -> Result<Arc<Gateway>, String> {
        let authenticator = authenticator_for(&policy, &config)?;
        let workspace = Workspace::new(&config.workspace)
            .map_err(|e| format!("workspace `{}`: {e}", config.workspace.display()))?;
        let log = log::DecisionLog::open(config.decision_log.as_deref())
            .map_err(|e| format!("decision log: {e}"))?;
        let status = Status {
            version: policy.version.clone(),
            loaded_at: log::now_rfc3339(),
            files: policy.files.clone(),
            active_tools: policy.tools.active.clone(),
            reloads_ok: 0,
            reloads_failed: 0,
            last_reload_error: None,
            upstreams: Vec::new(),
        };
        let mut executor = Executor::try_new(policy, workspace)
            .map_err(|e| format!("cannot open the workspace's roots: {e}"))?;
        if let Some(m) = &upstream {
            executor = executor.with_upstreams(m.as_upstreams());
        }
        let (tools_changed, _) = watch::channel(0);
        let (reloads, _) = watch::channel(0);
        let gateway = Arc::new(Gateway {
            executor,
            config,
            status: Mutex::new(status),
            log,
            metrics: metrics::Metrics::default(),
            tools_changed,
            reloads,
            upstream,
            auth: ArcSwapOption::new(authenticator),
            clients: Arc::default(),
            rounds: Default::default(),
        });
        if let Some(m) = &gateway.upstream {
            m.set_client_ask(upstream_ask::client_ask(
                Arc::downgrade(&gateway),
                gateway.clients.clone(),
            ));
        }
        Ok(gateway)
    }

    /// The upstream servers, when the gateway runs them.
    pub fn upstreams(&self) -> Option<&Arc<UpstreamManager>> {
        self.upstream.as_ref()
    }

    /// Tells clients the tool list changed (an upstream's tools or pins
    /// changed without a new policy version).
    pub fn notify_tools_changed(&self) {
        self.tools_changed.send_modify(|n| *n += 1);
    }

    /// The checker of HTTP callers, when the active policy has `auth:`.
    pub fn authenticator(&self) -> Option<Arc<auth::Authenticator>> {
        self.auth.load_full()
    }

    /// The executor (for front-ends that run batches themselves).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The active policy.
    pub fn policy(&self) -> Arc<Policy> {
        self.executor.snapshot().policy.clone()
    }

    /// The active tools in their fixed order, as `tools/list` shows them.
    /// Upstream tools withheld by their pin are left out.
    pub fn active_tools(&self) -> Vec<ToolInfo> {
        self.active_tools_for(None)
    }

    /// The tools `identity` sees, as `tools/list` shows them: its profile's,
    /// or the active set; upstream tools withheld by their pin left out.
    pub fn active_tools_for(&self, identity: Option<&Identity>) -> Vec<ToolInfo> {
        let profile = identity.and_then(|i| i.profile.as_deref());
        let policy = self.policy();
        let tools = policy.tools.active_tools_for(profile);
        match &self.upstream {
            None => tools.cloned().collect(),
            Some(m) => tools
                .filter(|info| match &info.manifest.implementation {
                    crate::config::manifest::Implementation::Upstream { server, tool } => {
                        m.withheld(server, tool).is_none()
                    }
                    _ => true,
                })
                .cloned()
                .collect(),
        }
    }

    /// Runs one call through the executor, then logs and counts it.
    pub async fn call(&self, call: ToolCall, options: BatchOptions) -> ToolResult {
        let started = Instant::now();
        let arguments = call.arguments.clone();
        let identity = options.identity.clone();
        // One snapshot for running, logging and redacting the log line.
        let snapshot = self.executor.snapshot();
        let mut outcome = self
            .executor
            .run_batch_on(snapshot.clone(), vec![call], options)
            .await;
        let result = outcome.results.remove(0);
        let elapsed = started.elapsed();
        let who = identity.as_ref();
        self.metrics
            .record_call(&result, elapsed, &metrics::identity_label(who));
        self.log
            .record(&snapshot.policy, &result, &arguments, elapsed, who);
        result
    }

    /// The before-hook's verdict alone, exactly what `toolgate eval` prints.
    pub fn eval(&self, call: &ToolCall) -> Verdict {
        self.eval_as(call, None)
    }

    /// [`Gateway::eval`] for a call made by `identity`.
    pub fn eval_as(&self, call: &ToolCall, identity: Option<&Identity>) -> Verdict {
        let verdict = self
            .policy()
            .evaluate_as(self.executor.workspace(), call, identity);
        self.metrics
            .record_eval(&call.name, &verdict, &metrics::identity_label(identity));
        verdict
    }

    /// Compiles the configuration again and swaps it in when it compiles;
    /// otherwise keeps the active policy and records why. Compiling happens
    /// on the caller's thread, never on a request path.
    pub fn reload(&self) -> ReloadOutcome {
        let outcome = match load_with(&self.config, self.upstream.as_deref()) {
            Err(diags) => {
                let mut status = self.lock_status();
                status.reloads_failed += 1;
                status.last_reload_error = Some(
                    diags
                        .0
                        .iter()
                        .map(|d| format!("{}:{}:{}: {}", d.file, d.line, d.col, d.message))
                        .collect(),
                );
                self.metrics.record_reload(false);
                ReloadOutcome::Rejected(diags)
            }
            Ok(policy) => {
                let old = self.policy();
                if policy.version == old.version {
                    let mut status = self.lock_status();
                    status.last_reload_error = None;
                    return ReloadOutcome::Unchanged;
                }
                let tools_changed = policy.tools.active != old.tools.active
                    || policy.tools.profiles != old.tools.profiles
                    || policy
                        .tools
                        .active_tools()
                        .zip(old.tools.active_tools())
                        .any(|(a, b)| {
                            a.schema() != b.schema()
                                || a.manifest.description != b.manifest.description
                        });
                let authenticator = match authenticator_for(&policy, &self.config) {
                    Ok(a) => a,
                    Err(e) => {
                        let mut status = self.lock_status();
                        status.reloads_failed += 1;
                        status.last_reload_error = Some(vec![e.clone()]);
                        self.metrics.record_reload(false);
                        tracing::warn!(error = %e, "reload rejected; the last good policy stays active");
                        return ReloadOutcome::Rejected(Diagnostics(Vec::new()));
                    }
                };
                let version = policy.version.clone();
                let files = policy.files.clone();
                let active = policy.tools.active.clone();
                // Held across the swap: whoever sees the new policy decide
                // and then asks for the status sees its version (the lock
                // waits for the update), never the one before.
                let mut status = self.lock_status();
                if let Err(e) = self.executor.set_policy(Arc::new(policy)) {
                    status.reloads_failed += 1;
                    status.last_reload_error =
                        Some(vec![format!("cannot open the new policy's roots: {e}")]);
                    self.metrics.record_reload(false);
                    return ReloadOutcome::Rejected(Diagnostics(Vec::new()));
                }
                self.auth.store(authenticator);
                status.version = version.clone();
                status.loaded_at = log::now_rfc3339();
                status.files = files;
                status.active_tools = active;
                status.reloads_ok += 1;
                status.last_reload_error = None;
                drop(status);
                self.metrics.record_reload(true);
                self.reloads.send_modify(|n| *n += 1);
                if tools_changed {
                    self.tools_changed.send_modify(|n| *n += 1);
                }
                ReloadOutcome::Applied {
                    version,
                    tools_changed,
                }
            }
        };
        outcome
    }

    /// Notified each time a reload changes the active tools (MCP front-ends
    /// send `notifications/tools/list_changed`).
    pub fn subscribe_tools_changed(&self) -> watch::Receiver<u64> {
        self.tools_changed.subscribe()
    }

    /// Notified after every reload that made a new policy active.
    pub fn subscribe_reloads(&self) -> watch::Receiver<u64> {
        self.reloads.subscribe()
    }

    /// The current status.
    pub fn status(&self) -> Status {
        let mut status = self.lock_status().clone();
        if let Some(m) = &self.upstream {
            status.upstreams = m.status();
        }
        status
    }

    /// The configuration the gateway reloads from.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    fn lock_status(&self) -> std::sync::MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Seconds since the Unix epoch, for log timestamps.
pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
