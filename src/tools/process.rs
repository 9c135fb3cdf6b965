//! Running a program in its own process group, for `bash` and exec tools.
//!
//! The program is the leader of a new process group, so everything it starts
//! (pipelines, `&` jobs, subshells) can be killed with one `killpg` on
//! timeout, on cancellation, and when the caller's future is dropped. Output
//! is read as it arrives and handed to an [`OutputHandler`]; stdout and
//! stderr either share one pipe (merged in the order the kernel saw the
//! writes, exactly like `2>&1`) or are read separately.
//!
//! When the leader exits, its background jobs may still hold the pipe. Like
//! Pi, the output is then read until the pipe closes or stays quiet for
//! [`EXIT_IDLE_GRACE`]; jobs that outlive the command are left running (a
//! command may start a server on purpose). Only a timeout or a cancellation
//! kills them.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout, Command};
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

use super::ToolError;

/// After the leader exits, how long the pipe may stay quiet before the
/// output is taken as complete (Pi's `EXIT_STDIO_GRACE_MS`).
pub const EXIT_IDLE_GRACE: Duration = Duration::from_millis(100);
/// After a kill, how long to keep reading what was already written.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);
const READ_CHUNK: usize = 16 * 1024;

/// Which stream a chunk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// stdout, or both streams when merged.
    Out,
    /// stderr, when read separately.
    Err,
}

/// The environment the program gets.
#[derive(Clone, Debug)]
pub enum Environment {
    /// The gateway's own environment.
    Inherit,
    /// Exactly these variables, nothing else.
    Only(Vec<(OsString, OsString)>),
}

/// What to run and how.
#[derive(Clone, Debug)]
pub struct ProcessSpec {
    /// The program: a name looked up in `PATH`, or a path.
    pub program: OsString,
    /// Its arguments, each one argv word.
    pub args: Vec<OsString>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Its environment.
    pub env: Environment,
    /// When the whole group is killed.
    pub timeout: Duration,
    /// True: stderr goes into the stdout pipe. False: read separately.
    pub merge_stderr: bool,
    /// Run confined by this plan (see [`crate::confine`]).
    pub confine: Option<Arc<crate::confine::Plan>>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The leader exited; a signal death is reported as `128 + signal`, as
    /// shells do.
    Exited(i32),
    /// The timeout passed. `leader_exit` is set when the leader had already
    /// exited (with that code, after that long) and only its background jobs
    /// were still writing.
    TimedOut {
        /// `(exit code, time to exit)` of a leader that exited in time.
        leader_exit: Option<(i32, Duration)>,
    },
    /// The cancellation token fired.
    Aborted,
}

/// Receives output while the program runs.
pub trait OutputHandler: Send {
    /// A chunk of output, in arrival order.
    fn data(&mut self, stream: Stream, bytes: &[u8]);
    /// When the handler next wants [`OutputHandler::wake`] called (e.g. a
    /// throttled progress update that is due); `None` for never.
    fn wake_at(&self) -> Option<Instant> {
        None
    }
    /// Called at or after the time [`OutputHandler::wake_at`] named.
    fn wake(&mut self) {}
}

/// Kills the process group when dropped, unless disarmed: a dropped tool
/// future (the caller gave up) must not leave the command running.
struct GroupKiller {
    pgid: Option<libc::pid_t>,
}

