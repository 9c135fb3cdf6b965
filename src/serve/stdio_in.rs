//! The MCP server transport over stdio: one JSON-RPC message per line each
//! way, as rmcp's `AsyncRwTransport` does, with a `tools/call` request read
//! straight into rmcp's `CallToolRequest` and every answer serialized
//! straight into [`stdio_out`](super::stdio_out)'s buffer.
//!
//! rmcp decodes an incoming line as an untagged union of the four JSON-RPC
//! shapes, and a request's body as an untagged union of some twenty request
//! types: serde buffers the message (twice: the shape check and the union)
//! and tries each type in turn until `tools/call` matches. A line that
//! mentions `tools/call` is read here as a `tools/call` request directly,
//! in one pass (`jsonrpc`, `id`, `method`, `params`, no `result`/`error`);
//! that is the message rmcp's decoder produces for it, field for field (a
//! unit test compares both on many shapes). Any line that does not read that way — and every other
//! message — goes through rmcp's own decoder (`JsonRpcMessageCodec`), and is
//! treated as `AsyncRwTransport` treats it:
//!
//! - a line over [`MAX_LINE`] (rmcp's 16 MiB) is dropped, logged;
//! - an empty line, a line that is not JSON, or a notification rmcp ignores
//!   is skipped without an answer;
//! - JSON of the wrong shape gets an "Invalid request" error without an id;
//! - the end of input (or a read error) ends the session; an unfinished
//!   last line is dropped.
//!
//! Only the wire format is read here: what a call means is decided by the
//! handler and the executor, as for every other message.

use memchr::memmem;
use std::collections::HashSet;
use std::sync::LazyLock;

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientNotification,
    ClientRequest, ErrorData, InputResponses, JsonObject, JsonRpcMessage, JsonRpcVersion2_0,
    RequestId, RequestMetaObject,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use rmcp::transport::Transport;
use serde::Deserialize;
use tokio::io::AsyncRead;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

use super::stdio_out::CoalescingWriter;
use crate::lines::{Line, Lines};

/// The longest line (one message) read from the client: rmcp's limit for
/// stdio (`DEFAULT_MAX_LINE_LENGTH`, 16 MiB).
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The MCP server transport over a reader (stdin) and the coalescing
/// writer (stdout).
pub struct StdioServerTransport<R> {
    /// The client's lines (rmcp polls `receive` in a `select!` and may drop
    /// it mid-line: `Lines` keeps a partial line).
    lines: Lines<R>,
    /// `None` once closed.
    write: Option<CoalescingWriter>,
    /// rmcp's own decoder, for every message that is not a plain
    /// `tools/call`.
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    /// Requests read and not answered yet (so an answer knows whether it
    /// is the only one in flight).
    in_flight: HashSet<RequestId>,
}

/// Whether a field was present, whatever its value (rmcp's shape check
/// looks at keys only: `"result": null` is still a result).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// A `tools/call` request as rmcp's decoder reads it — rmcp's request
/// shape (`method` and `id`, neither `result` nor `error`) with that method
/// — in one pass over the line, without buffering any part of it.
#[derive(Deserialize)]
struct CallLine {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(dead_code)]
    method: CallToolRequestMethod,
    params: CallParams,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// `CallToolRequestParams` with its `_meta`, which rmcp moves into the
/// request's extensions.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams {
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

/// The finder for `tools/call`, built once.
static TOOLS_CALL: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"tools/call"));

/// `line` (without its newline and BOM) as a `tools/call` request, or
/// `None` when it is anything else or does not read as one: then rmcp's
/// decoder reads it.
pub fn decode_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    // Other messages skip the read below.
    TOOLS_CALL.find(line)?;
    let call: CallLine = serde_json::from_slice(line).ok()?;
    if call.result.0 || call.error.0 {
        return None;
    }
    let p = call.params;
    let mut params = CallToolRequestParams::new(p.name);
    params.arguments = p.arguments;
    params.input_responses = p.input_responses;
    params.request_state = p.request_state;
    let mut request = CallToolRequest::new(params);
    if let Some(meta) = p.meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    Some(JsonRpcMessage::request(
        ClientRequest::CallToolRequest(request),
        call.id,
    ))
}

