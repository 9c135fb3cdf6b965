//! Stdout for MCP over stdio, with the responses that are ready at the same
//! time written together.
//!
//! rmcp writes each message with its own `write(2)` (and a flush), behind a
//! lock. With many calls in flight that is one system call, and one wake-up
//! of the client, per response. [`coalescing`] puts a buffer and one writer
//! task in between: a message is appended to the buffer (its "flush" is the
//! hand-over), and the writer task, once the responses queued behind it on
//! the runtime have had their turn, writes everything buffered in one call.
//! A lone message on an idle server is written as soon as the writer task
//! runs, right after the task that produced it.
//!
//! Nothing is dropped: when the writer half is dropped (the session ended)
//! the task writes what is left and ends; [`serve_stdio`](super::mcp) waits
//! for it before returning. A failed write (the client went away) fails
//! every later write, which ends the session as a failed write did before.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Above this many buffered bytes a write waits for the writer task (a
/// client that stops reading must not make the buffer grow without bound).
const HIGH_WATER: usize = 1 << 20;

/// A buffer kept between writes is released when it grew past this.
const KEEP_CAPACITY: usize = 256 << 10;

#[derive(Default)]
struct State {
    buf: Vec<u8>,
    /// Set once a write to the real stdout failed.
    failed: Option<(io::ErrorKind, String)>,
    /// The writer half is gone: write what is left, then stop.
    closed: bool,
    /// The last message handed over answers the only request in flight:
    /// no other answer is coming to join it, so the writer task writes at
    /// once instead of letting the tasks queued behind it run first.
    alone: bool,
    /// Writes waiting for room in the buffer (rmcp writes one message at a
    /// time behind a lock, but every waiting write is kept, so none can be
    /// forgotten).
    room: Vec<Waker>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    ready: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }
}

/// The writer half handed to rmcp.
pub struct CoalescingWriter {
    shared: Arc<Shared>,
}

/// Wraps `inner` (stdout): returns the writer to give rmcp, and the writer
/// task, which finishes once the writer is dropped and everything handed to
/// it is written (or writing failed). Must be called inside a runtime.
pub fn coalescing<W>(inner: W) -> (CoalescingWriter, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let shared = Arc::new(Shared::default());
    let task = tokio::spawn(write_out(shared.clone(), inner));
    (CoalescingWriter { shared }, task)
}

fn failure(failed: &(io::ErrorKind, String)) -> io::Error {
    io::Error::new(failed.0, failed.1.clone())
}

impl AsyncWrite for CoalescingWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut state = self.shared.lock();
        if let Some(failed) = &state.failed {
            return Poll::Ready(Err(failure(failed)));
        }
        if state.buf.len() >= HIGH_WATER {
            if !state.room.iter().any(|w| w.will_wake(cx.waker())) {
                state.room.push(cx.waker().clone());
            }
            drop(state);
            self.shared.ready.notify_one();
            return Poll::Pending;
        }
        state.buf.extend_from_slice(buf);
        state.alone = false;
        drop(state);
        self.shared.ready.notify_one();
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Handed to the writer task, which writes it without waiting for
        // anything but the tasks queued before it.
        match &self.shared.lock().failed {
            Some(failed) => Poll::Ready(Err(failure(failed))),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}

impl CoalescingWriter {
    /// Serializes `item` as one line straight into the buffer (no copy in
    /// between) and hands it to the writer task. The returned future
    /// resolves at once, or, when the buffer is past the high-water mark
    /// (a client that stops reading), once the writer task has taken it;
    /// it fails when writing failed. Messages go out in the order of the
    /// calls, whether or not their futures are awaited. `alone`: nothing
    /// else is in flight (a sequential client's answer), so the writer
    /// task need not wait for other answers to write with it.
    pub fn send_json<T: serde::Serialize + ?Sized>(
        &self,
        item: &T,
        alone: bool,
    ) -> impl std::future::Future<Output = io::Result<()>> + Send + 'static {
        let appended = {
            let mut state = self.shared.lock();
            state.alone = alone;
            match &state.failed {
                Some(failed) => Err(failure(failed)),
                None => {
                    let start = state.buf.len();
                    match serde_json::to_writer(&mut state.buf, item) {
                        Ok(()) => {
                            state.buf.push(b'\n');
                            Ok(state.buf.len() >= HIGH_WATER)
                        }
                        Err(e) => {
                            state.buf.truncate(start);
                            Err(io::Error::new(io::ErrorKind::InvalidData, e))
                        }
                    }
                }
            }
        };
        if appended.is_ok() {
            self.shared.ready.notify_one();
        }
        let shared = self.shared.clone();
        async move {
            if !appended? {
                return Ok(());
            }
            std::future::poll_fn(|cx| {
                let mut state = shared.lock();
                if let Some(failed) = &state.failed {
                    return Poll::Ready(Err(failure(failed)));
                }
                if state.buf.len() < HIGH_WATER || state.closed {
                    return Poll::Ready(Ok(()));
                }
                if !state.room.iter().any(|w| w.will_wake(cx.waker())) {
                    state.room.push(cx.waker().clone());
                }
                Poll::Pending
            })
            .await
        }
    }
}

