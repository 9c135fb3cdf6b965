//! Hot reload with real files and real file-system events: editor saves,
//! in-place writes, broken saves, Kubernetes ConfigMap swaps, and reloads
//! under load.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolgate::executor::BatchOptions;
use toolgate::serve::{reload, Gateway, GatewayConfig};
use toolgate::{ConfigPaths, Decision, ToolCall};

const ALLOW_NOTES: &str = "version: 1\nextends: [\"builtin:default\"]\n";
const DENY_NOTES: &str =
    "version: 1\nextends: [\"builtin:default\"]\npaths:\n  deny: [\"notes.txt\"]\n";

/// A workspace with `notes.txt` and a policy folder `policies/`.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
        std::fs::create_dir(dir.path().join("policies")).unwrap();
        Setup { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn gateway(&self, policies: &Path, log: Option<PathBuf>) -> Arc<Gateway> {
        Gateway::start(GatewayConfig {
            paths: ConfigPaths {
                policies: Some(policies.to_path_buf()),
                manifests: None,
            },
            workspace: self.dir.path().to_path_buf(),
            decision_log: log,
            ..GatewayConfig::default()
        })
        .unwrap()
    }
}

fn read_notes() -> ToolCall {
    ToolCall {
        id: "r".into(),
        name: "read".into(),
        arguments: json!({"path": "notes.txt"}),
    }
}

/// Waits until `f` holds, or fails after 10 s.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for: {what}");
}

fn decision(gateway: &Gateway) -> Decision {
    gateway.eval(&read_notes()).decision
}

#[test]
fn an_editor_style_rename_save_is_picked_up() {
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let _watch = reload::watch(gateway.clone()).unwrap();
    assert_eq!(decision(&gateway), Decision::Allow);

    // Write a temporary file, then rename it over the policy (vim, VS Code).
    let tmp = s.path("policies/.main.yaml.swp");
    std::fs::write(&tmp, DENY_NOTES).unwrap();
    std::fs::rename(&tmp, &policy).unwrap();
    eventually("the renamed save to apply", || {
        decision(&gateway) == Decision::Deny
    });
    assert_eq!(gateway.status().reloads_ok, 1);
}

#[test]
fn an_in_place_write_is_picked_up() {
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let _watch = reload::watch(gateway.clone()).unwrap();
    std::fs::write(&policy, DENY_NOTES).unwrap();
    eventually("the in-place write to apply", || {
        decision(&gateway) == Decision::Deny
    });
}

#[test]
fn a_broken_save_keeps_the_last_good_policy_until_fixed() {
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, DENY_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let good = gateway.status().version;
    let _watch = reload::watch(gateway.clone()).unwrap();

    // A typo: `paths.deny` misspelled.
    std::fs::write(
        &policy,
        "version: 1\nextends: [\"builtin:default\"]\npaths:\n  denny: [\"notes.txt\"]\n",
    )
    .unwrap();
    eventually("the broken save to be rejected", || {
        gateway.status().last_reload_error.is_some()
    });
    let status = gateway.status();
    assert_eq!(status.version, good, "a rejected policy is never active");
    let error = status.last_reload_error.unwrap().join("\n");
    assert!(
        error.contains("main.yaml:4:3") && error.contains("denny"),
        "{error}"
    );
    assert_eq!(decision(&gateway), Decision::Deny, "still the old rules");

    // Fixing the file clears the error and applies the fix.
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    eventually("the fix to apply", || {
        gateway.status().last_reload_error.is_none() && decision(&gateway) == Decision::Allow
    });
    assert_ne!(gateway.status().version, good);
}

#[test]
fn a_configmap_data_symlink_swap_is_picked_up() {
    // The layout kubelet writes for a ConfigMap volume.
    let s = Setup::new();
    let mount = s.path("configmap");
    std::fs::create_dir_all(mount.join("..2026_11_30_v1")).unwrap();
    std::fs::write(mount.join("..2026_11_30_v1/main.yaml"), ALLOW_NOTES).unwrap();
    std::os::unix::fs::symlink("..2026_11_30_v1", mount.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/main.yaml", mount.join("main.yaml")).unwrap();
    let gateway = s.gateway(&mount, None);
    let _watch = reload::watch(gateway.clone()).unwrap();
    assert_eq!(decision(&gateway), Decision::Allow);

    // An update: a new timestamped directory, then `..data` swapped in one
    // rename; `main.yaml` itself never changes.
    std::fs::create_dir_all(mount.join("..2026_11_30_v2")).unwrap();
    std::fs::write(mount.join("..2026_11_30_v2/main.yaml"), DENY_NOTES).unwrap();
    std::os::unix::fs::symlink("..2026_11_30_v2", mount.join("..data_tmp")).unwrap();
    std::fs::rename(mount.join("..data_tmp"), mount.join("..data")).unwrap();
    std::fs::remove_dir_all(mount.join("..2026_11_30_v1")).unwrap();
    eventually("the ConfigMap swap to apply", || {
        decision(&gateway) == Decision::Deny
    });
}

#[test]
fn forty_reloads_during_continuous_calls_drop_nothing() {
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let log = s.path("decisions.jsonl");
    let gateway = s.gateway(&s.path("policies"), Some(log.clone()));
    let _watch = reload::watch(gateway.clone()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let made = Arc::new(AtomicUsize::new(0));
    let caller = {
        let (gateway, stop, made) = (gateway.clone(), stop.clone(), made.clone());
        runtime.spawn(async move {
            let mut results = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let r = gateway.call(read_notes(), BatchOptions::default()).await;
                results.push(r);
                made.fetch_add(1, Ordering::Relaxed);
            }
            results
        })
    };
    eventually("the first call", || made.load(Ordering::Relaxed) > 0);
    let mut applied = 0;
    for i in 0..40 {
        let before = gateway.status().reloads_ok;
        // Alternate, with a comment that makes every version distinct.
        let text = if i % 2 == 0 { DENY_NOTES } else { ALLOW_NOTES };
        std::fs::write(&policy, format!("# revision {i}\n{text}")).unwrap();
        eventually("each reload to apply", || {
            gateway.status().reloads_ok > before
        });
        applied += 1;
        // Calls keep running across every reload: at least one more after
        // this one (a reload takes only tens of milliseconds now).
        let calls = made.load(Ordering::Relaxed);
        eventually("a call after the reload", || {
            made.load(Ordering::Relaxed) > calls
        });
    }
    stop.store(true, Ordering::Relaxed);
    let results = runtime.block_on(caller).unwrap();
    assert_eq!(applied, 40);
    assert!(results.len() > 40, "calls kept flowing: {}", results.len());

    // Zero failed calls: each one was either read or denied by the policy
    // version it ran under — never "not found", never a tool error.
    let mut by_version: BTreeMap<String, BTreeSet<bool>> = BTreeMap::new();
    for r in &results {
        let denied = r.is_error;
        if denied {
            assert!(
                r.text().contains("notes.txt"),
                "a call failed for another reason: {}",
                r.text()
            );
        } else {
            assert_eq!(r.text(), "hello\n");
        }
        by_version
            .entry(r.policy_version.clone())
            .or_default()
            .insert(denied);
    }
    assert!(by_version.len() > 2, "calls ran under several versions");
    assert!(
        by_version.values().all(|outcomes| outcomes.len() == 1),
        "one version, one outcome: {by_version:?}"
    );

    // Every decision is logged with the version that made it.
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), results.len());
    for (line, result) in lines.iter().zip(&results) {
        assert_eq!(line["policy_version"], result.policy_version.as_str());
        let expected = if result.is_error { "deny" } else { "allow" };
        assert_eq!(line["decision"], expected, "{line}");
    }
}

