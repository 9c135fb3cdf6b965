//! Hot reload: the policy follows its files, without a restart.
//!
//! What is watched is the *directories* holding the configuration, not the
//! files: editors save by writing a new file and renaming it over the old
//! one (a watch on the old file would be left on a deleted inode), and
//! Kubernetes updates a ConfigMap volume by swapping its `..data` symlink to
//! a new directory in one rename. Watching the parent directories sees all
//! of these as events in the directory.
//!
//! Events are debounced (editors write a file in several steps), then the
//! configuration is compiled on the watcher's own thread — never on a
//! request path — and swapped in atomically only when it compiles; a broken
//! save keeps the last good policy and is reported in `/status` and on
//! stderr. SIGHUP forces a reload. Running batches finish on the snapshot
//! they started with (see [`crate::executor`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

use super::{Gateway, ReloadOutcome};

/// How long the configuration must be quiet before it is reloaded.
pub const DEBOUNCE: Duration = Duration::from_millis(100);

/// Keeps the watcher (and the SIGHUP listener) running while held.
pub struct ReloadHandle {
    _debouncer: Arc<Mutex<Debouncer<RecommendedWatcher, RecommendedCache>>>,
    sighup: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for ReloadHandle {
    fn drop(&mut self) {
        if let Some(task) = self.sighup.take() {
            task.abort();
        }
    }
}

/// Starts reloading `gateway` when its configuration changes, and on SIGHUP
/// when called inside a tokio runtime.
pub fn watch(gateway: Arc<Gateway>) -> std::io::Result<ReloadHandle> {
    let watched: Arc<Mutex<BTreeSet<PathBuf>>> = Arc::default();
    let handler_gateway = gateway.clone();
    let (applied_tx, applied_rx) = std::sync::mpsc::channel::<()>();
    let debouncer = new_debouncer(DEBOUNCE, None, move |events: DebounceEventResult| {
        let relevant = match &events {
            Ok(events) => events.iter().any(|e| !e.kind.is_access()),
            Err(_) => true,
        };
        if relevant {
            if let ReloadOutcome::Applied { .. } =
                reload_and_report(&handler_gateway, "files changed")
            {
                let _ = applied_tx.send(());
            }
        }
    })
    .map_err(std::io::Error::other)?;
    let debouncer = Arc::new(Mutex::new(debouncer));
    watch_dirs(&gateway, &debouncer, &watched)?;

    // Extends may bring in files from new directories: watch them too. The
    // thread ends when the debouncer (and with it the sender) is dropped.
    let (dir_gateway, dir_debouncer, dir_watched) =
        (gateway.clone(), Arc::downgrade(&debouncer), watched.clone());
    std::thread::Builder::new()
        .name("toolgate-reload-dirs".into())
        .spawn(move || {
            while applied_rx.recv().is_ok() {
                let Some(debouncer) = dir_debouncer.upgrade() else {
                    return;
                };
                if let Err(e) = watch_dirs(&dir_gateway, &debouncer, &dir_watched) {
                    eprintln!("toolgate: reload: cannot watch a new directory: {e}");
                }
            }
        })?;

    let sighup = tokio::runtime::Handle::try_current()
        .ok()
        .and_then(|rt| spawn_sighup(&rt, gateway));
    Ok(ReloadHandle {
        _debouncer: debouncer,
        sighup,
    })
}

/// The directories to watch: the policy folder (or a policy file's folder),
/// the manifest folder, and the folder of every file the active policy was
/// compiled from. Missing ones are skipped (the embedded defaults apply).
pub fn config_dirs(gateway: &Gateway) -> BTreeSet<PathBuf> {
    let config = gateway.config();
    let mut dirs = BTreeSet::new();
    let mut add = |path: &Path| {
        let dir = if path.is_dir() {
            Some(path.to_path_buf())
        } else {
            path.parent().map(Path::to_path_buf)
        };
        if let Some(dir) = dir.filter(|d| d.is_dir()) {
            dirs.insert(dir);
        }
    };
    let policies = config
        .paths
        .policies
        .clone()
        .unwrap_or_else(|| PathBuf::from("policies"));
    let manifests = config
        .paths
        .manifests
        .clone()
        .unwrap_or_else(|| PathBuf::from("tool-manifests"));
    add(&policies);
    add(&manifests);
    for file in gateway.policy().files.iter() {
        if !file.starts_with("builtin:") && !file.starts_with("<") {
            add(Path::new(file));
        }
    }
    dirs
}

fn watch_dirs(
    gateway: &Gateway,
    debouncer: &Mutex<Debouncer<RecommendedWatcher, RecommendedCache>>,
    watched: &Mutex<BTreeSet<PathBuf>>,
) -> std::io::Result<()> {
    let mut watched = watched.lock().unwrap_or_else(|e| e.into_inner());
    let mut debouncer = debouncer.lock().unwrap_or_else(|e| e.into_inner());
    for dir in config_dirs(gateway) {
        if watched.contains(&dir) {
            continue;
        }
        debouncer
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(std::io::Error::other)?;
        watched.insert(dir);
    }
    Ok(())
}

fn spawn_sighup(
    rt: &tokio::runtime::Handle,
    gateway: Arc<Gateway>,
) -> Option<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let _guard = rt.enter();
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("toolgate: reload: SIGHUP will not reload: {e}");
            return None;
        }
    };
    Some(rt.spawn(async move {
        while hangups.recv().await.is_some() {
            let gateway = gateway.clone();
            let _ =
                tokio::task::spawn_blocking(move || reload_and_report(&gateway, "SIGHUP")).await;
        }
    }))
}

/// Reloads and says what happened on stderr (the log an operator tails).
pub fn reload_and_report(gateway: &Gateway, why: &str) -> ReloadOutcome {
    let outcome = gateway.reload();
    match &outcome {
        ReloadOutcome::Applied {
            version,
            tools_changed,
        } => eprintln!(
            "toolgate: reload ({why}): policy {version} active{}",
            if *tools_changed {
                "; the tool list changed"
            } else {
                ""
            }
        ),
        ReloadOutcome::Unchanged => {}
        ReloadOutcome::Rejected(diags) => {
            eprint!("{}", diags.to_human());
            eprintln!(
                "toolgate: reload ({why}): rejected; policy {} stays active",
                gateway.policy().version
            );
        }
    }
    outcome
}
