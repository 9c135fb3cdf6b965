//! What the executor reports: results, and events for observers.
//!
//! Events follow Pi's agent loop: `tool_execution_start` when a call is seen,
//! `tool_execution_update` for each (redacted) partial result,
//! `tool_execution_end` when it is final, then `tool_result` — the message
//! the model gets. Every call gets a start, an end and a result, whatever
//! happens to it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::policy::Verdict;
use crate::tools::{Content, ToolOutput};

/// The final outcome of one call: what the model reads, linked to its call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolResult {
    /// The call's id.
    pub id: String,
    /// The tool called.
    pub name: String,
    /// What the model reads; never null (`[]` when there is nothing).
    pub content: Vec<Content>,
    /// Structured extras; `{}` when none.
    pub details: Value,
    /// True for every failure: unknown tool, invalid arguments, a policy
    /// denial, a tool error, cancellation.
    pub is_error: bool,
    /// True when this call asks the batch to end (it ends only if every call
    /// of the batch says so).
    pub terminate: bool,
    /// The before-hook's verdict, when the call got that far (for logs).
    #[serde(skip)]
    pub verdict: Option<Verdict>,
    /// The policy version the call ran under (for logs).
    #[serde(skip)]
    pub policy_version: String,
    /// Time spent executing, when the tool ran.
    #[serde(skip)]
    pub duration: Option<Duration>,
    /// The id of the result rule (`results:`) that applied, if one did (for
    /// logs and metrics; the details say so too).
    #[serde(skip)]
    pub result_rule: Option<String>,
}

impl ToolResult {
    /// An error result carrying `message` (Pi's `createErrorToolResult`).
    pub fn error(id: &str, name: &str, message: impl Into<String>) -> ToolResult {
        ToolResult {
            id: id.to_string(),
            name: name.to_string(),
            content: vec![Content::text(message)],
            details: empty_details(),
            is_error: true,
            terminate: false,
            verdict: None,
            policy_version: String::new(),
            duration: None,
            result_rule: None,
        }
    }

    /// The text of every text block, joined by newlines (for tests and logs).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub(crate) fn empty_details() -> Value {
    Value::Object(Default::default())
}

/// One thing that happened to a call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The call was seen, with its raw arguments.
    ToolExecutionStart {
        /// The call's id.
        id: String,
        /// The tool called.
        name: String,
        /// The arguments as the model sent them.
        args: Value,
    },
    /// A partial result while the tool runs, already redacted.
    ToolExecutionUpdate {
        /// The call's id.
        id: String,
        /// The tool called.
        name: String,
        /// The partial result.
        partial: ToolOutput,
    },
    /// The call's result is final.
    ToolExecutionEnd {
        /// The call's id.
        id: String,
        /// The tool called.
        name: String,
        /// The final result.
        result: ToolResult,
        /// Execution time in milliseconds, when the tool ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    },
    /// The result message, in source order.
    ToolResult {
        /// The result.
        result: ToolResult,
    },
}

/// The four kinds of [`Event`], for a sink that takes only some of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// [`Event::ToolExecutionStart`].
    Start,
    /// [`Event::ToolExecutionUpdate`].
    Update,
    /// [`Event::ToolExecutionEnd`].
    End,
    /// [`Event::ToolResult`].
    Result,
}

impl EventKind {
    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl Event {
    /// Which kind of event this is.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::ToolExecutionStart { .. } => EventKind::Start,
            Event::ToolExecutionUpdate { .. } => EventKind::Update,
            Event::ToolExecutionEnd { .. } => EventKind::End,
            Event::ToolResult { .. } => EventKind::Result,
        }
    }

    /// The call id the event belongs to.
    pub fn call_id(&self) -> &str {
        match self {
            Event::ToolExecutionStart { id, .. }
            | Event::ToolExecutionUpdate { id, .. }
            | Event::ToolExecutionEnd { id, .. } => id,
            Event::ToolResult { result } => &result.id,
        }
    }
}

/// Where events go. Called synchronously, from whichever task produced the
/// event, so it must be quick (push to a channel, write a line).
///
/// A sink says which kinds of events it takes ([`EventSink::only`]); the
/// executor does not even build the others (an end or result event copies
/// the whole result), so a front-end that reads only updates pays for
/// updates only.
#[derive(Clone)]
pub struct EventSink {
    deliver: Arc<dyn Fn(&Event) + Send + Sync>,
    /// One bit per [`EventKind`] taken.
    kinds: u8,
}

impl EventSink {
    /// Every event delivered to `f`.
    pub fn new(f: impl Fn(&Event) + Send + Sync + 'static) -> EventSink {
        EventSink {
            deliver: Arc::new(f),
            kinds: u8::MAX,
        }
    }

    /// Events of `kinds` delivered to `f`; the others are never built.
    pub fn only(kinds: &[EventKind], f: impl Fn(&Event) + Send + Sync + 'static) -> EventSink {
        EventSink {
            deliver: Arc::new(f),
            kinds: kinds.iter().fold(0, |bits, k| bits | k.bit()),
        }
    }

    /// A sink and the stream of its events, for observers that would rather
    /// `recv().await` than be called back.
    pub fn channel() -> (EventSink, tokio::sync::mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(move |e: &Event| {
            let _ = tx.send(e.clone());
        });
        (sink, rx)
    }

    /// Whether this sink takes events of `kind`.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.kinds & kind.bit() != 0
    }

    /// Delivers one event, if the sink takes its kind.
    pub fn emit(&self, event: &Event) {
        if self.wants(event.kind()) {
            (self.deliver)(event)
        }
    }
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EventSink")
    }
}
