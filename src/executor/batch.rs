//! Scheduling a batch, with Pi 1.6's event order.
//!
//! - **Sequential** (asked for by the batch, or by any called tool's
//!   manifest): start, end, result for call 1; then call 2; …
//! - **Parallel** (default): preflight runs in source order and immediate
//!   outcomes end during preflight; the allowed calls then start together;
//!   end events come in completion order; result events come in source order
//!   once all are done.
//! - **Stopped for length**, or more calls than `limits.max_batch_calls`:
//!   every call fails without running.
//! - **Termination**: the batch terminates only when it is non-empty and every
//!   result asks to.

use std::sync::Arc;

use tokio::task::JoinSet;

use super::events::{Event, EventKind, ToolResult};
use super::pipeline::{self, Preflight, ABORTED};
use super::{BatchOptions, BatchOutcome, EventSink, Snapshot};
use crate::config::manifest::ExecutionMode;
use crate::policy::limits::check_batch;
use crate::policy::ToolCall;
use crate::tools::MutationQueues;

/// One batch on one snapshot.
pub struct BatchRun {
    pub snapshot: Arc<Snapshot>,
    pub mutations: Arc<MutationQueues>,
    pub options: BatchOptions,
}

impl BatchRun {
    /// The sink, when it takes events of `kind` (the event is built only
    /// then).
    fn sink(&self, kind: EventKind) -> Option<&EventSink> {
        wanted(&self.options, kind)
    }

    fn start(&self, call: &ToolCall) {
        if let Some(events) = self.sink(EventKind::Start) {
            events.emit(&Event::ToolExecutionStart {
                id: call.id.clone(),
                name: call.name.clone(),
                args: call.arguments.clone(),
            });
        }
    }

    fn result(&self, result: &ToolResult) {
        if let Some(events) = self.sink(EventKind::Result) {
            events.emit(&Event::ToolResult {
                result: result.clone(),
            });
        }
    }

    fn end(&self, result: &ToolResult) {
        emit_end(&self.options, result);
    }

    /// Runs every call; one result per call, in source order.
    pub async fn run(self, calls: Vec<ToolCall>) -> BatchOutcome {
        let limit = check_batch(&self.snapshot.policy.limits, calls.len());
        let results = if self.options.stopped_for_length {
            self.fail_all(&calls, |call| {
                let mut r = ToolResult::error(
                    &call.id,
                    &call.name,
                    pipeline::stopped_for_length(&call.name),
                );
                r.policy_version = self.snapshot.policy.version.clone();
                r
            })
        } else if let Err(over) = limit {
            // Over the batch limit, no call runs: running the first N would
            // leave the model guessing which of its calls took effect.
            self.fail_all(&calls, |call| {
                pipeline::limit_result(&self.snapshot, call, &over)
            })
        } else if self.is_sequential(&calls) {
            self.run_sequential(calls).await
        } else {
            let results = match <[ToolCall; 1]>::try_from(calls) {
                Ok([call]) => vec![self.run_one(call).await],
                Err(calls) => self.run_parallel(calls).await,
            };
            for r in &results {
                self.result(r);
            }
            results
        };
        let terminate = !results.is_empty() && results.iter().all(|r| r.terminate);
        BatchOutcome { results, terminate }
    }

    fn is_sequential(&self, calls: &[ToolCall]) -> bool {
        self.options.sequential
            || calls.iter().any(|c| {
                self.snapshot
                    .policy
                    .tools
                    .get(&c.name)
                    .is_some_and(|t| t.manifest.execution_mode == ExecutionMode::Sequential)
            })
    }

    /// Every call fails without running, with the result `fail` makes.
    fn fail_all(
        &self,
        calls: &[ToolCall],
        fail: impl Fn(&ToolCall) -> ToolResult,
    ) -> Vec<ToolResult> {
        calls
            .iter()
            .map(|call| {
                self.start(call);
                let r = fail(call);
                self.end(&r);
                self.result(&r);
                r
            })
            .collect()
    }

