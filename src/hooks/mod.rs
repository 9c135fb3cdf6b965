//! Adapters for agent CLIs' hook protocols: toolgate as the PreToolUse /
//! PostToolUse hook command of Claude Code and Codex, and the BeforeTool /
//! AfterTool hook of Gemini CLI.
//!
//! A hook is one process per tool call: the CLI writes the call as JSON on
//! stdin and reads the decision from stdout and the exit code. This module
//! only translates: the CLI's tool and arguments become a toolgate call
//! through the manifests' `[dialects.*]` tables ([`translate`]), the compiled
//! policy decides it exactly as for every other front-end
//! ([`crate::Policy::evaluate_in`]), and the verdict is written back
//! in the CLI's format (one module per CLI).
//!
//! **Fail closed.** All three CLIs treat a hook that crashes, times out or
//! exits with any other code as "allow". So [`run`] answers every input —
//! malformed JSON, invalid UTF-8, oversized input, an unknown event, a missing
//! field, a policy that does not load, a panic, a stall — with a deny: exit 0
//! with the CLI's JSON deny when the event is known, exit 2 with the reason on
//! stderr (which every CLI reads as a block) when it is not.

mod after;
mod answer;
mod claude;
mod codex;
mod confine;
mod gemini;
pub mod install;
mod patch;
mod translate;

use std::io::Read;
use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::policy::limits::preview;
use crate::policy::Decision;
pub use answer::{judge, judge_as, CliVerdict};

/// Hook input larger than this is refused unread: a hook must not be made to
/// buffer unbounded input, and no real tool call or output comes near it.
pub const MAX_INPUT_BYTES: usize = 16 << 20;

/// The agent CLIs toolgate answers as a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
}

impl Agent {
    /// The `[dialects.*]` key and command-line name: `claude`, `codex`, `gemini`.
    pub fn key(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }

    /// The CLI's product name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
        }
    }

    /// The CLI's names for the before- and after-tool events.
    pub fn event_names(self) -> [&'static str; 2] {
        match self {
            Agent::Claude | Agent::Codex => ["PreToolUse", "PostToolUse"],
            Agent::Gemini => ["BeforeTool", "AfterTool"],
        }
    }

    fn event(self, name: &str) -> Option<Event> {
        let [before, after] = self.event_names();
        if name == before {
            Some(Event::Before)
        } else if name == after {
            Some(Event::After)
        } else {
            None
        }
    }

    fn render(self, answer: &Answer, event: Event, payload: Option<&Payload>) -> Reply {
        match self {
            Agent::Claude => claude::render(answer, event),
            Agent::Codex => codex::render(answer, event, payload),
            Agent::Gemini => gemini::render(answer, event),
        }
    }
}

/// Where a hook finds its policy and workspace (`toolgate hook CLI`'s options).
#[derive(Clone, Debug, Default)]
pub struct HookOptions {
    /// Policy folder or file [default: ./policies, else embedded].
    pub policies: Option<PathBuf>,
    /// Manifest folder [default: ./tool-manifests, else embedded].
    pub manifests: Option<PathBuf>,
    /// The workspace paths are resolved against [default: the hook input's `cwd`].
    pub workspace: Option<PathBuf>,
}

/// Which half of the pipeline the CLI is asking about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Before the tool runs: allow, ask or deny.
    Before,
    /// After it ran: does the output break an after-rule?
    After,
}

/// A hook call, read from the CLI's JSON.
#[derive(Clone, Debug)]
pub struct Payload {
    /// The event.
    pub event: Event,
    /// The CLI's tool name.
    pub tool_name: String,
    /// The CLI's arguments.
    pub tool_input: Option<Map<String, Value>>,
    /// The tool's output (after-events).
    pub tool_response: Option<Value>,
    /// The CLI's id for the call, when it sends one.
    pub tool_use_id: String,
    /// The CLI's working directory.
    pub cwd: Option<String>,
}

