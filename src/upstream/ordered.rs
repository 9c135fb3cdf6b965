//! Keeps an upstream's progress notifications ahead of the result they
//! precede. rmcp reads messages in order but runs each notification handler
//! as a task of its own, while it hands a response straight to the waiting
//! request; so a tool's last `notifications/progress`, sent just before its
//! result, could be handled after the call had already returned (and been
//! lost). [`Counted`] counts each progress notification per token as the
//! transport reads it, in order; the handler counts those it has handled;
//! a call that got its response waits (briefly, bounded) until the two
//! agree (`settle`). A call whose server reports no progress does not wait.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{JsonRpcMessage, ProgressToken, ServerNotification};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// Progress notifications per token: read from the transport, handled.
#[derive(Clone, Default)]
pub struct ProgressCounts(Arc<Mutex<HashMap<ProgressToken, (u64, u64)>>>);

/// The longest a call waits for its progress handlers.
const SETTLE: Duration = Duration::from_secs(1);

impl ProgressCounts {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<ProgressToken, (u64, u64)>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// One more handled for `token`.
    pub fn handled(&self, token: &ProgressToken) {
        self.with(|m| m.entry(token.clone()).or_default().1 += 1);
    }

    /// Waits until every progress notification read for `token` has been
    /// handled (at most [`SETTLE`]), then forgets the token.
    pub async fn settle(&self, token: &ProgressToken) {
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let (read, handled) = self.with(|m| m.get(token).copied().unwrap_or_default());
            if handled >= read || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        self.forget(token);
    }

    /// Drops `token`'s counts (the call ended).
    pub fn forget(&self, token: &ProgressToken) {
        self.with(|m| m.remove(token));
    }
}

/// A transport that counts the progress notifications it reads.
pub struct Counted<T> {
    inner: T,
    counts: ProgressCounts,
}

impl<T> Counted<T> {
    /// Wraps `inner`, counting into `counts`.
    pub fn new(inner: T, counts: ProgressCounts) -> Counted<T> {
        Counted { inner, counts }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Counted<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message {
            if let ServerNotification::ProgressNotification(p) = &n.notification {
                let token = p.params.progress_token.clone();
                self.counts.with(|m| m.entry(token).or_default().0 += 1);
            }
        }
        message
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
