//! The MCP client transport over an upstream server's stdio: one JSON-RPC
//! message per line each way (what rmcp's `AsyncRwTransport` does), with
//! the answer to a `tools/call` decoded straight into JSON.
//!
//! rmcp decodes every incoming message into its typed model; an answer's
//! `result` is an untagged union of some twenty result types, which serde
//! tries one after the other from a buffered copy of the message. For a
//! `tools/call` answer that was most of the hop's decoding time, and
//! `call.rs` turned the typed result back into JSON anyway. This transport
//! remembers which requests it sent were `tools/call`s; a plain answer to
//! one (text blocks) is read in one pass and filed for its call
//! (`answer.rs`, rmcp gets a `null` result for the id), any other answer
//! to one is handed over as `ServerResult::CustomResult` (the JSON as it
//! came), and `call.rs` checks it has the shape of a `CallToolResult`. A
//! `tools/call` request is written directly (`wire.rs`). Every other
//! message (the handshake, listings, notifications, the upstream's own
//! requests) is decoded into rmcp's types as before, and the routing of
//! answers, progress and cancellation stays where it was (rmcp's service
//! loop and `connect::InOrder`).
//!
//! What goes wrong on the wire ends in a clear error for the waiting call,
//! never a panic:
//! - a line over [`MAX_LINE`] is dropped, and every request still waiting
//!   for an answer gets an error naming the limit (the line's id cannot be
//!   read without keeping it);
//! - an answer that is JSON but not a JSON-RPC answer (or an error without
//!   a valid `error` object) fails the request whose id it carries;
//! - a request from the server that rmcp cannot read gets an "Invalid
//!   request" answer (as rmcp gives);
//! - a line that is not JSON, or an answer to an id nobody waits for, is
//!   reported on stderr and skipped (as the MCP SDKs do: a late answer to a
//!   cancelled call is normal); the waiting call still ends at its timeout;
//! - the server closing its output ends the session (rmcp then fails the
//!   waiting calls, "… is unavailable"), and the supervisor restarts it when
//!   its process exits.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientNotification, ClientRequest, CustomResult, ErrorData, JsonRpcMessage, RequestId,
    ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::answer::Pending;
use crate::lines::{Line, Lines};

