//! Adapters for agent CLIs' hook protocols: toolgate as the PreToolUse /
//! PostToolUse hook command of Claude Code and Codex, and the BeforeTool /
//! AfterTool hook of Gemini CLI.
//!
//! A hook is one process per tool call: the CLI writes the call as JSON on
//! stdin and reads the decision from stdout and the exit code. This module
//! only translates: the CLI's tool and arguments become a toolgate call
//! through the manifests' `[dialects.*]` tables ([`translate`]), the compiled
//! policy decides it exactly as for every other front-end
//! ([`crate::CompiledPolicy::evaluate_in`]), and the verdict is written back
//! in the CLI's format (one module per CLI).
//!
//! **Fail closed.** All three CLIs treat a hook that crashes, times out or
//! exits with any other code as "allow". So [`run`] answers every input —
//! malformed JSON, invalid UTF-8, oversized input, an unknown event, a missing
//! field, a policy that does not load, a panic, a stall — with a deny: exit 0
//! with the CLI's JSON deny when the event is known, exit 2 with the reason on
//! stderr (which every CLI reads as a block) when it is not.

mod answer;
mod claude;
mod codex;
mod gemini;
pub mod install;
pub mod patch;
pub mod translate;
mod watchdog;

use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::policy::limits::preview;
use crate::policy::Decision;

/// Hook input larger than this is refused unread: a hook must not be made to
/// buffer unbounded input, and no real tool call or output comes near it.
pub const MAX_INPUT_BYTES: usize = 16 << 20;

/// The agent CLIs toolgate answers as a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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

/// `toolgate hook …`.
#[derive(clap::Subcommand, Debug)]
pub enum HookCommand {
    /// Answer one Claude Code hook call (PreToolUse / PostToolUse JSON on stdin).
    Claude(HookArgs),
    /// Answer one Codex hook call (PreToolUse / PostToolUse JSON on stdin).
    Codex(HookArgs),
    /// Answer one Gemini CLI hook call (BeforeTool / AfterTool JSON on stdin).
    Gemini(HookArgs),
    /// Print the settings that register toolgate as a CLI's hook, or merge them in with --write.
    Install(install::InstallArgs),
}

/// Options of `toolgate hook claude|codex|gemini`.
#[derive(clap::Args, Clone, Debug)]
pub struct HookArgs {
    /// Policy folder (every *.yaml is a layer) or one policy file [default: ./policies, else embedded].
    #[arg(long)]
    pub policies: Option<PathBuf>,
    /// Manifest folder [default: ./tool-manifests, else embedded].
    #[arg(long)]
    pub manifests: Option<PathBuf>,
    /// The workspace paths are resolved against [default: the hook input's `cwd`].
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Deny when no answer is ready after this many milliseconds (keep it
    /// below the CLI's hook timeout, which would otherwise let the call run).
    #[arg(long, default_value_t = 5000)]
    pub deadline_ms: u64,
    /// Read the hook input from this file instead of stdin (to replay a
    /// saved call, or to time the hook without a shell).
    #[arg(long)]
    pub input: Option<PathBuf>,
}

/// Runs `toolgate hook …`.
pub fn main(command: HookCommand) -> ExitCode {
    let (agent, args) = match command {
        HookCommand::Claude(a) => (Agent::Claude, a),
        HookCommand::Codex(a) => (Agent::Codex, a),
        HookCommand::Gemini(a) => (Agent::Gemini, a),
        HookCommand::Install(a) => return install::main(&a),
    };
    ExitCode::from(run(agent, &args))
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
    /// Nothing to say: the CLI goes on as if there were no hook.
    Silent,
    /// An after-event block.
    Block {
        /// Why, naming the rule.
        reason: String,
        /// The output with its secrets redacted, for the model.
        context: Option<String>,
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
            },
        }
    }
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

/// Answers one hook call: reads stdin, writes the answer, returns the exit
/// code. Never panics and never returns anything but 0 or 2 (see the module
/// documentation).
pub fn run(agent: Agent, args: &HookArgs) -> u8 {
    // A panic anywhere, in any thread, denies: the hook prints the reason and
    // exits 2 before the default handler could end the process with 101.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "toolgate: internal error ({info}); the call is denied"
        );
        std::process::exit(2);
    }));
    watchdog::start(args.deadline_ms);
    let reply = std::panic::catch_unwind(AssertUnwindSafe(|| {
        inject_fault(args.deadline_ms);
        let input = match &args.input {
            None => read_input(&mut std::io::stdin().lock()),
            Some(path) => std::fs::File::open(path)
                .map_err(|e| {
                    format!(
                        "toolgate: the hook input {} cannot be opened ({e}); the call is denied",
                        path.display()
                    )
                })
                .and_then(|mut f| read_input(&mut f)),
        };
        match input {
            Ok(input) => handle(agent, args, &input),
            Err(reason) => Reply::block(&reason),
        }
    }))
    .unwrap_or_else(|_| Reply::block("toolgate: internal error; the call is denied"));
    if !watchdog::claim_answer() {
        // The watchdog has answered and is ending the process.
        loop {
            std::thread::park();
        }
    }
    emit(&reply)
}

/// Decides one hook call given its raw input: everything [`run`] does except
/// process-level I/O. It leaks the compiled policy on purpose (see
/// `answer`), so it is for a process that ends after one call.
fn handle(agent: Agent, args: &HookArgs, input: &[u8]) -> Reply {
    match parse(agent, input) {
        Ok(payload) => {
            let answer = answer::answer(agent, args, &payload);
            agent.render(&answer, payload.event, Some(&payload))
        }
        Err((Some(event), reason)) => agent.render(&Answer::refuse(event, reason), event, None),
        Err((None, reason)) => Reply::block(&reason),
    }
}

fn emit(reply: &Reply) -> u8 {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(reply.stdout.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        let _ = writeln!(
            std::io::stderr(),
            "toolgate: the answer could not be written to stdout; the call is denied"
        );
        return 2;
    }
    if !reply.stderr.is_empty() {
        let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    }
    reply.code
}

/// Test hook for the fail-closed paths: `TOOLGATE_HOOK_FAULT=panic` panics
/// and `=stall` hangs while deciding. Either can only ever end in a deny.
fn inject_fault(deadline_ms: u64) {
    match std::env::var("TOOLGATE_HOOK_FAULT").as_deref() {
        Ok("panic") => panic!("injected fault (TOOLGATE_HOOK_FAULT=panic)"),
        Ok("stall") => std::thread::sleep(Duration::from_millis(deadline_ms.saturating_mul(10))),
        _ => {}
    }
}

fn read_input(stdin: &mut impl Read) -> Result<Vec<u8>, String> {
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
