//! The built-in `bash` tool: `bash -c COMMAND` in the workspace, in its own
//! process group, with Pi's output handling and messages (see
//! [`super::command`]).

use serde_json::Value;

use super::command::{effective_timeout, run_for_text};
use super::process::{Environment, ProcessSpec};
use super::{Tool, ToolContext, ToolError, ToolFuture};

/// Runs a shell command. The policy has judged every simple command in it
/// before this runs; this only runs it and reports.
#[derive(Debug, Default)]
pub struct Bash;

impl Tool for Bash {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let command = args
                .get("command")
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::new("bash needs a `command` string"))?;
            let requested = args.get("timeout").and_then(Value::as_f64);
            let (timeout, label) = effective_timeout(requested, ctx.limits.timeout)?;
            let spec = ProcessSpec {
                program: "bash".into(),
                args: vec!["-c".into(), command.into()],
                cwd: ctx.sandbox.workspace().root().to_path_buf(),
                // Like Pi: the agent's commands need the user's PATH, HOME,
                // toolchains. Exec tools, which need less, get a clean one.
                env: Environment::Inherit,
                timeout,
                merge_stderr: true,
                confine: ctx.confine.clone(),
            };
            run_for_text(ctx, &spec, &label, "toolgate-bash").await
        })
    }
}