    async fn run_sequential(&self, calls: Vec<ToolCall>) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(calls.len());
        for mut call in calls {
            self.start(&call);
            // Handed over: preflight copies arguments only to change them.
            let args = std::mem::take(&mut call.arguments);
            let result = match pipeline::preflight(&self.snapshot, &call, args, &self.options).await
            {
                Preflight::Immediate(r) => *r,
                Preflight::Ready(p) => {
                    pipeline::execute(&self.snapshot, &self.mutations, *p, &self.options).await
                }
            };
            self.end(&result);
            self.result(&result);
            results.push(result);
        }
        results
    }

    /// A parallel batch of one call: [`BatchRun::run_parallel`]'s steps
    /// and events, without its slots and join set.
    async fn run_one(&self, mut call: ToolCall) -> ToolResult {
        self.start(&call);
        let args = std::mem::take(&mut call.arguments);
        let result = match pipeline::preflight(&self.snapshot, &call, args, &self.options).await {
            Preflight::Immediate(r) => {
                self.end(&r);
                Some(*r)
            }
            Preflight::Ready(prepared) => {
                let run = Box::pin(execute_deferred(
                    &self.snapshot,
                    &self.mutations,
                    prepared,
                    &self.options,
                ));
                pipeline::CatchUnwind(run).await.ok()
            }
        };
        result.unwrap_or_else(|| self.lost(&call))
    }

    /// The result of a call whose execution failed outside the tool (the
    /// tool's own panics are caught in `execute`), with its end event.
    fn lost(&self, call: &ToolCall) -> ToolResult {
        let r = ToolResult::error(
            &call.id,
            &call.name,
            format!(
                "Tool {} failed inside toolgate; its result is unknown.",
                call.name
            ),
        );
        emit_end(&self.options, &r);
        r
    }

    async fn run_parallel(&self, mut calls: Vec<ToolCall>) -> Vec<ToolResult> {
        let mut slots: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
        let mut ready = Vec::new();
        for (index, call) in calls.iter_mut().enumerate() {
            self.start(call);
            // Handed over: preflight copies arguments only to change them;
            // below, only the calls' ids and names are read.
            let args = std::mem::take(&mut call.arguments);
            match pipeline::preflight(&self.snapshot, call, args, &self.options).await {
                Preflight::Immediate(r) => {
                    self.end(&r);
                    slots.push(Some(*r));
                }
                Preflight::Ready(p) => {
                    slots.push(None);
                    ready.push((index, p));
                }
            }
        }
        if ready.len() == 1 {
            // A lone call runs on this task: spawning it would only add a
            // thread hand-off (and a wake-up) to every single-call batch.
            // A panic outside the tool is caught as the join below catches
            // it, and leaves the slot empty the same way.
            if let Some((index, prepared)) = ready.pop() {
                let run = Box::pin(execute_deferred(
                    &self.snapshot,
                    &self.mutations,
                    prepared,
                    &self.options,
                ));
                if let Ok(result) = pipeline::CatchUnwind(run).await {
                    slots[index] = Some(result);
                }
            }
        }
        let mut running = JoinSet::new();
        for (index, prepared) in ready {
            let snapshot = self.snapshot.clone();
            let mutations = self.mutations.clone();
            let options = self.options.clone();
            running.spawn(async move {
                let result = execute_deferred(&snapshot, &mutations, prepared, &options).await;
                (index, result)
            });
        }
        while let Some(joined) = running.join_next().await {
            // Execute catches tool panics itself; a failure here is ours.
            if let Ok((index, result)) = joined {
                slots[index] = Some(result);
            }
        }
        slots
            .into_iter()
            .zip(calls.iter())
            .map(|(slot, call)| slot.unwrap_or_else(|| self.lost(call)))
            .collect()
    }
}

/// One call of a parallel batch, after every preflight: re-checks
/// cancellation (deferred calls never start once the batch is cancelled),
/// executes, and emits its end event.
async fn execute_deferred(
    snapshot: &Arc<Snapshot>,
    mutations: &Arc<MutationQueues>,
    prepared: Box<pipeline::Prepared>,
    options: &BatchOptions,
) -> ToolResult {
    let result = if options.cancel.is_cancelled() {
        let mut r = ToolResult::error(&prepared.call.id, &prepared.call.name, ABORTED);
        r.policy_version = snapshot.policy.version.clone();
        r
    } else {
        pipeline::execute(snapshot, mutations, *prepared, options).await
    };
    emit_end(options, &result);
    result
}

/// The batch's sink, when it takes events of `kind`.
fn wanted(options: &BatchOptions, kind: EventKind) -> Option<&EventSink> {
    options.events.as_ref().filter(|events| events.wants(kind))
}

fn emit_end(options: &BatchOptions, result: &ToolResult) {
    if let Some(events) = wanted(options, EventKind::End) {
        events.emit(&Event::ToolExecutionEnd {
            id: result.id.clone(),
            name: result.name.clone(),
            result: result.clone(),
            duration_ms: result.duration.map(|d| d.as_millis() as u64),
        });
    }
}
