//! The shared executor: Pi's tool pipeline, wrapped by the policy.
//!
//! Every front-end (the CLI's `call`, the MCP server, benches) hands calls to
//! one [`Executor`]. For each call it runs Pi 1.6's steps — resolve among the
//! active tools, [`prepare`], [`coerce`] and validate, the policy's
//! before-hook, execute with cancellation and progress, the after-hook — and
//! turns every failure into an error result linked to its call. Batches run
//! in parallel (or sequentially when the batch or a tool asks) with Pi's
//! event order; see [`batch`](self) for the scheduling rules.
//!
//! The policy can be replaced at any time ([`Executor::set_policy`]); a batch
//! keeps the [`Snapshot`] it started with, so a reload never changes the
//! rules under a running call.

mod after;
mod batch;
mod coerce;
mod events;
mod passthrough;
mod pipeline;
mod prepare;
mod validate;

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::policy::tools::ToolInfo;
use crate::policy::{Policy, ToolCall, Verdict, Workspace};
use crate::tools::upstream::Upstreams;
use crate::tools::{self, MutationQueues, Sandbox, Tool};

pub use after::redact_value;
pub use passthrough::redact_passthrough;

/// The part of the policy's limits a running tool enforces itself.
pub fn run_limits(limits: &crate::policy::Limits) -> tools::RunLimits {
    tools::RunLimits {
        timeout: limits.timeout,
        max_output_bytes: limits.max_output_bytes,
        max_output_lines: limits.max_output_lines,
    }
}

/// A context for running one tool outside a batch (tests, benches): the
/// workspace plus the policy's roots, its limits and deny globs, a fresh
/// cancellation token, no progress, its own mutation queues.
pub fn standalone_context(
    workspace: &std::path::Path,
    policy: &Policy,
) -> io::Result<tools::ToolContext> {
    let workspace = Workspace::new(workspace)?;
    let roots: Vec<_> = policy
        .paths
        .resolved_roots(&workspace)
        .into_iter()
        .flatten()
        .collect();
    let confine = policy.sandbox_plan(&workspace).map(Arc::new);
    Ok(tools::ToolContext {
        call_id: String::new(),
        sandbox: Arc::new(Sandbox::new(workspace, &roots)?),
        deny: policy.paths.deny.clone(),
        limits: run_limits(&policy.limits),
        cancel: CancellationToken::new(),
        progress: tools::Progress::none(),
        mutations: Arc::new(MutationQueues::default()),
        confine,
    })
}
pub use coerce::coerce;
pub use events::{Event, EventKind, EventSink, ToolResult};
pub use prepare::prepare;
pub use validate::{
    check_call_arguments, failure_message, failure_message_within, ArgumentSchema, ArgumentsRefused,
};

/// Puts an `ask` decision to a person. Front-ends that can ask (MCP
/// elicitation) provide one; without it, `ask` blocks the call with a reason
/// that says approval is required.
pub trait Approver: Send + Sync {
    /// Resolves to true when the call may run.
    fn approve<'a>(
        &'a self,
        call: &'a ToolCall,
        verdict: &'a Verdict,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>>;
}

/// How one batch runs.
#[derive(Clone, Default)]
pub struct BatchOptions {
    /// Where events go; none when nobody watches. Only the kinds the sink
    /// takes are built.
    pub events: Option<EventSink>,
    /// Cancels the whole batch. Cancelled calls still get their events and an
    /// `Operation aborted` result (or the tool's own abort error).
    pub cancel: CancellationToken,
    /// Who answers `ask`.
    pub approver: Option<Arc<dyn Approver>>,
    /// Run one call at a time even when every tool is parallel.
    pub sequential: bool,
    /// The model's message was cut off by its output token limit: its calls'
    /// arguments may be truncated, so none of them runs.
    pub stopped_for_length: bool,
    /// Who is calling: its profile's tools are the active ones, and rules
    /// scoped to it (`rules[].identities`) apply. `None`: the active set.
    pub identity: Option<crate::policy::auth::Identity>,
}

/// What a batch produced.
#[derive(Clone, Debug)]
pub struct BatchOutcome {
    /// One result per call, in source order.
    pub results: Vec<ToolResult>,
    /// True when the batch is non-empty and every result asks to terminate.
    pub terminate: bool,
}

/// One tool as a snapshot runs it: manifest, implementation, and its
/// argument schema (compiled on first use, so start-up stays fast).
struct RunnableTool {
    info: ToolInfo,
    implementation: Arc<dyn Tool>,
    schema: OnceLock<Result<ArgumentSchema, String>>,
    /// In the policy's active set (callers without a profile), as
    /// `ToolSet::active_tool_for(None, …)` says; read once per snapshot.
    active: bool,
}