/// What toolgate says, before the CLI's format is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A before-event decision.
    Decide {
        /// allow, ask or deny.
        decision: Decision,
        /// Why, naming the rule.
        reason: String,
    },
    /// A before-event decision (allow or ask) whose shell command the CLI
    /// must run as rewritten: under `toolgate sandbox` (`sandbox.enabled`).
    Confine {
        /// allow or ask.
        decision: Decision,
        /// Why, naming the rule.
        reason: String,
        /// The tool input to run instead of the CLI's.
        input: Map<String, Value>,
    },
    /// Nothing to say: the CLI goes on as if there were no hook.
    Silent,
    /// An after-event block.
    Block {
        /// Why, naming the rule.
        reason: String,
        /// What the model reads instead: the output with its secrets
        /// redacted, or a result rule's replacement and note.
        context: Option<String>,
        /// A result rule ends the agent's turn, for this reason.
        stop: Option<String>,
    },
    /// An after-event answer that does not block: a result rule's note for
    /// the model, and/or the end of the agent's turn.
    Note {
        /// Text added for the model.
        context: Option<String>,
        /// The agent's turn ends, for this reason.
        stop: Option<String>,
    },
}

impl Answer {
    /// The answer that refuses the call for `reason` on `event`.
    pub fn refuse(event: Event, reason: String) -> Answer {
        match event {
            Event::Before => Answer::Decide {
                decision: Decision::Deny,
                reason,
            },
            Event::After => Answer::Block {
                reason,
                context: None,
                stop: None,
            },
        }
    }
}

/// An after-event answer as JSON, the same shape for every CLI:
/// `decision` (`block_word`: `block`, or Gemini's `deny`) with `reason`,
/// `hookSpecificOutput.additionalContext`, and `continue: false` with
/// `stopReason` when a result rule ends the turn. `None` for other answers.
fn after_json(answer: &Answer, block_word: &str, event_name: &str) -> Option<Value> {
    let (reason, context, stop) = match answer {
        Answer::Block {
            reason,
            context,
            stop,
        } => (Some(reason), context, stop),
        Answer::Note { context, stop } => (None, context, stop),
        _ => return None,
    };
    let mut out = Map::new();
    if let Some(reason) = reason {
        out.insert("decision".into(), Value::from(block_word));
        out.insert("reason".into(), Value::from(reason.as_str()));
    }
    if let Some(context) = context {
        out.insert(
            "hookSpecificOutput".into(),
            serde_json::json!({ "hookEventName": event_name, "additionalContext": context }),
        );
    }
    if let Some(stop) = stop {
        out.insert("continue".into(), Value::Bool(false));
        out.insert("stopReason".into(), Value::from(stop.as_str()));
    }
    Some(Value::Object(out))
}

/// What the process writes and how it exits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// Written to stdout.
    pub stdout: String,
    /// Written to stderr.
    pub stderr: String,
    /// The exit code: 0, or 2 for a block with the reason on stderr.
    pub code: u8,
}

impl Reply {
    /// Exit 0 with `value` as one line of JSON.
    pub fn json(value: &Value) -> Reply {
        Reply {
            stdout: format!("{value}\n"),
            stderr: String::new(),
            code: 0,
        }
    }

    /// Exit 0 with nothing to say.
    pub fn silent() -> Reply {
        Reply {
            stdout: String::new(),
            stderr: String::new(),
            code: 0,
        }
    }

    /// Exit 2 with `reason` on stderr: every CLI blocks the call and shows it.
    pub fn block(reason: &str) -> Reply {
        Reply {
            stdout: String::new(),
            stderr: format!("{reason}\n"),
            code: 2,
        }
    }
}

/// Decides one hook call given its raw input, in the CLI's format; every
/// failure is a refusal. The process-level part (reading stdin, the
/// deadline, a panic, writing the reply) is the command line's. It leaks
/// the compiled policy on purpose (see `answer`), so it is for a process
/// that ends after one call.
pub fn handle(agent: Agent, options: &HookOptions, input: &[u8]) -> Reply {
    match parse(agent, input) {
        Ok(payload) => {
            let answer = answer::answer(agent, options, &payload);
            agent.render(&answer, payload.event, Some(&payload))
        }
        Err((Some(event), reason)) => agent.render(&Answer::refuse(event, reason), event, None),
        Err((None, reason)) => Reply::block(&reason),
    }
}

