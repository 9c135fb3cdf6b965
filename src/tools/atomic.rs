//! Atomic file replacement beneath a capability directory.
//!
//! A write that is interrupted — the process killed, the machine losing power
//! — must leave either the old file or the new one, never a mix: a half-written
//! source file is worse than a failed call. So the new bytes go to a temporary
//! file in the same directory, are flushed to disk, and then renamed over the
//! target in one step (`rename` is atomic within a file system); finally the
//! directory is flushed so the rename itself survives a crash.
//!
//! Every step goes through the capability directory: the temporary file is
//! created and renamed *relative to the target's directory handle*, which was
//! opened beneath the sandbox root, so a symlink swapped in after the policy
//! check cannot redirect the write outside it.
//!
//! The price of replacing instead of overwriting: the file gets a new inode,
//! so another hard link to it keeps the old content, and its owner is kept
//! only where we may `chown` (as root, or to our own user).

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{
    Dir, Metadata, MetadataExt, OpenOptions, OpenOptionsExt, Permissions, PermissionsExt,
};

/// Distinguishes the temporary files of concurrent writes in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Prefix of every temporary file; a crash can leave one behind, and the
/// leading dot keeps it out of ordinary listings.
pub const TEMP_PREFIX: &str = ".toolgate-";
/// Suffix of every temporary file.
pub const TEMP_SUFFIX: &str = ".tmp";

/// Replaces the file at `rel` (relative to `root`) with `contents`, atomically.
///
/// - A symlink at `rel` is written through, as a plain write would: its
///   target (which must lie beneath `root`) is replaced, the link stays.
/// - An existing file keeps its permission bits; it must be writable, as an
///   in-place write would require, so a read-only file is not replaced.
/// - The parent directory must exist (the write tool creates it first).
pub fn replace_file(root: &Dir, rel: &Path, contents: &[u8]) -> io::Result<()> {
    let target = follow_final_symlink(root, rel)?;
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?
        .to_os_string();
    let parent = root.open_dir(parent_of(&target))?;
    let existing = match parent.metadata(&name) {
        Ok(meta) => Some(check_replaceable(&parent, &name, meta)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };

    let (mut file, temp_name) = create_temp(&parent, &name, existing.as_ref())?;
    let written = (|| {
        file.write_all(contents)?;
        if let Some(meta) = &existing {
            // Best effort: only root may give a file to someone else.
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            // The creation mode was filtered by the umask; restore it.
            file.set_permissions(Permissions::from_mode(kept_mode(meta)))?;
        }
        file.sync_all()?;
        drop(file);
        parent.rename(&temp_name, &parent, &name)
    })();
    if let Err(e) = written {
        // Best effort: the error that matters is the one being returned.
        let _ = parent.remove_file(&temp_name);
        return Err(e);
    }
    sync_dir(&parent)
}

/// The path a write to `rel` lands on: `rel` itself, or where the symlink at
/// `rel` leads (resolved beneath `root`; an escape is refused by cap-std).
fn follow_final_symlink(root: &Dir, rel: &Path) -> io::Result<PathBuf> {
    match root.symlink_metadata(rel) {
        Ok(meta) if meta.file_type().is_symlink() => root.canonicalize(rel),
        _ => Ok(rel.to_path_buf()),
    }
}

/// `rel`'s directory, `.` for a name at the root.
fn parent_of(rel: &Path) -> &Path {
    match rel.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Refuses to replace what a plain write could not overwrite: a directory, a
/// special file (a FIFO or device would be swapped for a regular file), a
/// file we may not write.
fn check_replaceable(parent: &Dir, name: &OsStr, meta: Metadata) -> io::Result<Metadata> {
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    // Let the kernel decide whether we may write it (owner, group, ACLs, root).
    // Non-blocking so that a file swapped for a FIFO meanwhile cannot hang us.
    parent.open_with(
        name,
        OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY),
    )?;
    Ok(meta)
}

/// The mode the replacement keeps: the old file's, without set-user-ID and
/// set-group-ID, which the kernel clears on an ordinary write too.
fn kept_mode(meta: &Metadata) -> u32 {
    meta.permissions().mode() & 0o1777
}

/// Creates a fresh temporary file next to the target, with the target's mode.
fn create_temp(
    parent: &Dir,
    name: &OsStr,
    existing: Option<&Metadata>,
) -> io::Result<(cap_std::fs::File, OsString)> {
    let mode = existing.map_or(0o666, kept_mode);
    loop {
        let temp_name = temp_name_for(name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(mode);
        match parent.open_with(&temp_name, &options) {
            Ok(file) => return Ok((file, temp_name)),
            // A leftover of a killed process with the same pid: take the next.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `.toolgate-NAME.PID.N.tmp`, with NAME shortened so the whole stays well
/// under the 255-byte limit of a file name.
fn temp_name_for(name: &OsStr) -> OsString {
    let shown: String = name.to_string_lossy().chars().take(64).collect();
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!(
        "{TEMP_PREFIX}{shown}.{}.{n}{TEMP_SUFFIX}",
        std::process::id()
    ))
}

/// Flushes a directory's entries (the rename) to disk. The directory handle
/// itself may be an `O_PATH` descriptor, which cannot be synced, so the
/// directory is opened for reading first.
fn sync_dir(dir: &Dir) -> io::Result<()> {
    dir.open_with(".", OpenOptions::new().read(true))?
        .sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cap_std::ambient_authority;
    use std::os::unix::fs::PermissionsExt as _;

    fn open(dir: &Path) -> Dir {
        Dir::open_ambient_dir(dir, ambient_authority()).unwrap()
    }

    #[test]
    fn replaces_and_keeps_the_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("script.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o751)).unwrap();
        replace_file(&open(tmp.path()), Path::new("script.sh"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o751);
        let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left behind");
    }

    #[test]
    fn writes_through_a_symlink_inside_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::fs::write(tmp.path().join("real/target.txt"), "old").unwrap();
        std::os::unix::fs::symlink("real/target.txt", tmp.path().join("link")).unwrap();
        replace_file(&open(tmp.path()), Path::new("link"), b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("real/target.txt")).unwrap(),
            "new"
        );
        let link = std::fs::symlink_metadata(tmp.path().join("link")).unwrap();
        assert!(link.file_type().is_symlink(), "the link was replaced");
    }

    #[test]
    fn refuses_directories_and_read_only_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let root = open(tmp.path());
        let err = replace_file(&root, Path::new("sub"), b"x").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EISDIR));

        let locked = tmp.path().join("locked.txt");
        std::fs::write(&locked, "old").unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
        // Root may write anything; the check is only meaningful for others.
        if running_as_root() {
            return;
        }
        let err = replace_file(&root, Path::new("locked.txt"), b"new").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EACCES));
        assert_eq!(std::fs::read_to_string(&locked).unwrap(), "old");
    }

    /// Whether this process runs as root, without calling into libc.
    fn running_as_root() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .map(|s| {
                s.lines()
                    .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
            })
            .unwrap_or(false)
    }
}
