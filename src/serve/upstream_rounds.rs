//! Stateless (2026-era) calls of upstream tools whose server asks the client
//! something while the tool runs (`sampling/createMessage`,
//! `elicitation/create`): the 2026 era has no server-to-client requests, so
//! the question goes back as input-required rounds.
//!
//! The call runs detached from the HTTP request that started it. When its
//! server asks, the request is answered with an `InputRequiredResult`
//! (`inputRequests: {"upstream": {method, params}}` and a `requestState`),
//! and the call waits, parked. The client calls the tool again with the same
//! arguments, that `requestState` and `inputResponses.upstream`; the answer
//! goes to the upstream, and this request waits for the call's next step: its
//! result, or the next question. A parked call that nobody resumes within
//! [`TTL`] is cancelled (the upstream's request gets an error answer), and so
//! is one whose request is cancelled while it waits.
//!
//! A retry resumes a parked call only with the same tool, arguments and
//! caller; the state is unguessable. The question and the answer are
//! redacted on the way (serve/upstream_ask.rs), like in the handshake era.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InputRequests,
    InputRequiredResult,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::upstream_ask::{self, Ask, CallAsks};
use super::Gateway;
use crate::executor::{BatchOptions, ToolResult};
use crate::policy::ToolCall;
use crate::tools::ToolOutput;

/// The key of the upstream's question in `inputRequests` / `inputResponses`.
pub const KEY: &str = "upstream";
/// How long a parked call waits for the client's answer.
pub const TTL: Duration = Duration::from_secs(300);
/// At most this many parked calls; the oldest is dropped (cancelled) first.
const MAX_PARKED: usize = 64;

/// What the detached call does next.
enum Step {
    /// Its server asks the client something.
    Ask(Ask),
    /// It finished.
    Done(ToolResult),
}

/// Where the updates (progress, log records) of a call go while a request
/// waits for it: the MCP front-end's notification forwarder.
pub trait Forward {
    /// Sends one update to the waiting request's client.
    fn send(&mut self, partial: &ToolOutput) -> impl std::future::Future<Output = ()> + Send;
}

/// A detached stateless call: its steps and updates. Dropping it (the
/// client went away, or never answered) cancels the call.
pub struct Running {
    steps: mpsc::UnboundedReceiver<Step>,
    updates: mpsc::UnboundedReceiver<ToolOutput>,
    cancel: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A call waiting for the client's answer.
struct Parked {
    running: Running,
    ask: Ask,
    name: String,
    arguments: Value,
    caller: Option<String>,
    asked: Instant,
}

/// The parked calls, by `requestState`.
#[derive(Default)]
pub struct Rounds {
    parked: Mutex<HashMap<String, Parked>>,
    counter: AtomicU64,
}

impl Rounds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn park(&self, parked: Parked) -> String {
        let state = super::approve::request_state("tgup", &self.counter);
        let mut all = self.lock();
        all.retain(|_, p| p.asked.elapsed() < TTL);
        if all.len() >= MAX_PARKED {
            if let Some(oldest) = all
                .iter()
                .min_by_key(|(_, p)| p.asked)
                .map(|(k, _)| k.clone())
            {
                all.remove(&oldest);
            }
        }
        all.insert(state.clone(), parked);
        state
    }
}

/// Starts `call` (of an upstream tool, in a stateless request) detached
/// from the request; `asks` is its registration for its server's requests,
/// `updates` where its progress and log records arrive.
pub fn start(
    gateway: Arc<Gateway>,
    call: ToolCall,
    mut options: BatchOptions,
    asks: CallAsks,
    updates: mpsc::UnboundedReceiver<ToolOutput>,
) -> Running {
    let cancel = CancellationToken::new();
    options.cancel = cancel.clone();
    let (steps_tx, steps) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut asks = Some(asks);
        let run = gateway.call(call, options);
        tokio::pin!(run);
        loop {
            tokio::select! {
                result = &mut run => {
                    let _ = steps_tx.send(Step::Done(result));
                    break;
                }
                Some(ask) = upstream_ask::next_ask(&mut asks) => {
                    if let Err(unsent) = steps_tx.send(Step::Ask(ask)) {
                        if let Step::Ask(ask) = unsent.0 {
                            ask.refuse("the tool call ended".to_string());
                        }
                    }
                }
            }
        }
    });
    Running {
        steps,
        updates,
        cancel,
    }
}

/// The parked call that this retry (`requestState` and
/// `inputResponses.upstream`) resumes, with the client's answer handed to
/// the upstream; `None` when the state names no parked call of this tool,
/// these arguments and this caller.
pub fn resume(
    rounds: &Rounds,
    request: &CallToolRequestParams,
    call: &ToolCall,
    caller: Option<&str>,
) -> Option<Running> {
    let state = request.request_state.as_ref()?;
    let mut all = rounds.lock();
    let fits = all.get(state).is_some_and(|p| {
        p.name == call.name
            && p.arguments == call.arguments
            && p.caller.as_deref() == caller
            && p.asked.elapsed() < TTL
    });
    if !fits {
        return None;
    }
    let parked = all.remove(state)?;
    drop(all);
    let answer = request
        .input_responses
        .as_ref()
        .and_then(|r| r.get(KEY))
        .cloned()
        .ok_or_else(|| format!("the client's retry carried no `inputResponses.{KEY}`"));
    parked.ask.reply(answer);
    Some(parked.running)
}

