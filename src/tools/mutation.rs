//! Per-file mutation queues: two writes or edits of one file in one parallel
//! batch run one after the other, in the order they asked, so both land.
//! Different files proceed concurrently.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Queues keyed by canonical path (the resolved path when the file does not
/// exist yet), so `a.txt` and `./sub/../a.txt` share one queue.
#[derive(Debug, Default)]
pub struct MutationQueues {
    queues: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

/// Held while a file is being changed; dropping it lets the next one in.
#[derive(Debug)]
pub struct MutationGuard {
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl MutationQueues {
    /// Waits for this file's turn (FIFO: tokio's mutex is fair).
    pub async fn lock(&self, canonical: &Path) -> MutationGuard {
        let queue = {
            let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
            // Forget queues nobody holds or waits on, so the map stays small.
            queues.retain(|_, q| Arc::strong_count(q) > 1);
            queues
                .entry(canonical.to_path_buf())
                .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
                .clone()
        };
        MutationGuard {
            _guard: queue.lock_owned().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_file_is_serialized_in_order() {
        let queues = Arc::new(MutationQueues::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let first = queues.lock(Path::new("/w/a")).await;
        let mut waiters = Vec::new();
        for i in 0..3 {
            let (queues, log) = (queues.clone(), log.clone());
            waiters.push(tokio::spawn(async move {
                let _g = queues.lock(Path::new("/w/a")).await;
                log.lock().unwrap().push(i);
            }));
            // Let each waiter enqueue before the next.
            tokio::task::yield_now().await;
        }
        // Another file is not blocked by /w/a.
        let _other = queues.lock(Path::new("/w/b")).await;
        assert!(log.lock().unwrap().is_empty());
        drop(first);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2]);
    }
}
