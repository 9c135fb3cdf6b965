//! Putting an `ask` decision to the user over MCP.
//!
//! - **Handshake era** (2025-11-25): the server sends `elicitation/create`
//!   while the call waits ([`ElicitationApprover`]).
//! - **Stateless era** (2026-07-28): server-to-client requests are gone;
//!   the call's first round answers with an `InputRequiredResult` holding
//!   the same yes/no form and a `requestState`, and the client calls again
//!   with the user's answer in `inputResponses`. Nothing runs (and nothing
//!   is logged) in the first round: [`needs_approval`] decides it the way
//!   the executor will. The pending question is kept here
//!   ([`PendingApprovals`]), bound to the exact tool and arguments, single
//!   use and short-lived, so an answer cannot approve a different call.
//!
//! Either way the form is one boolean, and anything but an accepted "yes"
//! leaves the call blocked.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ElicitRequestParams, ElicitationAction, InputRequests, InputRequiredResult};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::Gateway;
use crate::executor::{redact_value, Approver};
use crate::policy::{Decision, ToolCall, Verdict};

/// The key of the approval form in `inputRequests` / `inputResponses`.
pub const APPROVAL_KEY: &str = "approval";
/// How long a stateless-era question waits for its answer.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// Most questions kept at once (the oldest go first).
const MAX_PENDING: usize = 1024;

/// The yes/no form for one call, with its arguments redacted.
pub fn approval_form(gateway: &Gateway, call: &ToolCall, verdict: &Verdict) -> Value {
    let mut arguments = call.arguments.clone();
    redact_value(gateway.policy().redactor.get(), &mut arguments);
    let arguments = serde_json::to_string_pretty(&arguments).unwrap_or_default();
    let message = format!(
        "Allow the tool call `{}`?\n\n{}\n\nArguments:\n{}",
        call.name,
        verdict.reason,
        crate::text::shorten(&arguments, 2000)
    );
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Run this call",
                    "description": "Yes runs the call once; no blocks it.",
                    "default": false
                }
            },
            "required": ["approve"]
        }
    })
}

/// Whether an elicitation result (`{action, content}`) says yes.
pub fn approved(result: &Value) -> bool {
    result.get("action").and_then(Value::as_str) == Some("accept")
        && result
            .get("content")
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// Asks through `elicitation/create` while the call waits (handshake era).
pub struct ElicitationApprover {
    /// The client session.
    pub peer: Peer<RoleServer>,
    /// The call's cancellation: a cancelled call stops waiting.
    pub cancel: CancellationToken,
    /// For the policy's redaction rules.
    pub gateway: Arc<Gateway>,
}

impl Approver for ElicitationApprover {
    fn approve<'a>(
        &'a self,
        call: &'a ToolCall,
        verdict: &'a Verdict,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            let form = approval_form(&self.gateway, call, verdict);
            let params: ElicitRequestParams = match serde_json::from_value(form) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "elicitation request cannot be built");
                    return false;
                }
            };
            let answer = tokio::select! {
                _ = self.cancel.cancelled() => return false,
                answer = self.peer.create_elicitation(params) => answer,
            };
            match answer {
                Ok(result) => {
                    result.action == ElicitationAction::Accept
                        && result
                            .content
                            .as_ref()
                            .and_then(|c| c.get("approve"))
                            .and_then(Value::as_bool)
                            == Some(true)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "elicitation failed; the call stays blocked");
                    false
                }
            }
        })
    }
}

/// An answer the user already gave (stateless era, second round).
pub struct Answered(pub bool);

impl Approver for Answered {
    fn approve<'a>(
        &'a self,
        _call: &'a ToolCall,
        _verdict: &'a Verdict,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let answer = self.0;
        Box::pin(async move { answer })
    }
}

/// The before-hook's verdict as the executor will reach it (its own
/// preflight), when it is `ask`; `None` otherwise, or for a call preflight
/// refuses (the executor reports that when it runs).
pub fn needs_approval(
    gateway: &Gateway,
    call: &ToolCall,
    identity: Option<&crate::policy::auth::Identity>,
) -> Option<Verdict> {
    let (_, verdict) = gateway.executor().preflight_as(call, identity).ok()?;
    (verdict.decision == Decision::Ask).then_some(verdict)
}

struct Pending {
    name: String,
    arguments: Value,
    asked: Instant,
}

