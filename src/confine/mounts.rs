//! `paths.read_only` and `paths.deny` inside writable roots, in a private
//! mount namespace: what matches when a command starts is bind-mounted
//! read-only over itself, and what is denied is covered — a file by
//! `/dev/null` on a read-only `nodev` mount (opening it fails with
//! `EACCES`, even for root), a directory by an empty read-only tmpfs.
//!
//! The matches are found before the fork (a walk of the roots that skips
//! what it covers); the child only makes system calls on strings prepared
//! here.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::workspace::{glob_key, GlobList, Workspace};

/// Most entries one walk of the roots looks at; a larger tree fails the
/// preparation (a command in it could not be confined as the policy says).
pub const MAX_WALK_ENTRIES: usize = 200_000;

/// What is done to one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cover {
    /// Stays readable, becomes unwritable.
    ReadOnly,
    /// A denied file: unreadable and unwritable.
    DenyFile,
    /// A denied directory: shown empty, unwritable.
    DenyDir,
}

/// Every path to cover, in the order the child mounts them (a directory
/// before what is inside it).
#[derive(Debug, Default)]
pub struct Covers {
    /// The paths found, with what to do.
    pub paths: Vec<(Cover, PathBuf)>,
    /// The paths as the child needs them, with the `nosuid`, `nodev` and
    /// `noexec` flags of the mount each is on (for a read-only cover).
    prepared: Vec<(Cover, CString, libc::c_ulong)>,
}

/// Walks `roots` for existing matches of the globs.
pub fn find(
    ws: &Workspace,
    roots: &[PathBuf],
    deny: &GlobList,
    read_only: &GlobList,
) -> Result<Covers, String> {
    let mut out = Vec::new();
    if deny.is_empty() && read_only.is_empty() {
        return Ok(Covers::default());
    }
    let mut seen = 0usize;
    // (directory, inside a read-only cover already)
    let mut stack: Vec<(PathBuf, bool)> = roots.iter().map(|r| (r.clone(), false)).collect();
    while let Some((dir, ro_above)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return Err(format!(
                    "the roots hold more than {MAX_WALK_ENTRIES} entries, too many to find every `paths.deny` and `paths.read_only` match; narrow `paths.roots`"
                ));
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let key = glob_key(ws, &path);
            if kind.is_dir() {
                if deny.covering_key(&key).is_some() {
                    out.push((Cover::DenyDir, path));
                    continue;
                }
                let ro = !ro_above && read_only.covering_key(&key).is_some();
                if ro {
                    out.push((Cover::ReadOnly, path.clone()));
                }
                stack.push((path, ro_above || ro));
            } else if deny.first_match(&key).is_some() {
                out.push((Cover::DenyFile, path));
            } else if !ro_above && read_only.first_match(&key).is_some() {
                out.push((Cover::ReadOnly, path));
            }
        }
    }
    let prepared = out
        .iter()
        .map(|(c, p)| {
            let kept = match c {
                Cover::ReadOnly => kept_flags(p),
                _ => 0,
            };
            Ok((*c, cstring(p)?, kept))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Covers {
        paths: out,
        prepared,
    })
}

/// `nosuid`, `nodev` and `noexec` of the mount `path` is on, as `MS_*`
/// flags: a read-only remount keeps them (in a user namespace it may not
/// clear them, they are locked; and it should not anywhere). Asked in the
/// parent (`statvfs` is not async-signal-safe).
fn kept_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = cstring(path) else { return 0 };
    // SAFETY: `statvfs` is plain data; zeroed is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a pointer to a local.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let mut flags = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
    ] {
        if st.f_flag & st_flag != 0 {
            flags |= ms_flag;
        }
    }
    flags
}

fn cstring(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("`{}` has a NUL byte in its name", p.display()))
}

/// Strings the child passes to `mount`, made before the fork.
#[derive(Debug)]
pub struct MountStrings {
    root: CString,
    dev_null: CString,
    tmpfs: CString,
    tmpfs_options: CString,
}

impl Default for MountStrings {
    fn default() -> Self {
        MountStrings {
            root: c"/".to_owned(),
            dev_null: c"/dev/null".to_owned(),
            tmpfs: c"tmpfs".to_owned(),
            tmpfs_options: c"size=0,mode=000".to_owned(),
        }
    }
}

fn mount(
    src: Option<&CString>,
    target: &CString,
    fstype: Option<&CString>,
    flags: libc::c_ulong,
    data: Option<&CString>,
) -> io::Result<()> {
    let ptr = |c: Option<&CString>| c.map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a NUL-terminated string that outlives the
    // call, or null where mount(2) allows it.
    let rc = unsafe {
        libc::mount(
            ptr(src),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Covers {
    /// True when nothing needs covering.
    pub fn is_empty(&self) -> bool {
        self.prepared.is_empty()
    }

    /// In the forked child: a new mount namespace (owned by a new user
    /// namespace when `userns` is given), private so that nothing reaches
    /// the parent's, then every cover. Async-signal-safe.
    pub fn apply(
        &self,
        s: &MountStrings,
        userns: Option<&super::userns::UserNs>,
    ) -> io::Result<()> {
        match userns {
            Some(ns) => ns.enter()?,
            // SAFETY: unshare only changes this process's namespaces.
            None => {
                if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        mount(None, &s.root, None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        let locked = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        for (cover, path, kept) in &self.prepared {
            match cover {
                Cover::ReadOnly => {
                    mount(Some(path), path, None, libc::MS_BIND | libc::MS_REC, None)?;
                    mount(
                        None,
                        path,
                        None,
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | *kept,
                        None,
                    )?;
                }
                Cover::DenyFile => {
                    mount(Some(&s.dev_null), path, None, libc::MS_BIND, None)?;
                    mount(
                        None,
                        path,
                        None,
                        libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | locked,
                        None,
                    )?;
                }
                Cover::DenyDir => mount(
                    Some(&s.tmpfs),
                    path,
                    Some(&s.tmpfs),
                    libc::MS_RDONLY | locked,
                    Some(&s.tmpfs_options),
                )?,
            }
        }
        Ok(())
    }
}