/// What rmcp's decoder makes of one line.
pub enum Decoded {
    /// A message for the service (boxed: the other variants are empty).
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to do (not JSON, or a notification rmcp ignores).
    Skip,
    /// JSON of the wrong shape: answer "Invalid request".
    Invalid,
}

/// `line` (without its newline) read by rmcp's decoder, classified as
/// `AsyncRwTransport` classifies it.
pub fn decode_with_rmcp(
    codec: &mut JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    line: &[u8],
) -> Decoded {
    let mut buf = BytesMut::with_capacity(line.len() + 1);
    buf.extend_from_slice(line);
    buf.extend_from_slice(b"\n");
    match codec.decode(&mut buf) {
        Ok(Some(m)) => Decoded::Message(Box::new(m)),
        Ok(None) => Decoded::Skip,
        Err(JsonRpcMessageCodecError::Serde(e)) => match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                tracing::debug!("ignoring an unparsable message: {e}");
                Decoded::Skip
            }
            serde_json::error::Category::Data | serde_json::error::Category::Io => {
                tracing::debug!("protocol error on an incoming message: {e}");
                Decoded::Invalid
            }
        },
        Err(e) => {
            tracing::debug!("ignoring an unreadable message: {e}");
            Decoded::Skip
        }
    }
}

impl<R: AsyncRead + Send + Unpin> StdioServerTransport<R> {
    /// A transport reading requests from `read` and writing answers to
    /// `write`.
    pub fn new(read: R, write: CoalescingWriter) -> Self {
        StdioServerTransport {
            lines: Lines::new(read, MAX_LINE),
            write: Some(write),
            codec: JsonRpcMessageCodec::default(),
            in_flight: HashSet::new(),
        }
    }

    /// Keeps `in_flight` current for a message read.
    fn track(&mut self, m: &RxJsonRpcMessage<RoleServer>) {
        match m {
            JsonRpcMessage::Request(r) => {
                self.in_flight.insert(r.id.clone());
            }
            JsonRpcMessage::Notification(n) => {
                // A cancelled request gets no answer.
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        self.in_flight.remove(id);
                    }
                }
            }
            _ => {}
        }
    }

    /// The message in `raw` (a line read), or `None` to read on.
    fn decode(&mut self, raw: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
        let line = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        if line.is_empty() {
            return None;
        }
        if let Some(m) = decode_call(line) {
            return Some(m);
        }
        match decode_with_rmcp(&mut self.codec, raw) {
            Decoded::Message(m) => Some(*m),
            Decoded::Skip => None,
            Decoded::Invalid => {
                let answer = TxJsonRpcMessage::<RoleServer>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if let Some(w) = &self.write {
                    // Written in order before anything read later is
                    // answered; a failed write ends the session at the next
                    // send, as it does for any answer.
                    drop(w.send_json(&answer, false));
                }
                None
            }
        }
    }
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for StdioServerTransport<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let alone =
            answered.is_some_and(|id| self.in_flight.remove(id)) && self.in_flight.is_empty();
        let sent = self.write.as_ref().map(|w| w.send_json(&item, alone));
        async move {
            match sent {
                Some(sent) => sent.await,
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.lines.next().await {
                Err(e) => {
                    tracing::error!("error reading stdin: {e}");
                    return None;
                }
                // An unfinished last line is not a message.
                Ok(Line::End { .. }) => return None,
                Ok(Line::TooLong) => {
                    tracing::error!(
                        max_line_length = self.lines.max(),
                        "an incoming message exceeded the maximum line length; it was dropped"
                    );
                }
                Ok(Line::Read) => {
                    let line = self.lines.take();
                    let message = self.decode(&line);
                    self.lines.recycle(line);
                    if let Some(m) = message {
                        self.track(&m);
                        return Some(m);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.take());
        Ok(())
    }
}

#[cfg(test)]
#[path = "stdio_in_tests.rs"]
mod tests;
