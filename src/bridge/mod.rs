//! `toolgate bridge --stdio`: toolgate's before- and after-hooks for a host
//! that runs its own tools (Pi's extension, any agent framework), over a
//! long-lived JSON-lines protocol on stdin/stdout.
//!
//! Each request line carries an `id`, echoed on its answer line:
//!
//! ```text
//! {"id":1,"type":"before","call_id":"c1","tool":"bash","input":{"command":"ls"}}
//! {"id":1,"decision":"allow","reason":"…","rule":"commands.allow","terminate":false}
//! {"id":2,"type":"after","call_id":"c1","tool":"bash","input":{…},"content":[…],"details":{…},"is_error":false}
//! {"id":2,"content":[…],"details":{…},"is_error":false,"terminate":false,"redacted":0}
//! {"id":3,"type":"tools"}    -> {"id":3,"tools":["read",…]}
//! {"id":4,"type":"status"}   -> {"id":4,"version":"…","active_tools":[…],"reloads_ok":0,…}
//! ```
//!
//! The bridge is a front-end like `serve` and the hooks: it owns no rule.
//! It runs on a [`Gateway`] — the same start-up, hot reload (a broken save
//! keeps the last good policy), status and active tools as `toolgate
//! serve` — and [`protocol`] translates lines into the gateway's executor:
//! `before` is [`Executor::preflight`](crate::executor::Executor::preflight),
//! the decision the executor makes before running a call, without the
//! approver (the host asks its own user for `ask`); `after` is
//! [`Executor::finalize_hosted`](crate::executor::Executor::finalize_hosted),
//! the executor's own after-hook, then the output limits.
//!
//! Requests are answered concurrently, each as soon as it is decided (so
//! answers may come out of order; match them by `id`). A line that cannot be
//! read gets an error answer (`{"id":…|null,"error":"…"}`) and the bridge
//! keeps serving. When a reload makes a new policy active, the bridge writes
//! `{"type":"reloaded","version":…,"active":[…]}`. It exits when stdin
//! closes, after answering every request already read.

mod protocol;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::config::ConfigPaths;
use crate::serve::reload;
use crate::serve::{Gateway, GatewayConfig};
use crate::CompileOptions;

pub use protocol::answer;

/// A request line longer than this is refused unread (and the rest of the
/// line skipped): no tool call or output comes near it.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Where the bridge finds its policy and workspace.
#[derive(Clone, Debug)]
pub struct BridgeOptions {
    /// Policy and manifest locations (reloaded from the same places).
    pub paths: ConfigPaths,
    /// The profile whose active tools apply.
    pub profile: Option<String>,
    /// The workspace the host's tools run in.
    pub workspace: PathBuf,
    /// Reload on policy changes (and SIGHUP).
    pub watch: bool,
}

/// Starts the gateway: the policy must compile and the workspace open, or
/// nothing is served (the host sees the bridge exit and must fail closed).
pub fn start(options: &BridgeOptions) -> Result<Arc<Gateway>, String> {
    Gateway::start(GatewayConfig {
        paths: options.paths.clone(),
        options: CompileOptions {
            profile: options.profile.clone(),
            ..CompileOptions::default()
        },
        workspace: options.workspace.clone(),
        decision_log: None,
        require_auth: false,
    })
}

/// A request line up to this size is answered on the reading thread as soon
/// as it is read (a decision takes microseconds; a thread hand-off costs as
/// much again); a longer one (a large `after` result) goes to a worker so
/// that the requests behind it are not held up.
pub const INLINE_LINE_BYTES: usize = 64 << 10;

/// Answers collected while more input waits are written at the latest when
/// they reach this size.
const FLUSH_BYTES: usize = 64 << 10;