/// Reads a hook's input, refusing more than [`MAX_INPUT_BYTES`].
pub fn read_input(stdin: &mut impl Read) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    stdin
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| {
            format!("toolgate: the hook input could not be read ({e}); the call is denied")
        })?;
    if buf.len() > MAX_INPUT_BYTES {
        return Err(format!(
            "toolgate: the hook input is larger than {} MiB; the call is denied",
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok(buf)
}

/// Reads the CLI's JSON. An error carries the event when it was known, so
/// the refusal can be written in that event's format.
fn parse(agent: Agent, input: &[u8]) -> Result<Payload, (Option<Event>, String)> {
    let denied = "the call is denied";
    let text = std::str::from_utf8(input).map_err(|e| {
        let at = e.valid_up_to();
        (
            None,
            format!("toolgate: the hook input is not valid UTF-8 (byte {at}); {denied}"),
        )
    })?;
    if text.trim().is_empty() {
        let msg = format!("toolgate: the hook input is empty; `toolgate hook {}` reads {}'s hook JSON on stdin; {denied}", agent.key(), agent.title());
        return Err((None, msg));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| {
        (
            None,
            format!("toolgate: the hook input is not valid JSON ({e}); {denied}"),
        )
    })?;
    let Value::Object(mut obj) = value else {
        return Err((
            None,
            format!("toolgate: the hook input is not a JSON object; {denied}"),
        ));
    };
    let [before, after] = agent.event_names();
    let event = match obj.get("hook_event_name") {
        Some(Value::String(name)) => agent.event(name).ok_or_else(|| {
            (None, format!("toolgate: unknown hook event `{name}`; `toolgate hook {}` answers {before} and {after}; {denied}", agent.key()))
        })?,
        Some(other) => {
            return Err((None, format!("toolgate: `hook_event_name` must be a string, got {}; {denied}", preview(other))))
        }
        None => {
            return Err((None, format!("toolgate: the hook input has no `hook_event_name`; {denied}")))
        }
    };
    let fail = |message: String| (Some(event), format!("toolgate: {message}; {denied}"));
    let tool_name = match obj.remove("tool_name") {
        Some(Value::String(name)) if !name.is_empty() => name,
        Some(other) => {
            return Err(fail(format!(
                "`tool_name` must be a tool's name, got {}",
                preview(&other)
            )))
        }
        None => return Err(fail("the hook input has no `tool_name`".to_string())),
    };
    let tool_input = match obj.remove("tool_input") {
        Some(Value::Object(map)) => Some(map),
        None if event == Event::After => None,
        None => {
            return Err(fail(format!(
                "the hook input has no `tool_input` for {tool_name}"
            )))
        }
        Some(other) => {
            return Err(fail(format!(
                "`tool_input` of {tool_name} must be a JSON object, got {}",
                preview(&other)
            )))
        }
    };
    let tool_response = obj.remove("tool_response");
    if event == Event::After && tool_response.is_none() {
        return Err(fail(format!("the hook input has no `tool_response` for {tool_name}, so its output could not be checked")));
    }
    let tool_use_id = match obj.remove("tool_use_id") {
        Some(Value::String(id)) => id,
        _ => String::new(),
    };
    let cwd = match obj.remove("cwd") {
        Some(Value::String(cwd)) => Some(cwd),
        None | Some(Value::Null) => None,
        Some(other) => {
            return Err(fail(format!(
                "`cwd` must be a directory path, got {}",
                preview(&other)
            )))
        }
    };
    Ok(Payload {
        event,
        tool_name,
        tool_input,
        tool_response,
        tool_use_id,
        cwd,
    })
}
