//! A command run as a tool result, the way Pi's bash tool reports it: merged
//! output streamed into progress updates, tail truncation with the
//! full-output file, and the status lines for a failed exit, an abort and a
//! timeout. Used by `bash` and by exec tools in `output = "text"` mode.

use std::time::{Duration, Instant};

use serde_json::json;

use super::output::{append_status, OutputAccumulator};
use super::process::{self, Ending, OutputHandler, ProcessSpec, Stream};
use super::{Content, ToolContext, ToolError, ToolOutput};

/// Pi's `BASH_UPDATE_THROTTLE_MS`: at most one progress update this often.
pub const PROGRESS_THROTTLE: Duration = Duration::from_millis(100);

/// Feeds output into the accumulator and sends throttled progress updates
/// with the current tail, as Pi does.
struct ProgressingOutput<'a> {
    ctx: &'a ToolContext,
    output: OutputAccumulator,
    last_update: Option<Instant>,
    dirty: bool,
}

impl ProgressingOutput<'_> {
    fn emit(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.last_update = Some(Instant::now());
        let snapshot = self.output.snapshot();
        self.ctx.progress.update(ToolOutput {
            content: vec![Content::text(snapshot.truncation.content.clone())],
            details: snapshot.details(),
        });
    }
}

impl OutputHandler for ProgressingOutput<'_> {
    fn data(&mut self, _stream: Stream, bytes: &[u8]) {
        self.output.append(bytes);
        self.dirty = true;
        if self
            .last_update
            .is_none_or(|at| at.elapsed() >= PROGRESS_THROTTLE)
        {
            self.emit();
        }
    }

    fn wake_at(&self) -> Option<Instant> {
        match (self.dirty, self.last_update) {
            (true, Some(at)) => Some(at + PROGRESS_THROTTLE),
            _ => None,
        }
    }

    fn wake(&mut self) {
        self.emit();
    }
}

/// Runs `spec` (stderr merged) and turns its end into a result: the output,
/// or an error whose text ends with `Command exited with code N`,
/// `Command aborted` or `Command timed out after T seconds`.
/// `timeout_label` is T as the caller asked for it.
pub async fn run_for_text(
    ctx: &ToolContext,
    spec: &ProcessSpec,
    timeout_label: &str,
    temp_prefix: &str,
) -> Result<ToolOutput, ToolError> {
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new("Command aborted"));
    }
    ctx.progress.update(ToolOutput {
        content: Vec::new(),
        details: json!({}),
    });
    let mut handler = ProgressingOutput {
        ctx,
        output: OutputAccumulator::new(&ctx.limits, temp_prefix),
        last_update: None,
        dirty: false,
    };
    let ending = process::run(spec, &ctx.cancel, &mut handler).await?;
    handler.emit();
    let snapshot = handler.output.snapshot();
    handler.output.finish();
    let details = snapshot.details();
    match ending_status(ending, timeout_label) {
        None => Ok(ToolOutput {
            content: vec![Content::text(snapshot.render("(no output)"))],
            details,
        }),
        Some(status) => {
            // A failed exit still says `(no output)`; an abort or a timeout
            // with no output is just the status, as in Pi.
            let empty = if matches!(ending, Ending::Exited(_)) {
                "(no output)"
            } else {
                ""
            };
            Err(ToolError {
                message: append_status(&snapshot.render(empty), &status),
                details,
            })
        }
    }
}

/// The exit code a command result reports: 0 for a success, N for an error
/// whose last line is [`ending_status`]'s `Command exited with code N`, and
/// `None` for any other error (aborted, timed out, never started): a
/// command that did not exit has no exit code to compare.
pub fn reported_exit_code(text: &str, is_error: bool) -> Option<i64> {
    if !is_error {
        return Some(0);
    }
    let last = text.trim_end().rsplit('\n').next()?;
    last.strip_prefix("Command exited with code ")?.parse().ok()
}

/// Pi's status line for how a command ended; `None` for a clean exit.
pub fn ending_status(ending: Ending, timeout_label: &str) -> Option<String> {
    match ending {
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("Command exited with code {code}")),
        Ending::Aborted => Some("Command aborted".to_string()),
        Ending::TimedOut { leader_exit } => {
            let mut status = format!("Command timed out after {timeout_label} seconds");
            if let Some((code, after)) = leader_exit {
                // Both facts matter: the command's own result, and that its
                // background jobs kept writing until the timeout (Pi #11613).
                let after = (after.as_secs_f64() * 10.0).round() / 10.0;
                status.push_str(&format!(
                    ". The shell exited with code {code} after {} seconds, but background processes it started kept writing output until the timeout.",
                    process::format_seconds(after)
                ));
            }
            Some(status)
        }
    }
}

/// The effective timeout: the call's `timeout` argument (seconds) capped by
/// the policy's, and how to print it in the timeout message.
pub fn effective_timeout(
    requested: Option<f64>,
    policy: Duration,
) -> Result<(Duration, String), ToolError> {
    let policy_secs = policy.as_secs_f64();
    match requested {
        None => Ok((policy, process::format_seconds(policy_secs))),
        Some(t) if !t.is_finite() || t <= 0.0 => Err(ToolError::new(
            "Invalid timeout: must be a finite number of seconds",
        )),
        Some(t) if t >= policy_secs => Ok((policy, process::format_seconds(policy_secs))),
        Some(t) => Ok((Duration::from_secs_f64(t), process::format_seconds(t))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_is_capped_by_the_policy() {
        let policy = Duration::from_secs(120);
        assert_eq!(
            effective_timeout(None, policy).unwrap(),
            (policy, "120".to_string())
        );
        assert_eq!(
            effective_timeout(Some(0.5), policy).unwrap(),
            (Duration::from_millis(500), "0.5".to_string())
        );
        assert_eq!(
            effective_timeout(Some(9999.0), policy).unwrap(),
            (policy, "120".to_string())
        );
        assert_eq!(
            effective_timeout(Some(0.0), policy).unwrap_err().message,
            "Invalid timeout: must be a finite number of seconds"
        );
    }
}