/// The longest line (one message) read from a server: 16 MiB, rmcp's own
/// limit for stdio and for Streamable HTTP events.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A stdio transport for the client side of an upstream session.
pub struct StdioTransport<R, W> {
    /// The server's lines (a `receive` can be dropped mid-line by rmcp's
    /// `select!`: `Lines` keeps a partial line).
    lines: Lines<R>,
    write: Arc<tokio::sync::Mutex<Option<W>>>,
    pending: Arc<Mutex<Pending>>,
    /// Errors made up for waiting requests, delivered before reading on.
    queued: std::collections::VecDeque<RxJsonRpcMessage<RoleClient>>,
    /// The server's name, for stderr.
    name: String,
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// A transport reading `read` (the server's stdout) and writing `write`
    /// (its stdin), keeping its requests in `pending` (shared with the
    /// calls, which take their answers from it); `name` prefixes what it
    /// reports on stderr.
    pub fn new(name: &str, read: R, write: W, pending: Arc<Mutex<Pending>>) -> Self {
        StdioTransport {
            lines: Lines::new(read, MAX_LINE),
            write: Arc::new(tokio::sync::Mutex::new(Some(write))),
            pending,
            queued: Default::default(),
            name: name.to_string(),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn report(&self, what: &str) {
        eprintln!("[upstream {}] {what}", self.name);
    }

    /// Fails every request still waiting for an answer with `message`.
    fn fail_pending(&mut self, message: &str) {
        let ids: Vec<RequestId> = {
            let mut p = self.pending();
            p.calls.clear();
            p.all.drain().collect()
        };
        for id in ids {
            self.queued.push_back(JsonRpcMessage::error(
                ErrorData::internal_error(message.to_string(), None),
                Some(id),
            ));
        }
    }

    /// The message in `line`, or `None` to skip it.
    fn decode(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        // A plain `tools/call` answer: read in one pass and filed for its
        // call (answer.rs); rmcp gets an empty result for the id.
        if let Some((id, answer)) = super::answer::read(line) {
            if self.pending().file(&id, answer) {
                return Some(JsonRpcMessage::response(
                    ServerResult::CustomResult(CustomResult(Value::Null)),
                    id,
                ));
            }
        }
        let mut value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                self.report(&format!(
                    "skipped a line that is not JSON ({e}): {}",
                    crate::text::shorten(&String::from_utf8_lossy(line), 200)
                ));
                return None;
            }
        };
        let answer_id = match &value {
            Value::Object(m) if !m.contains_key("method") => m
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok()),
            _ => None,
        };
        let Some(id) = answer_id else {
            // A request or notification from the server: rmcp's types.
            let request_id = value
                .get("id")
                .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
            return match serde_json::from_value(value) {
                Ok(m) => Some(m),
                Err(e) => {
                    self.report(&format!("skipped a message rmcp cannot read: {e}"));
                    // A request gets an answer, as rmcp gives one.
                    if let Some(id) = request_id {
                        let reply = JsonRpcMessage::error(
                            ErrorData::invalid_request(
                                format!("cannot read the request: {e}"),
                                None,
                            ),
                            Some(id),
                        );
                        tokio::spawn(self.send(reply));
                    }
                    None
                }
            };
        };
        let (id, was_call) = {
            let mut p = self.pending();
            let known = [Some(id.clone()), numeric(&id)]
                .into_iter()
                .flatten()
                .find(|k| p.all.contains(k));
            match known {
                Some(k) => {
                    p.all.remove(&k);
                    let call = p.calls.remove(&k);
                    (Some(id), call)
                }
                None => (None, false),
            }
        };
        let Some(id) = id else {
            self.report(&format!(
                "skipped an answer to request {} that nothing waits for",
                value.get("id").map(Value::to_string).unwrap_or_default()
            ));
            return None;
        };
        let obj = value.as_object_mut()?;
        if let Some(error) = obj.remove("error") {
            return Some(JsonRpcMessage::error(
                serde_json::from_value::<ErrorData>(error.clone()).unwrap_or_else(|e| {
                    ErrorData::internal_error(
                        format!(
                            "the server answered with an error that is not a JSON-RPC error object ({e}): {}",
                            crate::text::shorten(&error.to_string(), 200)
                        ),
                        None,
                    )
                }),
                Some(id),
            ));
        }
        let Some(result) = obj.remove("result") else {
            return Some(JsonRpcMessage::error(
                ErrorData::internal_error(
                    "the server's answer has neither `result` nor `error`".to_string(),
                    None,
                ),
                Some(id),
            ));
        };
        if was_call {
            return Some(JsonRpcMessage::response(
                ServerResult::CustomResult(CustomResult(result)),
                id,
            ));
        }
        match serde_json::from_value::<ServerResult>(result) {
            Ok(r) => Some(JsonRpcMessage::response(r, id)),
            Err(e) => Some(JsonRpcMessage::error(
                ErrorData::internal_error(format!("the server's answer cannot be read: {e}"), None),
                Some(id),
            )),
        }
    }
}

/// `"7"` as the number 7 (rmcp matches answers that way too).
fn numeric(id: &RequestId) -> Option<RequestId> {
    match id {
        RequestId::String(s) => s.parse::<i64>().ok().map(RequestId::Number),
        RequestId::Number(_) => None,
    }
}

impl<R, W> Transport<RoleClient> for StdioTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Request(r) => {
                let mut p = self.pending();
                p.all.insert(r.id.clone());
                if matches!(r.request, ClientRequest::CallToolRequest(_)) {
                    p.calls.insert(r.id.clone());
                }
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        let mut p = self.pending();
                        p.all.remove(id);
                        p.calls.remove(id);
                    }
                }
            }
            _ => {}
        }
        // A `tools/call` is written directly (the same bytes, wire.rs).
        let bytes = match super::wire::call_line(&item) {
            Some(line) => Ok(line),
            None => serde_json::to_vec(&item).map(|mut b| {
                b.push(b'\n');
                b
            }),
        };
        let write = self.write.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let mut w = write.lock().await;
            let Some(w) = w.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            w.write_all(&bytes).await?;
            w.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if let Some(m) = self.queued.pop_front() {
                return Some(m);
            }
            match self.lines.next().await {
                Err(e) => {
                    self.report(&format!("reading its output failed: {e}"));
                    return None;
                }
                Ok(Line::End { partial }) => {
                    if partial {
                        self.report("closed its output in the middle of a message");
                    }
                    return None;
                }
                Ok(Line::TooLong) => {
                    let size = match self.lines.max() {
                        n if n % (1024 * 1024) == 0 => format!("{} MiB", n / (1024 * 1024)),
                        n => format!("{n} bytes"),
                    };
                    let limit = format!(
                        "the server sent a message over {size} (the limit); it was dropped, and the requests waiting for an answer failed"
                    );
                    self.report(&limit);
                    self.fail_pending(&limit);
                }
                Ok(Line::Read) => {
                    let line = self.lines.take();
                    let message = self.decode(&line);
                    self.lines.recycle(line);
                    if let Some(m) = message {
                        return Some(m);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
#[path = "stdio_tests.rs"]
mod tests;
