//! Kernel confinement of the commands bash and exec tools run: what an
//! allowed command does once it runs stays inside the policy.
//!
//! The policy compiles `sandbox:` and `paths:` into a [`Plan`] (resolved
//! against the workspace); a tool hands it to [`crate::tools`]' process
//! runner, which calls [`Plan::prepare`] before the fork — the Landlock
//! ruleset, the path descriptors, the seccomp program, the list of mounts and
//! a private temporary directory are all made there — and
//! [`Prepared::apply_in_child`] between fork and exec, which only makes
//! system calls. Nothing is ever applied to toolgate itself, and everything
//! the command starts inherits the confinement.
//!
//! - **Landlock** ([`rules`]): the roots, `sandbox.write` and the temporary
//!   directory are writable; the built-in system list ([`SYSTEM_READ`]) and
//!   `sandbox.read` are readable and executable; everything else can be
//!   neither read nor written.
//! - **A mount namespace** ([`mounts`]): existing `paths.read_only` matches
//!   inside the roots become read-only, existing `paths.deny` matches are
//!   covered. As root (`CAP_SYS_ADMIN`) a plain mount namespace; otherwise
//!   one owned by an unprivileged user namespace ([`userns`]) where the
//!   kernel allows it; without either, these are not enforced (a `required`
//!   plan then fails when they match something).
//! - **seccomp** ([`seccomp`]): with `network: deny`, only Unix sockets.

mod kernel;
pub mod mounts;
mod rules;
mod seccomp;
mod system;
mod tmp;
mod userns;

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once, OnceLock};

pub use crate::config::policy_file::SandboxNetwork as Network;
use crate::workspace::{GlobList, Workspace};
pub use kernel::{Support, NO_LANDLOCK_ENV};
pub use system::{SYSTEM_READ, SYSTEM_WRITE};
pub use tmp::remove_pooled as remove_pooled_tmpdirs;
pub use userns::NO_USERNS_ENV;

use rules::Grant;

/// What a confined command may do, resolved against one workspace.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The workspace (deny and read-only globs are relative to it).
    pub workspace: Workspace,
    /// The policy's roots, absolute: readable and writable.
    pub roots: Vec<PathBuf>,
    /// `sandbox.read`, absolute.
    pub read: Vec<PathBuf>,
    /// `sandbox.write`, absolute.
    pub write: Vec<PathBuf>,
    /// `paths.deny`.
    pub deny: Arc<GlobList>,
    /// `paths.read_only`.
    pub read_only: GlobList,
    /// `sandbox.network`.
    pub network: Network,
    /// `sandbox.required`.
    pub required: bool,
}

/// A plan made ready for one command: everything the child needs, built in
/// the parent.
#[derive(Debug)]
pub struct Prepared {
    landlock: Option<OwnedFd>,
    filter: Option<Arc<seccomp::NetworkFilter>>,
    covers: Option<mounts::Covers>,
    userns: Option<userns::UserNs>,
    strings: mounts::MountStrings,
    tmp: tmp::PrivateTmp,
    gaps: Vec<String>,
}

static WARN_ONCE: Once = Once::new();

/// The seccomp program is the same for every command: built once.
fn network_filter() -> Result<Arc<seccomp::NetworkFilter>, String> {
    static FILTER: OnceLock<Result<Arc<seccomp::NetworkFilter>, String>> = OnceLock::new();
    FILTER
        .get_or_init(|| seccomp::NetworkFilter::build().map(Arc::new))
        .clone()
}

impl Plan {
    /// What the kernel will not enforce of this plan, given `support` and
    /// whether existing matches need covering (`covers`).
    pub fn gaps(&self, support: &Support, covers: bool) -> Vec<String> {
        let mut gaps = Vec::new();
        if support.landlock_abi.is_none() {
            gaps.push(
                "Landlock is not available: files outside the roots are not protected".to_string(),
            );
        }
        if self.network == Network::Deny && !support.seccomp {
            gaps.push("seccomp is not available: `network: deny` is not enforced".to_string());
        }
        if covers && !support.mount_namespace {
            gaps.push(format!(
                "no mount namespace (toolgate lacks CAP_SYS_ADMIN, and no unprivileged user namespace: {}): `paths.read_only` and `paths.deny` matches inside the roots are not protected",
                support.no_mount_namespace.unwrap_or("unknown")
            ));
        }
        gaps
    }

