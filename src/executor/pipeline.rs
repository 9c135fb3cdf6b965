//! The steps of one call: preflight (resolve, prepare, coerce and validate,
//! before-hook), execute, finalize (after-hook).
//!
//! Preflight either yields a call ready to run or an *immediate* result
//! (unknown tool, invalid arguments, blocked, aborted) that skips execution
//! and the after-hook, as in Pi.

use std::any::Any;
use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use serde_json::Value;

use super::after;
use super::events::{empty_details, Event, EventKind, ToolResult};
use super::validate::{ArgumentCheck, ArgumentsRefused};
use super::{BatchOptions, RunnableTool, Snapshot};
use crate::policy::auth::Identity;
use crate::policy::{Decision, LimitExceeded, ToolCall, Verdict};
use crate::tools::{Content, MutationQueues, Progress, Tool, ToolContext};

/// Pi's text for a call cancelled before it ran.
pub const ABORTED: &str = "Operation aborted";

/// A call that passed preflight: its arguments as the tool gets them.
pub struct Prepared {
    pub call: ToolCall,
    pub verdict: Verdict,
    pub implementation: Arc<dyn Tool>,
}

/// What preflight decided.
pub enum Preflight {
    /// Finished without running: the result is final.
    Immediate(Box<ToolResult>),
    /// Ready to execute.
    Ready(Box<Prepared>),
}

/// What the policy says of a call as the executor will run it, before
/// anyone is asked: the call with its arguments prepared, coerced and
/// validated, and the before-hook's verdict.
pub struct Checked<'a> {
    /// The call as it will run.
    pub call: ToolCall,
    /// The policy's verdict (`ask` not yet put to anyone).
    pub verdict: Verdict,
    tool: &'a RunnableTool,
}

/// Steps 2-5 without the approver: resolve the active tool, prepare, coerce
/// and validate the arguments within the limits, then the policy's verdict.
/// `Err` is the immediate error result the call gets instead.
pub fn check<'a>(
    snapshot: &'a Snapshot,
    call: &ToolCall,
    identity: Option<&Identity>,
) -> Result<Checked<'a>, Box<ToolResult>> {
    check_with(snapshot, call, Cow::Borrowed(&call.arguments), identity)
}

/// [`check`] of `call` with the arguments `args` (preflight hands its own
/// over, so arguments that need no change are never copied; `call`'s are
/// not read).
fn check_with<'a>(
    snapshot: &'a Snapshot,
    call: &ToolCall,
    args: Cow<'_, Value>,
    identity: Option<&Identity>,
) -> Result<Checked<'a>, Box<ToolResult>> {
    let immediate = |message: String| {
        let mut r = ToolResult::error(&call.id, &call.name, message);
        r.policy_version = snapshot.policy.version.clone();
        Box::new(r)
    };
    let tool = snapshot
        .active(&call.name, identity.and_then(|i| i.profile.as_deref()))
        .map_err(|not_found| immediate(not_found.to_string()))?;
    let schema = tool.schema().as_ref().map_err(|e| {
        immediate(format!(
            "Tool {} has an argument schema that cannot be used: {e}",
            call.name
        ))
    })?;
    let arguments = ArgumentCheck {
        tool: &call.name,
        steps: &tool.info.manifest.prepare,
        schema_value: tool.info.schema(),
        schema,
        limits: &snapshot.policy.limits,
    };
    let args = match arguments.run(args, true) {
        Ok(args) => args,
        Err(ArgumentsRefused::OverLimit(over)) => {
            return Err(Box::new(limit_result(snapshot, call, &over)))
        }
        Err(ArgumentsRefused::Invalid(message)) => return Err(immediate(message)),
    };
    let checked = ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: args,
    };
    let ws = snapshot.workspace();
    let decided = std::panic::catch_unwind(AssertUnwindSafe(|| {
        snapshot.policy.evaluate_as(ws, &checked, identity)
    }));
    // A panic while deciding blocks the call (fail closed).
    let verdict = decided.unwrap_or_else(|_| {
        Verdict::deny(
            None,
            "The policy failed while deciding this call, so it was blocked. \
             Report this as a toolgate bug.",
        )
    });
    Ok(Checked {
        call: checked,
        verdict,
        tool,
    })
}

/// Steps 2-5 for one call: [`check`], then `ask` put to the approver.
/// `args` are the call's arguments, handed over (`call`'s are not read).
pub async fn preflight(
    snapshot: &Snapshot,
    call: &ToolCall,
    args: Value,
    options: &BatchOptions,
) -> Preflight {
    let immediate = |message: String| {
        let mut r = ToolResult::error(&call.id, &call.name, message);
        r.policy_version = snapshot.policy.version.clone();
        Preflight::Immediate(Box::new(r))
    };
    if options.cancel.is_cancelled() {
        return immediate(ABORTED.to_string());
    }
    if let Err(e) = snapshot.sandbox() {
        return immediate(e);
    }
    let Checked {
        call: checked,
        verdict,
        tool,
    } = match check_with(snapshot, call, Cow::Owned(args), options.identity.as_ref()) {
        Ok(c) => c,
        Err(result) => return Preflight::Immediate(result),
    };
    let verdict = approve(&checked, verdict, options).await;
    if options.cancel.is_cancelled() {
        return immediate(ABORTED.to_string());
    }
    if verdict.decision != Decision::Allow {
        let reason = if verdict.reason.is_empty() {
            "Tool execution was blocked".to_string()
        } else {
            verdict.reason.clone()
        };
        let mut r = ToolResult::error(&call.id, &call.name, reason);
        r.terminate = verdict.terminate;
        r.policy_version = snapshot.policy.version.clone();
        r.verdict = Some(verdict);
        return Preflight::Immediate(Box::new(r));
    }
    Preflight::Ready(Box::new(Prepared {
        call: checked,
        verdict,
        implementation: tool.implementation.clone(),
    }))
}

