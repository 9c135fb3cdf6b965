//! The Landlock ruleset: read and execute under the system list and
//! `sandbox.read`, everything under the roots, `sandbox.write` and the
//! private temporary directory. Built with the `landlock` crate (best effort
//! across ABI versions) before the fork; the child only restricts itself.
//!
//! A ruleset is made per command (the temporary directory is the command's
//! own), but the system list's paths — most of the rules — are opened once
//! per process and checked, not reopened, per command ([`SystemList`]).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, ABI,
};

/// The newest ABI whose rights toolgate asks for; older kernels get what
/// they support.
const ABI_WANTED: ABI = ABI::V5;

/// What a path is granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Read and execute.
    Read,
    /// Everything (create, write, remove, truncate, …).
    Write,
}

/// A granted path as it was found: a descriptor (`O_PATH`, close-on-exec)
/// and the identity of what it refers to.
#[derive(Debug)]
struct Held {
    fd: OwnedFd,
    dev: u64,
    ino: u64,
    dir: bool,
}

fn open(path: &Path) -> Option<Held> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // `File::open` sets O_CLOEXEC: the descriptor never reaches a program.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    Some(Held {
        dev: meta.dev(),
        ino: meta.ino(),
        dir: meta.is_dir(),
        fd: file.into(),
    })
}

/// The built-in system list, opened once per process and reused by every
/// command: one descriptor per path that exists.
///
/// A Landlock rule grants the object a descriptor refers to, not a name.
/// So before each use, every path is looked up again (one `statx`, no
/// open): one whose device and inode are still those of the held
/// descriptor is granted through it (the descriptor keeps the inode alive,
/// so its number cannot have been reused); one that changed — replaced by a
/// rename, a new mount, created since — is opened afresh for that command
/// and one that is gone is left out, exactly as when every path was opened
/// for every command. A stale descriptor is therefore never used: a
/// replaced `/etc/resolv.conf` is granted as it is now, and the file it
/// replaced is not.
#[derive(Debug)]
struct SystemList {
    entries: Vec<(&'static Path, Grant, Option<Held>)>,
}

/// The built-in system list with each path's grant.
fn system_paths() -> impl Iterator<Item = (&'static Path, Grant)> {
    let read = super::SYSTEM_READ
        .iter()
        .map(|p| (Path::new(*p), Grant::Read));
    let write = super::SYSTEM_WRITE
        .iter()
        .map(|p| (Path::new(*p), Grant::Write));
    read.chain(write)
}

fn system_list() -> &'static SystemList {
    static LIST: OnceLock<SystemList> = OnceLock::new();
    LIST.get_or_init(|| SystemList {
        entries: system_paths().map(|(p, g)| (p, g, open(p))).collect(),
    })
}

fn access(grant: Grant, dir: bool) -> BitFlags<AccessFs> {
    let access = match grant {
        Grant::Read => AccessFs::from_read(ABI_WANTED),
        Grant::Write => AccessFs::from_all(ABI_WANTED),
    };
    if dir {
        access
    } else {
        access & AccessFs::from_file(ABI_WANTED)
    }
}

fn fail(e: landlock::RulesetError) -> String {
    format!("the Landlock ruleset cannot be built: {e}")
}

fn add(
    ruleset: RulesetCreated,
    fd: BorrowedFd<'_>,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, String> {
    ruleset.add_rule(PathBeneath::new(fd, access)).map_err(fail)
}

fn add_fresh(ruleset: RulesetCreated, path: &Path, grant: Grant) -> Result<RulesetCreated, String> {
    match open(path) {
        Some(h) => add(ruleset, h.fd.as_fd(), access(grant, h.dir)),
        None => Ok(ruleset),
    }
}

fn create() -> Result<RulesetCreated, String> {
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_WANTED))
        .map_err(fail)?
        .create()
        .map_err(fail)
}

/// Builds the ruleset for one command: the built-in system list through
/// the descriptors held for the process ([`SystemList`]), and `paths` (the
/// plan's own grants and the private temporary directory) opened now.
/// `None` when the kernel has no Landlock. Paths that do not exist are
/// skipped.
pub fn build(paths: &[(&Path, Grant)]) -> Result<Option<OwnedFd>, String> {
    use std::os::unix::fs::MetadataExt;
    let mut ruleset = create()?;
    for (path, grant, held) in &system_list().entries {
        let now = std::fs::metadata(path).ok();
        ruleset = match (held, now) {
            (_, None) => ruleset,
            (Some(h), Some(m)) if h.dev == m.dev() && h.ino == m.ino() => {
                add(ruleset, h.fd.as_fd(), access(*grant, h.dir))?
            }
            _ => add_fresh(ruleset, path, *grant)?,
        };
    }
    for (path, grant) in paths {
        ruleset = add_fresh(ruleset, path, *grant)?;
    }
    Ok(ruleset.into())
}

/// [`build`] without the held descriptors: every path, the system list
/// included, opened for this ruleset only. For a process that confines one
/// command (`toolgate sandbox`), where holding them would only add work.
pub fn build_once(paths: &[(&Path, Grant)]) -> Result<Option<OwnedFd>, String> {
    let mut ruleset = create()?;
    let own = paths.iter().map(|&(p, g)| (p, g));
    for (path, grant) in system_paths().map(|(p, g)| (p as &Path, g)).chain(own) {
        ruleset = add_fresh(ruleset, path, grant)?;
    }
    Ok(ruleset.into())
}

/// Restricts the calling thread (and what it execs) to the ruleset.
/// Async-signal-safe: one system call. `no_new_privs` must already be set.
pub fn restrict_self(ruleset: &OwnedFd) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on a descriptor the caller owns.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            ruleset.as_raw_fd(),
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
