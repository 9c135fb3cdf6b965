//! Hot reload: the policy follows its files, without a restart.
//!
//! What is watched is the *directories* holding the configuration, not the
//! files: editors save by writing a new file and renaming it over the old
//! one (a watch on the old file would be left on a deleted inode), and
//! Kubernetes updates a ConfigMap volume by swapping its `..data` symlink to
//! a new directory in one rename. Watching the parent directories sees all
//! of these as events in the directory.
//!
//! Events are gathered into bursts (an editor's save is several events: a
//! temporary file written and renamed over the old one, a backup renamed
//! away and removed, a chmod), and a burst is acted on once it has settled:
//! [`QUIET`] after its last event when no file is half-written, or
//! [`WRITE_QUIET`] after the last write to a file that was modified and not
//! yet closed, renamed away or removed (a save that pauses between writes,
//! or an `fsync` before the close). A stream of events that never pauses
//! is acted on [`MAX_DELAY`] after its first event, unless a file is still
//! being written, and any burst after [`MAX_HOLD`]. Then the configuration is compiled on the watcher's own
//! thread — never on a request path — and swapped in atomically only when
//! it compiles; a broken save keeps the last good policy and is reported in
//! `/status` and on stderr. SIGHUP forces a reload. Running batches finish
//! on the snapshot they started with (see [`crate::executor`]).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use super::{Gateway, ReloadOutcome};

/// How long a burst of events must be quiet before the configuration is
/// reloaded, when no file is half-written.
pub const QUIET: Duration = Duration::from_millis(20);

/// How long a file that was modified and not yet closed must stay untouched
/// before a reload (the debounce every event used to get).
pub const WRITE_QUIET: Duration = Duration::from_millis(100);

/// The longest a burst without half-written files can put a reload off.
pub const MAX_DELAY: Duration = Duration::from_millis(500);

/// The longest any burst can put a reload off: a file that some program
/// keeps appending to without closing it (a log in a watched folder) must
/// not hold policy changes back for ever.
pub const MAX_HOLD: Duration = Duration::from_secs(2);

type SharedWatcher = Arc<Mutex<RecommendedWatcher>>;

/// Keeps the watcher (and the SIGHUP listener) running while held.
pub struct ReloadHandle {
    _watcher: SharedWatcher,
    attempts: Arc<AtomicU64>,
    sighup: Option<tokio::task::JoinHandle<()>>,
}

impl ReloadHandle {
    /// How many times file changes made the watcher reload (applied,
    /// unchanged or rejected; SIGHUP not counted): one per settled burst.
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Relaxed)
    }
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
    let (tx, rx) = std::sync::mpsc::channel::<notify::Result<Event>>();
    let watcher: SharedWatcher = Arc::new(Mutex::new(
        notify::recommended_watcher(tx).map_err(std::io::Error::other)?,
    ));
    let watched: Arc<Mutex<BTreeSet<PathBuf>>> = Arc::default();
    watch_dirs(&gateway, &watcher, &watched)?;
    let attempts = Arc::new(AtomicU64::new(0));

    // The thread ends when the watcher, and with it the sender, is dropped.
    let settle = Settler {
        gateway: gateway.clone(),
        watcher: Arc::downgrade(&watcher),
        watched,
        attempts: attempts.clone(),
    };
    std::thread::Builder::new()
        .name("toolgate-reload".into())
        .spawn(move || settle.run(rx))?;

    let sighup = tokio::runtime::Handle::try_current()
        .ok()
        .and_then(|rt| spawn_sighup(&rt, gateway));
    Ok(ReloadHandle {
        _watcher: watcher,
        attempts,
        sighup,
    })
}

/// The watcher's thread: gathers events into bursts and reloads once each
/// has settled.
struct Settler {
    gateway: Arc<Gateway>,
    watcher: Weak<Mutex<RecommendedWatcher>>,
    watched: Arc<Mutex<BTreeSet<PathBuf>>>,
    attempts: Arc<AtomicU64>,
}