/// Serves `input` until it closes, writing answers to `output`, on a
/// gateway from [`start`]. The error is why the bridge could not go on.
///
/// One thread reads lines and answers the small ones at once, collecting
/// their answers and writing them in one go when no more input is waiting
/// (so a burst of requests gets a burst of answers, and a single request
/// its answer right away); large lines are answered on tokio's blocking
/// pool, each written as soon as it is ready.
pub fn serve(
    gateway: Arc<Gateway>,
    options: &BridgeOptions,
    input: impl Read,
    output: impl Write + Send + 'static,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("toolgate-bridge")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the bridge's runtime: {e}"))?;
    let out = Lines::new(output);
    let _guard = runtime.enter();
    let _watcher = if options.watch {
        let handle = reload::watch(gateway.clone())
            .map_err(|e| format!("cannot watch the policy for changes: {e}"))?;
        let (gateway, out) = (gateway.clone(), out.clone());
        let mut reloads = gateway.subscribe_reloads();
        runtime.spawn(async move {
            while reloads.changed().await.is_ok() {
                out.send(&protocol::reloaded(&gateway));
            }
        });
        Some(handle)
    } else {
        None
    };
    let mut pending = Vec::new();
    // Answers of inline requests not written yet.
    let mut ready = Vec::<u8>::new();
    let mut lines = BoundedLines::new(input);
    loop {
        let next = lines.next(|| out.write_all(&mut ready));
        let line = match next {
            Ok(Some(Line::Text(line))) => line,
            Ok(Some(Line::TooLong(len))) => {
                push_line(
                    &mut ready,
                    &protocol::error(
                        Value::Null,
                        format!(
                            "a request line of {len} bytes or more is larger than {} MiB; it was skipped",
                            MAX_LINE_BYTES >> 20
                        ),
                    ),
                );
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                out.write_all(&mut ready);
                return Err(format!("cannot read stdin: {e}"));
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() <= INLINE_LINE_BYTES {
            push_line(&mut ready, &answer_guarded(&gateway, &line));
            if ready.len() >= FLUSH_BYTES {
                out.write_all(&mut ready);
            }
            continue;
        }
        let (gateway, out) = (gateway.clone(), out.clone());
        pending.retain(|task: &tokio::task::JoinHandle<()>| !task.is_finished());
        pending.push(runtime.spawn_blocking(move || {
            out.send(&answer_guarded(&gateway, &line));
        }));
    }
    out.write_all(&mut ready);
    runtime.block_on(async {
        for task in pending {
            let _ = task.await;
        }
    });
    Ok(())
}

/// [`protocol::answer`], with a panic turned into an error answer for the
/// request (the host then denies the call).
fn answer_guarded(gateway: &Gateway, line: &[u8]) -> Value {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        protocol::answer(gateway, line)
    }))
    .unwrap_or_else(|_| {
        protocol::error(
            request_id(line),
            "the bridge failed while answering this request (report this as a toolgate bug); treat the call as denied".to_string(),
        )
    })
}

/// Appends `value` as one line to `buffer`.
fn push_line(buffer: &mut Vec<u8>, value: &Value) {
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buffer, value);
    buffer.push(b'\n');
}

/// The `id` of a line, when one can be read (for a last-resort answer).
fn request_id(line: &[u8]) -> Value {
    serde_json::from_slice::<Value>(line)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .filter(|id| id.is_number() || id.is_string())
        .unwrap_or(Value::Null)
}

/// The answer stream: whole lines (one or many at a time), each batch one
/// write and one flush under a lock, so lines from different threads never
/// interleave.
#[derive(Clone)]
struct Lines(Arc<std::sync::Mutex<Box<dyn Write + Send>>>);

impl Lines {
    fn new(output: impl Write + Send + 'static) -> Lines {
        Lines(Arc::new(std::sync::Mutex::new(Box::new(output))))
    }

    /// Writes one answer line.
    fn send(&self, value: &Value) {
        let mut line = Vec::new();
        push_line(&mut line, value);
        self.write_all(&mut line);
    }

    /// Writes and empties `lines` (whole lines), if there are any.
    fn write_all(&self, lines: &mut Vec<u8>) {
        if lines.is_empty() {
            return;
        }
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A host that closed our stdout is gone; nothing is left to tell.
        let _ = out.write_all(lines).and_then(|()| out.flush());
        lines.clear();
    }
}

enum Line {
    Text(Vec<u8>),
    TooLong(usize),
}

/// Reads lines of at most [`MAX_LINE_BYTES`], skipping the rest of a longer one.
struct BoundedLines<R> {
    input: BufReader<R>,
}

impl<R: Read> BoundedLines<R> {
    fn new(input: R) -> Self {
        BoundedLines {
            input: BufReader::with_capacity(256 << 10, input),
        }
    }

    /// The next line; `idle` runs first whenever the next read may block
    /// (nothing is buffered), so that answers collected so far go out
    /// before the bridge waits for more input.
    fn next(&mut self, mut idle: impl FnMut()) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut seen = 0usize;
        loop {
            if self.input.buffer().is_empty() {
                idle();
            }
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(match seen {
                    0 => None,
                    _ if seen > MAX_LINE_BYTES => Some(Line::TooLong(seen)),
                    _ => Some(Line::Text(line)),
                });
            }
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            seen += chunk.len();
            if seen <= MAX_LINE_BYTES {
                line.extend_from_slice(chunk);
            } else {
                line = Vec::new();
            }
            let used = done.unwrap_or(buf.len());
            self.input.consume(used);
            if done.is_some() {
                return Ok(Some(if seen > MAX_LINE_BYTES {
                    Line::TooLong(seen)
                } else {
                    Line::Text(line)
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_and_an_unfinished_last_line_still_counts() {
        let mut lines = BoundedLines::new(&b"a\n\nbc"[..]);
        let mut got = Vec::new();
        while let Some(Line::Text(l)) = lines.next(|| ()).unwrap() {
            got.push(String::from_utf8(l).unwrap());
        }
        assert_eq!(got, ["a", "", "bc"]);
    }

    #[test]
    fn the_id_of_a_line_is_found_for_a_last_resort_answer() {
        assert_eq!(request_id(br#"{"id":"x","type":1}"#), Value::from("x"));
        assert_eq!(request_id(br#"{"id":[1]}"#), Value::Null);
        assert_eq!(request_id(b"nope"), Value::Null);
    }
}