/// Stateless-era questions waiting for their answers, shared by every
/// handler of one server.
#[derive(Default)]
pub struct PendingApprovals {
    pending: Mutex<HashMap<String, Pending>>,
    counter: AtomicU64,
}

/// A new `requestState` value, `PREFIX-…`: unguessable enough that one
/// client cannot answer or resume another's round (a randomly keyed hash of
/// a per-table counter and the time), and unique within the table.
pub(super) fn request_state(prefix: &str, counter: &AtomicU64) -> String {
    let n = counter.fetch_add(1, Ordering::Relaxed);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(n);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    format!("{prefix}-{:016x}{:08x}", hasher.finish(), n.wrapping_add(1))
}

impl PendingApprovals {
    /// Records a question about `call`; returns the `requestState` that
    /// names it.
    pub fn ask(&self, call: &ToolCall) -> String {
        let state = request_state("tg", &self.counter);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|_, p| p.asked.elapsed() < PENDING_TTL);
        if pending.len() >= MAX_PENDING {
            if let Some(oldest) = pending
                .iter()
                .min_by_key(|(_, p)| p.asked)
                .map(|(k, _)| k.clone())
            {
                pending.remove(&oldest);
            }
        }
        pending.insert(
            state.clone(),
            Pending {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                asked: Instant::now(),
            },
        );
        state
    }

    /// The user's answer to the question `state` names, if that question was
    /// about exactly this call and is still open. Each question is answered
    /// once.
    pub fn answer(&self, state: &str, call: &ToolCall, response: Option<&Value>) -> Option<bool> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let question = pending.remove(state)?;
        let same_call = question.name == call.name && question.arguments == call.arguments;
        if !same_call || question.asked.elapsed() >= PENDING_TTL {
            return None;
        }
        Some(response.is_some_and(approved))
    }
}

/// The first round's answer: the form to fill in, and the state to echo.
pub fn input_required(form: Value, state: String) -> Option<InputRequiredResult> {
    let request = json!({ "method": "elicitation/create", "params": form });
    let mut requests = InputRequests::new();
    requests.insert(
        APPROVAL_KEY.to_string(),
        serde_json::from_value(request)
            .map_err(|e| tracing::error!(error = %e, "input request cannot be built"))
            .ok()?,
    );
    Some(InputRequiredResult::new(Some(requests), Some(state)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: Value) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: "bash".into(),
            arguments: args,
        }
    }

    #[test]
    fn an_answer_approves_only_its_own_call_once() {
        let store = PendingApprovals::default();
        let yes = json!({"action": "accept", "content": {"approve": true}});
        let state = store.ask(&call(json!({"command": "git push"})));
        assert_eq!(
            store.answer(&state, &call(json!({"command": "rm -rf /"})), Some(&yes)),
            None,
            "another call's question"
        );
        let state = store.ask(&call(json!({"command": "git push"})));
        assert_eq!(
            store.answer(&state, &call(json!({"command": "git push"})), Some(&yes)),
            Some(true)
        );
        assert_eq!(
            store.answer(&state, &call(json!({"command": "git push"})), Some(&yes)),
            None,
            "single use"
        );
        assert_eq!(
            store.answer("tg-forged", &call(json!({})), Some(&yes)),
            None
        );
    }

    #[test]
    fn only_an_accepted_yes_approves() {
        assert!(approved(
            &json!({"action": "accept", "content": {"approve": true}})
        ));
        assert!(!approved(
            &json!({"action": "accept", "content": {"approve": false}})
        ));
        assert!(!approved(&json!({"action": "decline"})));
        assert!(!approved(
            &json!({"action": "cancel", "content": {"approve": true}})
        ));
        assert!(!approved(&json!({"action": "accept"})));
    }

    #[test]
    fn states_differ() {
        let store = PendingApprovals::default();
        let c = call(json!({}));
        assert_ne!(store.ask(&c), store.ask(&c));
    }

    #[test]
    fn the_input_request_is_an_elicitation_form() {
        let form = json!({"mode": "form", "message": "m",
            "requestedSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}}});
        let r = input_required(form, "tg-1".into()).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["resultType"], "input_required");
        assert_eq!(v["requestState"], "tg-1");
        assert_eq!(
            v["inputRequests"]["approval"]["method"],
            "elicitation/create"
        );
    }
}