impl Settler {
    fn run(self, events: Receiver<notify::Result<Event>>) {
        let mut burst = Burst::default();
        loop {
            let received = match burst.due() {
                None => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(due) => events.recv_timeout(due.saturating_duration_since(Instant::now())),
            };
            match received {
                Ok(event) => burst.note(event.as_ref().ok(), Instant::now()),
                Err(RecvTimeoutError::Timeout) => {
                    burst = Burst::default();
                    self.attempts.fetch_add(1, Ordering::Relaxed);
                    if let ReloadOutcome::Applied { .. } =
                        reload_and_report(&self.gateway, "files changed")
                    {
                        // Extends may bring in files from new directories.
                        let Some(watcher) = self.watcher.upgrade() else {
                            return;
                        };
                        if let Err(e) = watch_dirs(&self.gateway, &watcher, &self.watched) {
                            eprintln!("toolgate: reload: cannot watch a new directory: {e}");
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// The events not yet acted on.
#[derive(Default, Debug)]
struct Burst {
    /// When the first and the latest event came; `None` when there is none.
    span: Option<(Instant, Instant)>,
    /// Files modified and not yet closed, renamed away or removed, with
    /// when each was last modified.
    writing: HashMap<PathBuf, Instant>,
}

impl Burst {
    /// Takes in one event (`None`: the watcher reported an error, which may
    /// mean lost events, so it counts as a change).
    fn note(&mut self, event: Option<&Event>, now: Instant) {
        if let Some(event) = event {
            match &event.kind {
                // Opening or reading a file changes nothing (the reload's
                // own reads are among these).
                EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                    self.done_writing(&event.paths)
                }
                EventKind::Access(_) => return,
                EventKind::Create(CreateKind::File) | EventKind::Modify(ModifyKind::Data(_)) => {
                    for path in &event.paths {
                        self.writing.insert(path.clone(), now);
                    }
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
                    // A half-written file renamed stays half-written.
                    if let [from, to] = event.paths.as_slice() {
                        if let Some(at) = self.writing.remove(from) {
                            self.writing.insert(to.clone(), at);
                        }
                    }
                }
                EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => {
                    self.done_writing(&event.paths)
                }
                _ => {}
            }
        }
        self.span = Some(match self.span {
            Some((first, _)) => (first, now),
            None => (now, now),
        });
    }

    fn done_writing(&mut self, paths: &[PathBuf]) {
        for path in paths {
            self.writing.remove(path);
        }
    }

    /// When to reload if nothing else happens; `None` when nothing is pending.
    fn due(&self) -> Option<Instant> {
        let (first, last) = self.span?;
        let settled = (last + QUIET).min(first + MAX_DELAY);
        Some(match self.writing.values().max() {
            Some(&written) => settled.max(written + WRITE_QUIET).min(first + MAX_HOLD),
            None => settled,
        })
    }
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
    watcher: &Mutex<RecommendedWatcher>,
    watched: &Mutex<BTreeSet<PathBuf>>,
) -> std::io::Result<()> {
    let mut watched = watched.lock().unwrap_or_else(|e| e.into_inner());
    let mut watcher = watcher.lock().unwrap_or_else(|e| e.into_inner());
    for dir in config_dirs(gateway) {
        if watched.contains(&dir) {
            continue;
        }
        watcher
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

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{DataChange, MetadataKind, RemoveKind};

    fn event(kind: EventKind, paths: &[&str]) -> Event {
        paths
            .iter()
            .fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p)))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn nothing_pending_until_an_event_and_reads_do_not_count() {
        let t = Instant::now();
        let mut b = Burst::default();
        assert_eq!(b.due(), None);
        b.note(
            Some(&event(EventKind::Access(AccessKind::Read), &["p/a.yaml"])),
            t,
        );
        b.note(
            Some(&event(
                EventKind::Access(AccessKind::Close(AccessMode::Read)),
                &["p/a.yaml"],
            )),
            t,
        );
        assert_eq!(b.due(), None, "the reload's own reads are not changes");
    }

    #[test]
    fn a_rename_save_settles_after_the_quiet_period() {
        // Write a temporary file, close it, rename it over the policy, chmod.
        let t = Instant::now();
        let mut b = Burst::default();
        b.note(
            Some(&event(EventKind::Create(CreateKind::File), &["p/.a.swp"])),
            t,
        );
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        b.note(Some(&event(data, &["p/.a.swp"])), t + ms(1));
        let close = EventKind::Access(AccessKind::Close(AccessMode::Write));
        b.note(Some(&event(close, &["p/.a.swp"])), t + ms(2));
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        let to = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        b.note(Some(&event(from, &["p/.a.swp"])), t + ms(3));
        b.note(Some(&event(to, &["p/a.yaml"])), t + ms(3));
        b.note(Some(&event(both, &["p/.a.swp", "p/a.yaml"])), t + ms(3));
        let chmod = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Permissions));
        b.note(Some(&event(chmod, &["p/a.yaml"])), t + ms(4));
        assert_eq!(b.due(), Some(t + ms(4) + QUIET));
    }

    #[test]
    fn a_half_written_file_holds_the_reload_for_the_write_quiet_period() {
        let t = Instant::now();
        let mut b = Burst::default();
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        b.note(Some(&event(data, &["p/a.yaml"])), t);
        assert_eq!(b.due(), Some(t + WRITE_QUIET), "no close yet");
        // Another file's event does not release it (it only adds its own
        // quiet period), nor does the cap.
        let chmod = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any));
        b.note(Some(&event(chmod, &["p/b.yaml"])), t + ms(50));
        assert_eq!(b.due(), Some(t + WRITE_QUIET));
        b.note(Some(&event(chmod, &["p/b.yaml"])), t + ms(90));
        assert_eq!(b.due(), Some(t + ms(90) + QUIET));
        b.note(Some(&event(data, &["p/a.yaml"])), t + ms(480));
        assert_eq!(b.due(), Some(t + ms(480) + WRITE_QUIET), "written again");
        // The close makes it a settled burst again (capped by now).
        let close = EventKind::Access(AccessKind::Close(AccessMode::Write));
        b.note(Some(&event(close, &["p/a.yaml"])), t + ms(485));
        assert_eq!(b.due(), Some(t + MAX_DELAY));
    }

    #[test]
    fn renaming_away_or_removing_ends_a_write_and_a_renamed_one_stays_open() {
        let t = Instant::now();
        let mut b = Burst::default();
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        b.note(Some(&event(data, &["p/a"])), t);
        b.note(Some(&event(data, &["p/b"])), t);
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        b.note(Some(&event(both, &["p/a", "p/c"])), t + ms(1));
        assert!(b.writing.contains_key(Path::new("p/c")));
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        b.note(Some(&event(from, &["p/c"])), t + ms(2));
        b.note(
            Some(&event(EventKind::Remove(RemoveKind::File), &["p/b"])),
            t + ms(3),
        );
        assert_eq!(b.due(), Some(t + ms(3) + QUIET));
    }

    #[test]
    fn a_file_written_for_ever_holds_the_reload_no_longer_than_the_hold_cap() {
        let t = Instant::now();
        let mut b = Burst::default();
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        for i in 0..300 {
            b.note(Some(&event(data, &["p/app.log"])), t + ms(10 * i));
        }
        assert_eq!(b.due(), Some(t + MAX_HOLD));
    }

    #[test]
    fn a_stream_without_pauses_is_capped_and_an_error_counts_as_a_change() {
        let t = Instant::now();
        let mut b = Burst::default();
        b.note(None, t);
        assert_eq!(b.due(), Some(t + QUIET));
        let chmod = EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any));
        for i in 1..100 {
            b.note(Some(&event(chmod, &["p/log"])), t + ms(10 * i));
        }
        assert_eq!(b.due(), Some(t + MAX_DELAY));
    }
}