impl Drop for CoalescingWriter {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// The writer task: waits for data, lets the tasks already queued on the
/// runtime add theirs, writes it all at once; until closed and empty.
async fn write_out<W: AsyncWrite + Unpin>(shared: Arc<Shared>, mut inner: W) {
    let mut out = Vec::new();
    loop {
        shared.ready.notified().await;
        // Responses finishing right now append theirs before the write
        // (unless the last one answered the only request in flight).
        if !shared.lock().alone {
            tokio::task::yield_now().await;
        }
        loop {
            let closed = {
                let mut state = shared.lock();
                std::mem::swap(&mut state.buf, &mut out);
                state.room.drain(..).for_each(Waker::wake);
                state.closed
            };
            if out.is_empty() {
                if closed {
                    let _ = inner.shutdown().await;
                    return;
                }
                break;
            }
            let written = match inner.write_all(&out).await {
                Ok(()) => inner.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                let mut state = shared.lock();
                state.failed = Some((e.kind(), e.to_string()));
                state.room.drain(..).for_each(Waker::wake);
                return;
            }
            out.clear();
            if out.capacity() > KEEP_CAPACITY {
                out = Vec::new();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn everything_written_arrives_in_order_and_the_task_ends_on_drop() {
        let (near, mut far) = tokio::io::duplex(64);
        let (mut writer, task) = coalescing(near);
        let mut expected = Vec::new();
        for i in 0..2000 {
            let line = format!("{{\"id\":{i}}}\n");
            writer.write_all(line.as_bytes()).await.unwrap();
            writer.flush().await.unwrap();
            expected.extend_from_slice(line.as_bytes());
        }
        drop(writer);
        let mut got = Vec::new();
        far.read_to_end(&mut got).await.unwrap();
        task.await.unwrap();
        assert_eq!(got, expected);
    }

    #[tokio::test]
    async fn a_failed_write_fails_later_writes() {
        let (near, far) = tokio::io::duplex(8);
        drop(far);
        let (mut writer, task) = coalescing(near);
        writer.write_all(b"hello\n").await.unwrap();
        task.await.unwrap();
        let err = writer.write_all(b"again\n").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn json_lines_keep_their_order_and_wait_past_the_high_water_mark() {
        let (near, mut far) = tokio::io::duplex(1024);
        let (writer, task) = coalescing(near);
        let big = "y".repeat(64 << 10);
        let mut sent = 0usize;
        // The reader does not read: sends go on until one has to wait.
        let waiting = loop {
            let f = writer.send_json(&serde_json::json!({"n": sent, "pad": big}), false);
            sent += 1;
            let mut f = Box::pin(f);
            let done = tokio::time::timeout(std::time::Duration::from_millis(50), &mut f).await;
            if done.is_err() {
                break f;
            }
            assert!(sent < 100, "no send ever waited");
        };
        assert!(sent >= HIGH_WATER / big.len(), "{sent}");
        // Later sends are appended behind it, in order.
        let after = writer.send_json(&serde_json::json!({"n": sent}), true);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            far.read_to_end(&mut got).await.unwrap();
            got
        });
        waiting.await.unwrap();
        after.await.unwrap();
        // A value that cannot be serialized fails alone and leaves no trace.
        let mut bad = std::collections::HashMap::new();
        bad.insert((1, 2), 3);
        assert!(writer.send_json(&bad, false).await.is_err());
        drop(writer);
        task.await.unwrap();
        let got = String::from_utf8(reader.await.unwrap()).unwrap();
        let ns: Vec<u64> = got
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["n"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ns, (0..=sent as u64).collect::<Vec<_>>());
    }

    /// Records each write the writer task makes.
    #[derive(Clone, Default)]
    struct Writes(Arc<Mutex<Vec<String>>>);

    impl AsyncWrite for Writes {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.0
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(buf).into());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Two answers: the first handed over, then a task queued behind the
    /// writer task hands over the second. How many writes?
    async fn writes_for(first_alone: bool) -> Vec<String> {
        let writes = Writes::default();
        let (writer, task) = coalescing(writes.clone());
        let writer = Arc::new(writer);
        tokio::task::yield_now().await; // the writer task waits
        drop(writer.send_json(&1, first_alone));
        let w = writer.clone();
        let second = tokio::spawn(async move { w.send_json(&2, false).await });
        second.await.unwrap().unwrap();
        drop(writer);
        task.await.unwrap();
        let got = writes.0.lock().unwrap().clone();
        got
    }

    #[tokio::test]
    async fn an_answer_alone_in_flight_is_written_without_waiting_for_others() {
        // Not alone: the writer lets the queued task add its answer first.
        assert_eq!(writes_for(false).await, vec!["1\n2\n"]);
        // Alone: written at once; the second goes out in its own write.
        assert_eq!(writes_for(true).await, vec!["1\n", "2\n"]);
    }

    #[tokio::test]
    async fn a_reader_that_stops_holds_writes_at_the_high_water_mark() {
        let (near, mut far) = tokio::io::duplex(1024);
        let (mut writer, _task) = coalescing(near);
        let chunk = vec![b'x'; 64 << 10];
        let mut accepted = 0usize;
        let filled = tokio::time::timeout(std::time::Duration::from_millis(300), async {
            loop {
                writer.write_all(&chunk).await.unwrap();
                accepted += chunk.len();
            }
        })
        .await;
        assert!(filled.is_err(), "writes never waited");
        assert!(accepted <= 2 * (HIGH_WATER + chunk.len()), "{accepted}");
        // Reading lets writes continue.
        let mut sink = vec![0; 1 << 16];
        let _ = far.read(&mut sink).await.unwrap();
    }
}