/// Waits for the call's next step while this request is open, forwarding
/// its updates: a finished call is the response; a question of its server
/// parks the call and is the response (when the client declared the
/// capability; otherwise the upstream gets an error answer and the call goes
/// on).
pub async fn wait(
    gateway: &Gateway,
    mut running: Running,
    context: &RequestContext<RoleServer>,
    forwarder: &mut impl Forward,
    respond: fn(&ToolResult) -> CallToolResult,
    call: &ToolCall,
    caller: Option<&str>,
) -> CallToolResponse {
    loop {
        let step = tokio::select! {
            step = running.steps.recv() => step,
            Some(partial) = running.updates.recv() => {
                forwarder.send(&partial).await;
                continue;
            }
            _ = context.ct.cancelled() => {
                // Dropping `running` cancels the call.
                tracing::info!(id = %context.id, "upstream tool call cancelled by the client");
                return CallToolResult::error(vec![ContentBlock::text("the call was cancelled")]).into();
            }
        };
        match step {
            None => {
                return CallToolResult::error(vec![ContentBlock::text(format!(
                    "Tool {} ended without a result",
                    call.name
                ))])
                .into()
            }
            Some(Step::Done(result)) => {
                while let Ok(partial) = running.updates.try_recv() {
                    forwarder.send(&partial).await;
                }
                return respond(&result).into();
            }
            Some(Step::Ask(ask)) => {
                let capability = ask.capability();
                let declared = context
                    .client_capabilities()
                    .and_then(|c| serde_json::to_value(c).ok())
                    .is_some_and(|c| c.get(capability).is_some_and(|v| !v.is_null()));
                if !declared {
                    ask.refuse(format!("the client did not declare {capability}"));
                    continue;
                }
                let request = json!({ "method": ask.method(), "params": ask.params() });
                let mut requests = InputRequests::new();
                match serde_json::from_value(request) {
                    Ok(r) => {
                        requests.insert(KEY.to_string(), r);
                    }
                    Err(e) => {
                        let method = ask.method();
                        ask.refuse(format!("{method}: {e}"));
                        continue;
                    }
                }
                let state = gateway.rounds.park(Parked {
                    running,
                    ask,
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    caller: caller.map(str::to_string),
                    asked: Instant::now(),
                });
                return InputRequiredResult::new(Some(requests), Some(state)).into();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot::error::TryRecvError;

    fn parked(
        name: &str,
        arguments: Value,
        caller: Option<&str>,
    ) -> (
        Parked,
        tokio::sync::oneshot::Receiver<Result<Value, String>>,
    ) {
        let (ask, answered) = Ask::new("sampling/createMessage", json!({"maxTokens": 1}));
        let (_steps_tx, steps) = mpsc::unbounded_channel();
        let (_updates_tx, updates) = mpsc::unbounded_channel();
        let running = Running {
            steps,
            updates,
            cancel: CancellationToken::new(),
        };
        let p = Parked {
            running,
            ask,
            name: name.to_string(),
            arguments,
            caller: caller.map(str::to_string),
            asked: Instant::now(),
        };
        (p, answered)
    }

    fn retry(state: &str, answer: Option<Value>) -> CallToolRequestParams {
        let mut r: CallToolRequestParams =
            serde_json::from_value(json!({"name": "up__t", "arguments": {"a": 1}})).unwrap();
        r.request_state = Some(state.to_string());
        r.input_responses = answer.map(|a| [(KEY.to_string(), a)].into_iter().collect());
        r
    }

    fn call(arguments: Value) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: "up__t".into(),
            arguments,
        }
    }

    #[test]
    fn only_the_same_call_and_caller_resume_a_parked_call() {
        let rounds = Rounds::default();
        let (p, mut answered) = parked("up__t", json!({"a": 1}), Some("alice"));
        let cancel = p.running.cancel.clone();
        let state = rounds.park(p);
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": "hi"}});
        let r = retry(&state, Some(answer.clone()));
        assert!(resume(&rounds, &r, &call(json!({"a": 2})), Some("alice")).is_none());
        assert!(resume(&rounds, &r, &call(json!({"a": 1})), Some("bob")).is_none());
        assert!(resume(
            &rounds,
            &retry("tgup-guess", None),
            &call(json!({"a": 1})),
            Some("alice")
        )
        .is_none());
        assert_eq!(
            answered.try_recv(),
            Err(TryRecvError::Empty),
            "nothing answered yet"
        );
        let running = resume(&rounds, &r, &call(json!({"a": 1})), Some("alice")).expect("resumed");
        assert_eq!(answered.try_recv().unwrap(), Ok(answer));
        // Once only.
        assert!(resume(&rounds, &r, &call(json!({"a": 1})), Some("alice")).is_none());
        // A call nobody waits for any more is cancelled.
        assert!(!cancel.is_cancelled());
        drop(running);
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_retry_without_the_answer_gives_the_upstream_an_error() {
        let rounds = Rounds::default();
        let (p, mut answered) = parked("up__t", json!({"a": 1}), None);
        let state = rounds.park(p);
        let running = resume(&rounds, &retry(&state, None), &call(json!({"a": 1})), None);
        assert!(running.is_some());
        assert!(answered
            .try_recv()
            .unwrap()
            .unwrap_err()
            .contains("inputResponses.upstream"));
    }

    #[test]
    fn too_many_parked_calls_drop_the_oldest() {
        let rounds = Rounds::default();
        let (first, mut first_answer) = parked("up__t", json!({}), None);
        let cancel = first.running.cancel.clone();
        rounds.park(first);
        for _ in 0..MAX_PARKED {
            rounds.park(parked("up__t", json!({}), None).0);
        }
        assert_eq!(rounds.lock().len(), MAX_PARKED);
        assert!(cancel.is_cancelled(), "the oldest call was cancelled");
        assert_eq!(
            first_answer.try_recv(),
            Err(TryRecvError::Closed),
            "its request dropped"
        );
    }
}