    /// Every path the Landlock ruleset grants, with its grant: the
    /// built-in system list, then the plan's own ([`Plan::own_grants`]).
    pub fn grants<'a>(&'a self, tmp: &'a Path) -> Vec<(&'a Path, Grant)> {
        let mut out: Vec<(&Path, Grant)> = Vec::new();
        out.extend(SYSTEM_READ.iter().map(|p| (Path::new(*p), Grant::Read)));
        out.extend(SYSTEM_WRITE.iter().map(|p| (Path::new(*p), Grant::Write)));
        out.extend(self.own_grants(tmp));
        out
    }

    /// The paths the plan itself grants: `sandbox.read`, the roots,
    /// `sandbox.write` and the temporary directory `tmp`.
    pub fn own_grants<'a>(&'a self, tmp: &'a Path) -> Vec<(&'a Path, Grant)> {
        let mut out: Vec<(&Path, Grant)> = Vec::new();
        out.extend(self.read.iter().map(|p| (p.as_path(), Grant::Read)));
        out.extend(self.roots.iter().map(|p| (p.as_path(), Grant::Write)));
        out.extend(self.write.iter().map(|p| (p.as_path(), Grant::Write)));
        out.push((tmp, Grant::Write));
        out
    }

    /// Builds everything for one command. Fails when the plan is
    /// `required` and the kernel lacks something it needs; otherwise what
    /// cannot be enforced is warned about once (on stderr) and left out.
    ///
    /// The built-in system list's descriptors are opened on first use and
    /// kept for the process (checked, not reopened, per command: see
    /// `rules`), and the temporary directory is one an earlier command left
    /// empty when there is one (see `tmp`); everything that depends on the
    /// plan or the moment — the walk for `deny`/`read_only` matches, the
    /// roots' and `sandbox.read`/`write`'s descriptors — is made for each
    /// command.
    pub fn prepare(&self) -> Result<Prepared, String> {
        self.prepare_with(true)
    }

    /// [`Plan::prepare`] for a process that confines a single command
    /// (`toolgate sandbox`): every path is opened and the temporary
    /// directory made for this command only, nothing is kept.
    pub fn prepare_once(&self) -> Result<Prepared, String> {
        self.prepare_with(false)
    }

    /// `held`: the system list through the process's held descriptors,
    /// and the temporary directory from the pool.
    fn prepare_with(&self, held: bool) -> Result<Prepared, String> {
        let support = Support::cached();
        let covers = mounts::find(&self.workspace, &self.roots, &self.deny, &self.read_only)?;
        let gaps = self.gaps(&support, !covers.is_empty());
        if !gaps.is_empty() {
            if self.required {
                return Err(format!(
                    "the sandbox cannot be enforced here ({}); `sandbox.required` is true, so nothing runs. Run `toolgate check` for what this kernel supports",
                    gaps.join("; ")
                ));
            }
            WARN_ONCE.call_once(|| {
                tracing::warn!(
                    "sandbox: running with less confinement than the policy asks: {}",
                    gaps.join("; ")
                );
            });
        }
        let tmp = tmp::PrivateTmp::new(held)?;
        let landlock = match support.landlock_abi {
            Some(_) if held => rules::build(&self.own_grants(tmp.path()))?,
            Some(_) => rules::build_once(&self.own_grants(tmp.path()))?,
            None => None,
        };
        if landlock.is_none() && self.required {
            return Err(
                "Landlock refused the ruleset; `sandbox.required` is true, so nothing runs"
                    .to_string(),
            );
        }
        let filter = match (self.network, support.seccomp) {
            (Network::Deny, true) => Some(network_filter()?),
            _ => None,
        };
        let covers = (support.mount_namespace && !covers.is_empty()).then_some(covers);
        let userns =
            (covers.is_some() && support.user_namespace).then(userns::UserNs::for_current_user);
        Ok(Prepared {
            landlock,
            filter,
            covers,
            userns,
            strings: mounts::MountStrings::default(),
            tmp,
            gaps,
        })
    }
}

impl Prepared {
    /// What the kernel does not enforce of the plan (only ever non-empty
    /// when the plan is not `required`).
    pub fn not_enforced(&self) -> &[String] {
        &self.gaps
    }

    /// The private temporary directory (the command's `TMPDIR`).
    pub fn tmpdir(&self) -> &Path {
        self.tmp.path()
    }

    /// Makes `command` run confined: its `TMPDIR` is the private temporary
    /// directory and [`Prepared::apply_in_child`] runs between fork and exec.
    /// Keep `self` alive until the command ends.
    pub fn attach(self: &Arc<Self>, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        command.env("TMPDIR", self.tmpdir());
        let in_child = self.clone();
        // SAFETY: `apply_in_child` only makes system calls on memory
        // prepared before the fork (async-signal-safe).
        unsafe {
            command.pre_exec(move || in_child.apply_in_child());
        }
    }

    /// Confines the calling process: mounts, `no_new_privs`, Landlock,
    /// seccomp, in that order (Landlock forbids mounting afterwards).
    ///
    /// Meant for a forked child before exec: it only makes system calls on
    /// memory prepared before the fork, so it is async-signal-safe. Never
    /// call it in toolgate's own process.
    pub fn apply_in_child(&self) -> io::Result<()> {
        if let Some(covers) = &self.covers {
            covers.apply(&self.strings, self.userns.as_ref())?;
        }
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(fd) = &self.landlock {
            rules::restrict_self(fd)?;
        }
        if let Some(filter) = &self.filter {
            filter.install()?;
        }
        Ok(())
    }
}
