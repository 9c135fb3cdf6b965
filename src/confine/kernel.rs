//! What this kernel and this process can enforce: the Landlock ABI, seccomp
//! filters, and mount namespaces (with `CAP_SYS_ADMIN`, or through an
//! unprivileged user namespace).

use std::fs;

/// The switch that makes toolgate treat the kernel as lacking Landlock (for
/// testing `sandbox.required`; never needed otherwise). Set it to `1`.
pub const NO_LANDLOCK_ENV: &str = "TOOLGATE_SANDBOX_NO_LANDLOCK";

/// Kernel features confinement uses, as found on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (1 and up), or `None` without Landlock (or
    /// when [`NO_LANDLOCK_ENV`] is set).
    pub landlock_abi: Option<u32>,
    /// seccomp filters can be installed.
    pub seccomp: bool,
    /// A mount namespace can be made: toolgate runs with `CAP_SYS_ADMIN`,
    /// or it can make an unprivileged user namespace.
    pub mount_namespace: bool,
    /// The mount namespace comes with an unprivileged user namespace
    /// (toolgate lacks `CAP_SYS_ADMIN`; see [`super::userns`]).
    pub user_namespace: bool,
    /// Why there is no mount namespace, when there is none.
    pub no_mount_namespace: Option<&'static str>,
}

impl Support {
    /// Asks the kernel.
    pub fn probe() -> Support {
        let (mount_namespace, user_namespace, no_mount_namespace) = if has_sys_admin() {
            (true, false, None)
        } else {
            match super::userns::probe() {
                Ok(()) => (true, true, None),
                Err(why) => (false, false, Some(why)),
            }
        };
        Support {
            landlock_abi: landlock_abi(),
            seccomp: seccomp_available(),
            mount_namespace,
            user_namespace,
            no_mount_namespace,
        }
    }

    /// [`Support::probe`], asked once per process (what the kernel supports
    /// does not change while toolgate runs).
    pub fn cached() -> Support {
        static SUPPORT: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        *SUPPORT.get_or_init(Support::probe)
    }

    /// One line per feature, for `toolgate check`.
    pub fn describe(&self) -> Vec<String> {
        vec![
            match self.landlock_abi {
                Some(v) => format!("Landlock: ABI {v}"),
                None if landlock_switched_off() => {
                    format!("Landlock: treated as missing ({NO_LANDLOCK_ENV} is set)")
                }
                None => "Landlock: not available".to_string(),
            },
            format!(
                "seccomp: {}",
                if self.seccomp {
                    "available"
                } else {
                    "not available"
                }
            ),
            format!("mount namespace: {}", self.mount_namespace_text()),
        ]
    }
}

impl Support {
    /// How the mount namespace is made, or why it cannot be.
    pub fn mount_namespace_text(&self) -> String {
        match (self.mount_namespace, self.user_namespace) {
            (true, false) => "available (CAP_SYS_ADMIN)".to_string(),
            (true, true) => "available (unprivileged user namespace)".to_string(),
            (false, _) => format!(
                "not available (toolgate runs without CAP_SYS_ADMIN, and no unprivileged user namespace: {})",
                self.no_mount_namespace.unwrap_or("unknown")
            ),
        }
    }
}

fn landlock_switched_off() -> bool {
    std::env::var_os(NO_LANDLOCK_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

fn landlock_abi() -> Option<u32> {
    if landlock_switched_off() {
        return None;
    }
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call
    // only returns the ABI version; it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v >= 1)
}

fn seccomp_available() -> bool {
    // SAFETY: PR_GET_SECCOMP only reads this thread's mode; it fails with
    // EINVAL on a kernel built without seccomp.
    unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
}

fn has_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}
