//! The Landlock ruleset: read and execute under the system list and
//! `sandbox.read`, everything under the roots, `sandbox.write` and the
//! private temporary directory. Built with the `landlock` crate (best effort
//! across ABI versions) before the fork; the child only restricts itself.

use std::os::fd::OwnedFd;
use std::path::Path;

use landlock::{
    Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
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

/// Builds the ruleset; `None` when the kernel has no Landlock. Paths that
/// do not exist are skipped.
pub fn build(paths: &[(&Path, Grant)]) -> Result<Option<OwnedFd>, String> {
    let fail = |e: landlock::RulesetError| format!("the Landlock ruleset cannot be built: {e}");
    let mut ruleset: RulesetCreated = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI_WANTED))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    for (path, grant) in paths {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let Ok(fd) = PathFd::new(path) else { continue };
        let mut access: BitFlags<AccessFs> = match grant {
            Grant::Read => AccessFs::from_read(ABI_WANTED),
            Grant::Write => AccessFs::from_all(ABI_WANTED),
        };
        if !meta.is_dir() {
            access &= AccessFs::from_file(ABI_WANTED);
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(fail)?;
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