impl RunnableTool {
    fn schema(&self) -> &Result<ArgumentSchema, String> {
        self.schema
            .get_or_init(|| ArgumentSchema::compile(self.info.schema()))
    }
}

/// A compiled policy with everything derived from it: the runnable tools and
/// the sandbox of its roots. Immutable; a batch holds one for its lifetime.
pub struct Snapshot {
    /// The policy every decision of the batch is made by.
    pub policy: Arc<Policy>,
    tools: HashMap<String, RunnableTool>,
    workspace: Workspace,
    /// The roots opened as capability directories, or why they could not
    /// be (then every call gets that as its error result).
    sandbox: Result<Arc<Sandbox>, Arc<io::Error>>,
    /// One permit per call that may execute at once
    /// (`limits.max_concurrent_calls`). Per snapshot: after a reload, calls
    /// still running under the old policy are not counted against the new
    /// one's limit.
    permits: Arc<Semaphore>,
    /// The policy's confinement for commands in this workspace.
    confine: Option<Arc<crate::confine::Plan>>,
}

impl Snapshot {
    fn build(
        policy: Arc<Policy>,
        workspace: &Workspace,
        overrides: &HashMap<String, Arc<dyn Tool>>,
        upstreams: Option<&Arc<dyn Upstreams>>,
    ) -> Snapshot {
        let roots: Vec<_> = policy
            .paths
            .resolved_roots(workspace)
            .into_iter()
            .flatten()
            .collect();
        let sandbox = Sandbox::new(workspace.clone(), &roots)
            .map(Arc::new)
            .map_err(Arc::new);
        let policy_confine = policy.sandbox_plan(workspace).map(Arc::new);
        let mut runnable = HashMap::new();
        for info in policy.tools.tools.values() {
            let implementation = overrides
                .get(info.name())
                .cloned()
                .or_else(|| tools::from_manifest_with(&info.manifest, upstreams));
            if let Some(implementation) = implementation {
                runnable.insert(
                    info.name().to_string(),
                    RunnableTool {
                        info: info.clone(),
                        implementation,
                        schema: OnceLock::new(),
                        active: policy.tools.active_tool_for(None, info.name()).is_ok(),
                    },
                );
            }
        }
        let permits = Arc::new(Semaphore::new(
            (policy.limits.max_concurrent_calls as usize).clamp(1, Semaphore::MAX_PERMITS),
        ));
        Snapshot {
            policy,
            tools: runnable,
            workspace: workspace.clone(),
            sandbox,
            permits,
            confine: policy_confine,
        }
    }

    /// An active tool (for a caller with `profile`) the snapshot can run.
    fn active(
        &self,
        name: &str,
        profile: Option<&str>,
    ) -> Result<&RunnableTool, crate::policy::ToolNotFound> {
        let not_found = || crate::policy::ToolNotFound(name.to_string());
        if profile.is_none() {
            // The answer for the active set was read when the snapshot was
            // built (the policy never changes under a snapshot).
            return self
                .tools
                .get(name)
                .filter(|t| t.active)
                .ok_or_else(not_found);
        }
        self.policy.tools.active_tool_for(profile, name)?;
        self.tools.get(name).ok_or_else(not_found)
    }

    /// The workspace calls run in.
    fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Where tools open files, or why it could not be opened (the error
    /// result every call gets then).
    fn sandbox(&self) -> Result<&Arc<Sandbox>, String> {
        self.sandbox.as_ref().map_err(|e| {
            format!("The workspace's roots cannot be opened ({e}), so no tool can run.")
        })
    }
}

/// Runs tool calls through the policy; shared by every front-end.
pub struct Executor {
    workspace: Workspace,
    current: ArcSwap<Snapshot>,
    overrides: HashMap<String, Arc<dyn Tool>>,
    upstreams: Option<Arc<dyn Upstreams>>,
    mutations: Arc<MutationQueues>,
}

impl Executor {
    /// An executor for `workspace` under `policy`. When the policy's roots
    /// cannot be opened, every call gets an error result saying so (use
    /// [`Executor::try_new`] to learn it up front).
    pub fn new(policy: impl Into<Arc<Policy>>, workspace: Workspace) -> Executor {
        let overrides = HashMap::new();
        let snapshot = Snapshot::build(policy.into(), &workspace, &overrides, None);
        Executor {
            workspace,
            current: ArcSwap::from_pointee(snapshot),
            overrides,
            upstreams: None,
            mutations: Arc::new(MutationQueues::default()),
        }
    }

    /// Like [`Executor::new`], but fails when the policy's roots cannot be
    /// opened.
    pub fn try_new(policy: impl Into<Arc<Policy>>, workspace: Workspace) -> io::Result<Executor> {
        Executor::with_tools(policy.into(), workspace, HashMap::new())
    }

