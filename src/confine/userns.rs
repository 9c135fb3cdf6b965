//! The mount namespace without `CAP_SYS_ADMIN`: an unprivileged user
//! namespace (`CLONE_NEWUSER`) that owns a new mount namespace.
//!
//! The forked child unshares both, denies `setgroups` and maps its own user
//! and group to themselves (`U U 1`): inside, it has every capability of the
//! new user namespace — enough to make the covers — and keeps its uid and gid,
//! so files it creates belong to it as before. Its capabilities end at
//! `exec` (its uid is not 0 in the namespace), so the command cannot unmount
//! the covers; Landlock forbids mount changes as well. Users and groups
//! other than its own show as the overflow ids (`nobody`, `nogroup`) inside;
//! permission checks still use the real ones.
//!
//! Whether the kernel allows it is found once per process by doing it in a
//! forked child ([`probe`]): a sysctl can forbid it
//! (`kernel.unprivileged_userns_clone`, `user.max_user_namespaces`), so can
//! AppArmor (`kernel.apparmor_restrict_unprivileged_userns`: the namespace is
//! made but without capabilities) or a container's seccomp profile.

use std::ffi::CString;
use std::io;

/// The switch that makes toolgate treat unprivileged user namespaces as
/// forbidden (for testing the fallback without one; never needed
/// otherwise). Set it to `1`.
pub const NO_USERNS_ENV: &str = "TOOLGATE_SANDBOX_NO_USERNS";

/// Everything the child writes to enter the namespaces, made before the
/// fork.
#[derive(Debug)]
pub struct UserNs {
    setgroups: CString,
    uid_map_path: CString,
    gid_map_path: CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl UserNs {
    /// The maps for the calling process's effective user and group.
    pub fn for_current_user() -> UserNs {
        // SAFETY: geteuid and getegid cannot fail.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        UserNs {
            setgroups: c"/proc/self/setgroups".to_owned(),
            uid_map_path: c"/proc/self/uid_map".to_owned(),
            gid_map_path: c"/proc/self/gid_map".to_owned(),
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// In the forked child: a new user namespace owning a new mount
    /// namespace, and the identity maps. Async-signal-safe (system calls on
    /// memory prepared before the fork).
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: unshare only changes this process's namespaces.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
            return Err(io::Error::last_os_error());
        }
        write_file(&self.setgroups, b"deny")?;
        write_file(&self.uid_map_path, &self.uid_map)?;
        write_file(&self.gid_map_path, &self.gid_map)
    }
}

fn write_file(path: &CString, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `data` is valid for `data.len()` bytes.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is not used again.
    unsafe { libc::close(fd) };
    if n != data.len() as isize {
        return Err(err);
    }
    Ok(())
}

fn read_sysctl(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether an unprivileged user namespace with a usable mount namespace can
/// be made here: `Ok(())`, or why not. Asks the sysctls first (for a
/// precise reason), then tries it in a forked child that exits right away.
pub fn probe() -> Result<(), &'static str> {
    if std::env::var_os(NO_USERNS_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("treated as forbidden (TOOLGATE_SANDBOX_NO_USERNS is set)");
    }
    if read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
        return Err("kernel.unprivileged_userns_clone is 0");
    }
    if read_sysctl("/proc/sys/user/max_user_namespaces") == Some(0) {
        return Err("user.max_user_namespaces is 0");
    }
    let apparmor = read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == Some(1);
    let ns = UserNs::for_current_user();
    let root = c"/".to_owned();
    // SAFETY: the child only makes system calls on memory prepared here and
    // leaves with `_exit`; the parent waits for it.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed while probing for user namespaces");
    }
    if pid == 0 {
        let made = ns.enter().is_ok()
            // SAFETY: a mount(2) call on a NUL-terminated path, in the
            // child's own new mount namespace.
            && unsafe {
                libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            } == 0;
        // SAFETY: ends the forked child without running the parent's
        // destructors or atexit handlers.
        unsafe { libc::_exit(if made { 0 } else { 1 }) };
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for the child forked above.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err("the user namespace probe could not be waited for");
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else if apparmor {
        Err("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1)")
    } else {
        Err("the kernel refused to make one (a container's seccomp profile or a security module may forbid it)")
    }
}
