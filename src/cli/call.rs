//! `toolgate call`: run calls through the whole pipeline and print results.
//!
//! This is the executor's command-line front-end. It only translates: flags
//! and files into [`ToolCall`]s, results into JSON lines, events into a JSONL
//! file, Ctrl-C into cancellation. Every rule lives in the executor and the
//! policy.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::error::load;
use super::input::{open_workspace, read_file, single_call};
use super::{CliError, ConfigArgs};
use crate::executor::{BatchOptions, EventSink, Executor};
use crate::ToolCall;

/// What `toolgate call` was asked to run.
struct CallRequest {
    /// The calls, in source order.
    calls: Vec<ToolCall>,
    /// The message they came from hit the output token limit.
    stopped_for_length: bool,
}

/// A `--batch` file: a JSON array of calls, or an object with `calls` and
/// an optional `stop_reason` (`"length"` when the model's message was cut).
#[derive(Deserialize)]
#[serde(untagged)]
enum BatchFile {
    Calls(Vec<ToolCall>),
    Message {
        calls: Vec<ToolCall>,
        #[serde(default)]
        stop_reason: Option<String>,
    },
}

/// Parses a `--batch` file's text.
fn parse_batch(text: &str) -> Result<CallRequest, String> {
    let batch: BatchFile = serde_json::from_str(text).map_err(|e| {
        format!(
            "invalid batch: {e}; expected a JSON array of {{\"id\": …, \"name\": …, \"arguments\": {{…}}}}"
        )
    })?;
    let (calls, stop_reason) = match batch {
        BatchFile::Calls(calls) => (calls, None),
        BatchFile::Message { calls, stop_reason } => (calls, stop_reason),
    };
    for (i, c) in calls.iter().enumerate() {
        if !c.arguments.is_object() {
            return Err(format!(
                "call {} (`{}`): `arguments` must be a JSON object",
                i + 1,
                c.name
            ));
        }
    }
    let stopped_for_length = match stop_reason.as_deref() {
        None | Some("tool_use") | Some("toolUse") | Some("stop") => false,
        Some("length") => true,
        Some(other) => {
            return Err(format!(
                "unknown stop_reason `{other}`; use \"length\" for a message cut off by the output token limit, or leave it out"
            ))
        }
    };
    Ok(CallRequest {
        calls,
        stopped_for_length,
    })
}

/// Gives calls without an id one (`call-1`, `call-2`, …) so every result
/// and event can be linked to its call.
fn number_calls(calls: &mut [ToolCall]) {
    for (i, c) in calls.iter_mut().enumerate() {
        if c.id.is_empty() {
            c.id = format!("call-{}", i + 1);
        }
    }
}

/// Where `--events` goes.
fn event_sink(path: &Path) -> std::io::Result<EventSink> {
    let out: Box<dyn Write + Send> = if path == Path::new("-") {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::BufWriter::new(std::fs::File::create(path)?))
    };
    let out = Arc::new(Mutex::new(out));
    Ok(EventSink::new(move |event| {
        if let Ok(line) = serde_json::to_string(event) {
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }))
}

/// Runs `call`: prints one result per line, in source order. Exit 0 when
/// every call succeeded, 1 when any result is an error, 2 when the calls
/// could not be run at all.
#[allow(clippy::too_many_arguments)] // one per flag
pub fn run(
    config: &ConfigArgs,
    workspace: &Path,
    profile: Option<String>,
    tool: Option<String>,
    args: Option<String>,
    batch: Option<PathBuf>,
    events: Option<PathBuf>,
    sequential: bool,
) -> Result<ExitCode, CliError> {
    let mut request = match (tool, args, batch) {
        (Some(name), Some(args), None) => CallRequest {
            calls: vec![single_call(name, &args)?],
            stopped_for_length: false,
        },
        (None, None, Some(file)) => parse_batch(&read_file(&file)?)
            .map_err(|e| CliError::usage(format!("{}: {e}", file.display())))?,
        _ => {
            return Err(CliError::usage(
                "give --tool NAME --args JSON, or --batch FILE",
            ))
        }
    };
    let policy = load(&config.paths(), profile)?;
    let ws = open_workspace(workspace)?;
    let executor = Executor::try_new(policy, ws)
        .map_err(|e| CliError::usage(format!("cannot open the workspace's roots: {e}")))?;
    let events = events
        .as_deref()
        .map(event_sink)
        .transpose()
        .map_err(|e| CliError::usage(format!("--events: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the async runtime: {e}")))?;
    number_calls(&mut request.calls);
    let options = BatchOptions {
        events,
        sequential,
        stopped_for_length: request.stopped_for_length,
        ..BatchOptions::default()
    };
    let cancel = options.cancel.clone();
    let outcome = runtime.block_on(async {
        // Ctrl-C cancels: running tools stop (bash kills its process group)
        // and every call still gets its result.
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        executor.run_batch(request.calls, options).await
    });
    let mut out = std::io::stdout().lock();
    for result in &outcome.results {
        let line = serde_json::to_string(result).unwrap_or_default();
        writeln!(out, "{line}")?;
    }
    Ok(if outcome.results.iter().any(|r| r.is_error) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