    /// Like [`Executor::new`], with some tools' implementations replaced by
    /// name (tests and benches use this to run tools with known timing; the
    /// manifest still decides schema, activity and policy).
    pub fn with_tools(
        policy: Arc<Policy>,
        workspace: Workspace,
        overrides: HashMap<String, Arc<dyn Tool>>,
    ) -> io::Result<Executor> {
        let snapshot = Snapshot::build(policy, &workspace, &overrides, None);
        if let Err(e) = &snapshot.sandbox {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        Ok(Executor {
            workspace,
            current: ArcSwap::from_pointee(snapshot),
            overrides,
            upstreams: None,
            mutations: Arc::new(MutationQueues::default()),
        })
    }

    /// Replaces the policy for batches that start from now on; running
    /// batches finish on the snapshot they started with.
    pub fn set_policy(&self, policy: Arc<Policy>) -> io::Result<()> {
        let snapshot = Snapshot::build(
            policy,
            &self.workspace,
            &self.overrides,
            self.upstreams.as_ref(),
        );
        if let Err(e) = &snapshot.sandbox {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        self.current.store(Arc::new(snapshot));
        Ok(())
    }

    /// Forwards upstream servers' tools (`[server]` manifests) through
    /// `upstreams`, from the current policy on.
    pub fn with_upstreams(mut self, upstreams: Arc<dyn Upstreams>) -> Executor {
        self.upstreams = Some(upstreams);
        let snapshot = Snapshot::build(
            self.snapshot().policy.clone(),
            &self.workspace,
            &self.overrides,
            self.upstreams.as_ref(),
        );
        self.current.store(Arc::new(snapshot));
        self
    }

    /// The snapshot new batches use.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// The workspace calls run in.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// What the policy says of `call` as this executor would run it, before
    /// anyone is asked: the active tool resolved, the arguments prepared,
    /// coerced, validated and within the limits, then the before-rules.
    /// `Ok` holds the call as it would run and the verdict (an `ask` not yet
    /// put to anyone); `Err` the error result the call gets instead.
    pub fn preflight(&self, call: &ToolCall) -> Result<(ToolCall, Verdict), Box<ToolResult>> {
        self.preflight_as(call, None)
    }

    /// [`Executor::preflight`] for a call made by `identity` (its profile's
    /// tools, the rules scoped to it).
    pub fn preflight_as(
        &self,
        call: &ToolCall,
        identity: Option<&crate::policy::auth::Identity>,
    ) -> Result<(ToolCall, Verdict), Box<ToolResult>> {
        let snapshot = self.snapshot();
        pipeline::check(&snapshot, call, identity).map(|c| (c.call, c.verdict))
    }

    /// The after-hook alone, for a host that ran the tool itself: `result`
    /// (the host's output, as a [`ToolResult`]) gets exactly what a call run
    /// here gets from `snapshot`'s policy — secrets redacted from content
    /// and details, the `terminate.tools` rule, then the first matching
    /// result rule. `args` are the call's arguments.
    pub fn finalize_hosted(
        &self,
        snapshot: &Snapshot,
        args: &serde_json::Value,
        result: &mut ToolResult,
    ) {
        after::finalize(&snapshot.policy, snapshot.workspace.root(), args, result);
    }

    /// Runs one call on its own (a batch of one) and returns its result.
    pub async fn run(&self, call: ToolCall) -> ToolResult {
        let (id, name) = (call.id.clone(), call.name.clone());
        let mut outcome = self.run_batch(vec![call], BatchOptions::default()).await;
        // A batch has one result per call; the fallback is never reached.
        outcome.results.pop().unwrap_or_else(|| {
            ToolResult::error(&id, &name, "The call produced no result".to_string())
        })
    }

    /// Runs one batch of calls (one assistant message's tool calls).
    pub async fn run_batch(&self, calls: Vec<ToolCall>, options: BatchOptions) -> BatchOutcome {
        self.run_batch_on(self.snapshot(), calls, options).await
    }

    /// Runs a batch on a snapshot the caller already holds (so it can log
    /// and redact with the very policy that decided).
    pub async fn run_batch_on(
        &self,
        snapshot: Arc<Snapshot>,
        calls: Vec<ToolCall>,
        options: BatchOptions,
    ) -> BatchOutcome {
        let run = batch::BatchRun {
            snapshot,
            mutations: self.mutations.clone(),
            options,
        };
        run.run(calls).await
    }

    /// Runs a single call: a batch of one.
    pub async fn run_call(&self, call: ToolCall, options: BatchOptions) -> ToolResult {
        let mut outcome = self.run_batch(vec![call], options).await;
        outcome.results.remove(0)
    }
}

#[cfg(test)]
mod fast_path_tests;
#[cfg(test)]
mod limit_tests;
#[cfg(test)]
mod tests;
