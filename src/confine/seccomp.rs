//! `network: deny` as a seccomp filter: `socket()` for any family but
//! `AF_UNIX` fails with `EACCES`, and so does `io_uring_setup` (io_uring can
//! open sockets without the `socket` system call).

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// A compiled filter, ready to install in a forked child.
#[derive(Debug)]
pub struct NetworkFilter {
    program: BpfProgram,
}

impl NetworkFilter {
    /// Builds the filter for this machine's architecture.
    pub fn build() -> Result<NetworkFilter, String> {
        let fail = |e: seccompiler::Error| format!("the network filter cannot be built: {e}");
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|e| format!("seccomp filters are not supported on this architecture: {e}"))?;
        let not_unix = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| fail(e.into()))?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        rules.insert(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![not_unix]).map_err(|e| fail(e.into()))?],
        );
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(|e| fail(e.into()))?;
        let program = BpfProgram::try_from(filter).map_err(|e| fail(e.into()))?;
        Ok(NetworkFilter { program })
    }

    /// Installs the filter on the calling thread. Async-signal-safe: one
    /// system call on memory prepared before the fork. `no_new_privs` must
    /// already be set.
    pub fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.program.len() as libc::c_ushort,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: `prog` points at the filter's instructions, which live as
        // long as `self`; seccompiler's `sock_filter` has the kernel's layout.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
