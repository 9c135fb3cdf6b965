//! A confined command's private temporary directory (its `TMPDIR`), and a
//! small per-process pool of directories that earlier commands left empty.
//!
//! Why a pool: making a directory and removing it again on a disk file
//! system costs an inode, a journal entry and, on a mount with `discard`, a
//! discard request when its block is freed — on ext4 that was most of the
//! parent's set-up cost per command (docs/performance.md). Most commands
//! never write to `TMPDIR`, so the directory they got is still empty when
//! they end and can serve the next command as it is. A directory that is
//! not empty is removed with everything in it, as before, so no file ever
//! passes from one command to the next; the pool is only used by a process
//! that confines many commands ([`super::Plan::prepare`]), never by
//! `toolgate sandbox`, and holds at most [`POOL_MAX`] directories, which
//! the command line removes when it returns ([`remove_pooled`]).
//!
//! Why not a tmpfs such as `/dev/shm`: every confined command may write
//! there (shared memory, [`super::SYSTEM_WRITE`]), so a `TMPDIR` under it
//! would be open to every other confined command, of any policy.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// At most this many empty directories wait for reuse.
const POOL_MAX: usize = 8;

static POOL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A command's private temporary directory: mode 0700, a random name under
/// the system's temporary directory (toolgate's own `TMPDIR` when set).
/// Dropped when the command ends: back to the pool when empty and pooled,
/// otherwise removed with its contents.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
    pooled: bool,
}

impl PrivateTmp {
    /// A directory for one command; `pooled`: one an earlier command left
    /// empty when there is one, and back to the pool after.
    pub fn new(pooled: bool) -> Result<Self, String> {
        if pooled {
            loop {
                let Some(path) = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop() else {
                    break;
                };
                if reusable(&path) {
                    return Ok(Self { path, pooled });
                }
                // Changed since it was pooled (by something outside the
                // sandbox: a confined command cannot reach it meanwhile).
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("toolgate-sandbox-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| format!("the sandbox's temporary directory cannot be made: {e}"))?;
        Ok(Self {
            path: dir.keep(),
            pooled,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        if self.pooled && reusable(&self.path) {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            if pool.len() < POOL_MAX {
                pool.push(std::mem::take(&mut self.path));
                return;
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Removes the directories waiting in the pool: called when a process that
/// confined commands is done, so that none stays behind. A command still
/// running keeps its own directory, which its drop handles as always.
pub fn remove_pooled() {
    let pooled = std::mem::take(&mut *POOL.lock().unwrap_or_else(|e| e.into_inner()));
    for path in pooled {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// Still what [`PrivateTmp::new`] made: a real directory (not a symlink)
/// owned by this user, mode 0700, and empty.
fn reusable(path: &Path) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    meta.is_dir()
        && meta.uid() == me
        && meta.permissions().mode() & 0o7777 == 0o700
        && std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serialises the tests that use the process-wide pool.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// Removes what the pool holds (the test process leaves nothing behind).
    fn empty_pool() {
        remove_pooled();
    }

    #[test]
    fn an_empty_directory_is_reused_and_a_used_one_is_removed() {
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        empty_pool();
        let first = PrivateTmp::new(true).unwrap();
        let path = first.path().to_path_buf();
        drop(first);
        assert!(path.is_dir(), "an empty directory waits in the pool");
        let second = PrivateTmp::new(true).unwrap();
        assert_eq!(second.path(), path, "the empty directory is reused");
        std::fs::write(path.join("left.txt"), "x").unwrap();
        drop(second);
        assert!(!path.exists(), "a directory with files is removed");
        let third = PrivateTmp::new(true).unwrap();
        assert_ne!(third.path(), path);
        assert!(std::fs::read_dir(third.path()).unwrap().next().is_none());
        drop(third);
        empty_pool();
    }

    #[test]
    fn a_pooled_directory_that_changed_is_not_reused() {
        use std::os::unix::fs::PermissionsExt;
        let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        empty_pool();
        let first = PrivateTmp::new(true).unwrap();
        let path = first.path().to_path_buf();
        drop(first);
        // Opened up while it waited: not private any more.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let second = PrivateTmp::new(true).unwrap();
        assert_ne!(second.path(), path);
        assert!(!path.exists(), "the changed directory is removed");
        drop(second);
        empty_pool();
    }

    #[test]
    fn an_unpooled_directory_is_always_removed() {
        let dir = PrivateTmp::new(false).unwrap();
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        drop(dir);
        assert!(!path.exists());
    }
}