/// An error result for `call` saying which limit it went over.
pub fn limit_result(snapshot: &Snapshot, call: &ToolCall, over: &LimitExceeded) -> ToolResult {
    let mut r = ToolResult::error(&call.id, &call.name, over.message());
    r.policy_version = snapshot.policy.version.clone();
    r.verdict = Some(Verdict {
        decision: Decision::Deny,
        reason: over.message(),
        rule: Some(over.rule().to_string()),
        terminate: false,
        audit: Vec::new(),
    });
    r
}

/// An `ask` verdict put to the approver: allowed when approved, denied
/// when declined, and left `ask` (so blocked) with a reason saying approval
/// is required when no one can be asked.
async fn approve(call: &ToolCall, mut verdict: Verdict, options: &BatchOptions) -> Verdict {
    if verdict.decision == Decision::Ask {
        match &options.approver {
            Some(approver) => {
                if approver.approve(call, &verdict).await {
                    verdict.decision = Decision::Allow;
                } else {
                    verdict.decision = Decision::Deny;
                    verdict.reason = format!("The user declined this call. ({})", verdict.reason);
                }
            }
            None => {
                verdict.reason = format!(
                    "Approval required: {} No one can approve it here, so the call was not run.",
                    verdict.reason
                );
            }
        }
    }
    verdict
}

/// Steps 6-7: execute with progress and cancellation, then the after-hook.
/// Panics in a tool become error results.
pub async fn execute(
    snapshot: &Arc<Snapshot>,
    mutations: &Arc<MutationQueues>,
    prepared: Prepared,
    options: &BatchOptions,
) -> ToolResult {
    let Prepared {
        mut call,
        verdict,
        implementation,
    } = prepared;
    // The result rules read the call's arguments after the tool ran; when
    // the policy has none, the tool takes them and nothing is copied.
    let args = if snapshot.policy.results.is_empty() {
        std::mem::take(&mut call.arguments)
    } else {
        call.arguments.clone()
    };
    let accepting = Arc::new(AtomicBool::new(true));
    let progress = {
        let accepting = accepting.clone();
        let snapshot = snapshot.clone();
        let events = options
            .events
            .clone()
            .filter(|events| events.wants(EventKind::Update));
        let (id, name) = (call.id.clone(), call.name.clone());
        Progress::new(move |partial| {
            if !accepting.load(Ordering::Acquire) {
                return;
            }
            if let Some(events) = &events {
                let partial = after::redact_update(&snapshot.policy, partial);
                events.emit(&Event::ToolExecutionUpdate {
                    id: id.clone(),
                    name: name.clone(),
                    partial,
                });
            }
        })
    };
    let sandbox = match snapshot.sandbox() {
        Ok(sandbox) => sandbox.clone(),
        Err(e) => {
            let mut r = ToolResult::error(&call.id, &call.name, e);
            r.policy_version = snapshot.policy.version.clone();
            return r;
        }
    };
    let ctx = ToolContext {
        call_id: call.id.clone(),
        sandbox,
        deny: snapshot.policy.paths.deny.clone(),
        limits: super::run_limits(&snapshot.policy.limits),
        cancel: options.cancel.child_token(),
        progress,
        mutations: mutations.clone(),
        confine: snapshot.confine.clone(),
    };
    // At most `limits.max_concurrent_calls` tools run at once; the rest wait
    // here, and a call cancelled while it waits never runs.
    let permit = tokio::select! {
        biased;
        _ = options.cancel.cancelled() => None,
        permit = snapshot.permits.clone().acquire_owned() => permit.ok(),
    };
    let Some(_permit) = permit else {
        let mut r = ToolResult::error(&call.id, &call.name, ABORTED);
        r.policy_version = snapshot.policy.version.clone();
        r.verdict = Some(verdict);
        return r;
    };
    let started = Instant::now();
    // A panicking tool is an error result, not a crash.
    let outcome = CatchUnwind(implementation.execute(&ctx, args)).await;
    let duration = started.elapsed();
    accepting.store(false, Ordering::Release);

    let or_empty = |details: Value| {
        if details.is_null() {
            empty_details()
        } else {
            details
        }
    };
    let (content, details, is_error) = match outcome {
        Ok(Ok(output)) => (output.content, or_empty(output.details), false),
        Ok(Err(error)) => (
            vec![Content::text(error.message)],
            or_empty(error.details),
            true,
        ),
        Err(_panic) => (
            vec![Content::text(format!(
                "Tool {} crashed while running; its result is unknown.",
                call.name
            ))],
            empty_details(),
            true,
        ),
    };
    // The call's id and name move into its result.
    let mut result = ToolResult {
        id: call.id,
        name: call.name,
        content,
        details,
        is_error,
        terminate: verdict.terminate,
        verdict: Some(verdict),
        policy_version: snapshot.policy.version.clone(),
        duration: Some(duration),
        result_rule: None,
    };
    // `call.arguments` is left empty above only when no result rule reads it.
    after::finalize(
        &snapshot.policy,
        snapshot.workspace.root(),
        &call.arguments,
        &mut result,
    );
    result
}

/// Polls a future (a tool's, or one call's whole execution), turning a
/// panic into `Err` (the tool's own task is not spawned separately: a
/// second task per call would cost a thread hand-off for every call of a
/// batch).
pub struct CatchUnwind<F>(pub F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(&mut *future).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// Pi's text for calls of a message cut off by the output token limit.
pub fn stopped_for_length(name: &str) -> String {
    format!(
        "Tool call \"{name}\" was not executed: the response hit the output token limit, \
         so its arguments may be truncated. Re-issue the tool call with complete arguments."
    )
}