impl GroupKiller {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg only sends a signal; a stale or empty group gives
            // ESRCH, which is fine. The pgid is the leader's pid, which the
            // kernel does not reuse while the group still has members.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Exit code the way a shell reports it.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// Runs `spec` to its end, feeding output to `handler`. Fails only when the
/// program cannot be started, with Pi's `Failed to run PROGRAM: REASON`.
pub async fn run(
    spec: &ProcessSpec,
    cancel: &CancellationToken,
    handler: &mut dyn OutputHandler,
) -> Result<Ending, ToolError> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if spec.merge_stderr {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .process_group(0)
        .kill_on_drop(true);
    if let Environment::Only(vars) = &spec.env {
        command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
    }
    if spec.merge_stderr {
        // SAFETY: runs in the forked child before exec; dup2 is
        // async-signal-safe and touches nothing but the child's descriptors.
        // It runs after stdout was set up, so fd 2 becomes the stdout pipe.
        unsafe {
            command.pre_exec(|| {
                if libc::dup2(1, 2) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    // Prepared here, applied in the child between fork and exec; kept until
    // the run ends (it owns the command's private TMPDIR).
    let _confined = match &spec.confine {
        Some(plan) => {
            let prepared = Arc::new(plan.prepare().map_err(|e| {
                ToolError::new(format!(
                    "Failed to run {}: {e}",
                    spec.program.to_string_lossy()
                ))
            })?);
            command.env("TMPDIR", prepared.tmpdir());
            let in_child = prepared.clone();
            // SAFETY: `apply_in_child` only makes system calls on memory
            // prepared before the fork (async-signal-safe).
            unsafe {
                command.pre_exec(move || in_child.apply_in_child());
            }
            Some(prepared)
        }
        None => None,
    };
    let mut child = command.spawn().map_err(|e| {
        ToolError::new(format!(
            "Failed to run {}: {e}",
            spec.program.to_string_lossy()
        ))
    })?;
    let mut killer = GroupKiller {
        pgid: child.id().and_then(|id| libc::pid_t::try_from(id).ok()),
    };
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let mut out_buf = vec![0u8; READ_CHUNK];
    let mut err_buf = vec![0u8; READ_CHUNK];
    let mut exited: Option<(i32, Duration)> = None;
    let mut idle_deadline = tokio::time::Instant::now();
    let far = deadline + Duration::from_secs(86_400);

    let ending = loop {
        if exited.is_some() && out.is_none() && err.is_none() {
            break None;
        }
        let wake = handler
            .wake_at()
            .map(tokio::time::Instant::from_std)
            .unwrap_or(far);
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break Some(Ending::Aborted),
            _ = sleep_until(deadline) => break Some(Ending::TimedOut { leader_exit: exited }),
            n = read_some(&mut out, &mut out_buf) => {
                if let Some(n) = n {
                    handler.data(Stream::Out, &out_buf[..n]);
                } else {
                    out = None;
                }
                idle_deadline = tokio::time::Instant::now() + EXIT_IDLE_GRACE;
            }
            n = read_some_err(&mut err, &mut err_buf) => {
                if let Some(n) = n {
                    handler.data(Stream::Err, &err_buf[..n]);
                } else {
                    err = None;
                }
                idle_deadline = tokio::time::Instant::now() + EXIT_IDLE_GRACE;
            }
            status = child.wait(), if exited.is_none() => {
                let code = status.map(exit_code).unwrap_or(1);
                exited = Some((code, started.elapsed()));
                idle_deadline = tokio::time::Instant::now() + EXIT_IDLE_GRACE;
            }
            _ = sleep_until(idle_deadline), if exited.is_some() => break None,
            _ = sleep_until(wake) => handler.wake(),
        }
    };

    match ending {
        None => {
            // The leader exited and its output is complete. Background jobs
            // that still hold the pipe are left alone, as in Pi.
            killer.disarm();
            let (code, _) = exited.unwrap_or((1, Duration::ZERO));
            Ok(Ending::Exited(code))
        }
        Some(ending) => {
            killer.kill();
            if exited.is_none() {
                let _ = child.wait().await;
            }
            drain(&mut out, &mut err, handler).await;
            Ok(ending)
        }
    }
}

/// Reads what the killed group had already written, until the pipes close
/// or a short deadline (a process that left the group may hold them open).
async fn drain(
    out: &mut Option<ChildStdout>,
    err: &mut Option<ChildStderr>,
    handler: &mut dyn OutputHandler,
) {
    let until = tokio::time::Instant::now() + DRAIN_AFTER_KILL;
    let mut buf = vec![0u8; READ_CHUNK];
    let mut ebuf = vec![0u8; READ_CHUNK];
    while out.is_some() || err.is_some() {
        tokio::select! {
            _ = sleep_until(until) => return,
            n = read_some(out, &mut buf) => match n {
                Some(n) => handler.data(Stream::Out, &buf[..n]),
                None => *out = None,
            },
            n = read_some_err(err, &mut ebuf) => match n {
                Some(n) => handler.data(Stream::Err, &ebuf[..n]),
                None => *err = None,
            },
        }
    }
}

/// One read; `None` at end of stream or on a read error. Pends forever when
/// the stream is already closed, so `select!` simply never picks it.
async fn read_some(pipe: &mut Option<ChildStdout>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// [`read_some`] for stderr.
async fn read_some_err(pipe: &mut Option<ChildStderr>, buf: &mut [u8]) -> Option<usize> {
    match pipe {
        Some(p) => match p.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// Seconds the way JavaScript prints a number: `1`, `0.5`, `120`.
pub fn format_seconds(secs: f64) -> String {
    format!("{secs}")
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<u8>);
    impl OutputHandler for Collect {
        fn data(&mut self, _stream: Stream, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
    }

    fn spec(script: &str, timeout: Duration) -> ProcessSpec {
        ProcessSpec {
            program: "bash".into(),
            args: vec!["-c".into(), script.into()],
            cwd: std::env::temp_dir(),
            env: Environment::Inherit,
            timeout,
            merge_stderr: true,
            confine: None,
        }
    }

    #[tokio::test]
    async fn merges_stderr_in_order_and_reports_the_exit_code() {
        let mut out = Collect(Vec::new());
        let s = spec(
            "echo a; echo b >&2; echo c; exit 3",
            Duration::from_secs(10),
        );
        let ending = run(&s, &CancellationToken::new(), &mut out).await.unwrap();
        assert_eq!(ending, Ending::Exited(3));
        assert_eq!(String::from_utf8_lossy(&out.0), "a\nb\nc\n");
    }

    #[tokio::test]
    async fn a_signal_death_is_128_plus_the_signal() {
        let mut out = Collect(Vec::new());
        let s = spec("kill -9 $$", Duration::from_secs(10));
        let ending = run(&s, &CancellationToken::new(), &mut out).await.unwrap();
        assert_eq!(ending, Ending::Exited(137));
    }

    #[test]
    fn seconds_print_like_javascript() {
        assert_eq!(format_seconds(1.0), "1");
        assert_eq!(format_seconds(0.5), "0.5");
        assert_eq!(format_seconds(120.0), "120");
    }
}