/// Waits a while for any reload a save might still cause, then says how
/// many the watcher made and that none was rejected.
fn settle_and_count(gateway: &Gateway, watch: &reload::ReloadHandle) -> u64 {
    std::thread::sleep(reload::WRITE_QUIET * 3);
    assert_eq!(
        gateway.status().reloads_failed,
        0,
        "no half-save was loaded"
    );
    watch.attempts()
}

#[test]
fn a_vim_style_save_is_one_reload() {
    use std::io::Write;
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    let backup = s.path("policies/main.yaml~");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let watch = reload::watch(gateway.clone()).unwrap();

    // What vim (`backupcopy=auto`, `writebackup`) does: probe the folder
    // with a file named 4913, rename the original away as the backup, write
    // the new file (slowly: more than the quiet period between its writes,
    // as a large file or an fsync takes), close it, set its mode, remove
    // the backup. Halfway, the folder has no policy file at all, then a
    // policy without the deny.
    let probe = s.path("policies/4913");
    std::fs::write(&probe, "").unwrap();
    std::fs::remove_file(&probe).unwrap();
    std::fs::rename(&policy, &backup).unwrap();
    let mut file = std::fs::File::create(&policy).unwrap();
    let (head, tail) = DENY_NOTES.split_at(DENY_NOTES.find("paths").unwrap());
    file.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(reload::QUIET * 3);
    file.write_all(tail.as_bytes()).unwrap();
    file.sync_all().unwrap();
    drop(file);
    let mode = std::fs::metadata(&backup).unwrap().permissions();
    std::fs::set_permissions(&policy, mode).unwrap();
    std::fs::remove_file(&backup).unwrap();

    eventually("the save to apply", || decision(&gateway) == Decision::Deny);
    assert_eq!(
        settle_and_count(&gateway, &watch),
        1,
        "one save, one reload"
    );
    assert_eq!(gateway.status().reloads_ok, 1);
}

#[test]
fn a_slow_in_place_save_is_one_reload() {
    use std::io::Write;
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let watch = reload::watch(gateway.clone()).unwrap();

    // Truncate and write in three pieces with pauses longer than the quiet
    // period; each prefix is a valid policy of its own.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&policy)
        .unwrap();
    for piece in [ALLOW_NOTES, "paths:\n", "  deny: [\"notes.txt\"]\n"] {
        file.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(reload::QUIET * 3);
    }
    drop(file);

    eventually("the save to apply", || decision(&gateway) == Decision::Deny);
    assert_eq!(
        settle_and_count(&gateway, &watch),
        1,
        "one save, one reload"
    );
    assert_eq!(gateway.status().reloads_ok, 1);
}

#[test]
fn a_burst_of_quick_saves_is_one_reload_of_the_last() {
    let s = Setup::new();
    let policy = s.path("policies/main.yaml");
    std::fs::write(&policy, ALLOW_NOTES).unwrap();
    let gateway = s.gateway(&s.path("policies"), None);
    let watch = reload::watch(gateway.clone()).unwrap();

    // Five rename saves (temp file, rename) back to back, as a
    // format-on-save or a script writing several times does.
    for i in 0..5 {
        let tmp = s.path(&format!("policies/.main.yaml.{i}.tmp"));
        let text = if i % 2 == 0 { DENY_NOTES } else { ALLOW_NOTES };
        std::fs::write(&tmp, format!("# save {i}\n{text}")).unwrap();
        std::fs::rename(&tmp, &policy).unwrap();
    }
    eventually("the last save to apply", || {
        decision(&gateway) == Decision::Deny
    });
    assert_eq!(
        settle_and_count(&gateway, &watch),
        1,
        "one burst, one reload"
    );
    assert!(std::fs::read_to_string(&policy)
        .unwrap()
        .starts_with("# save 4"));
}
