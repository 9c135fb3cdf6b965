//! Error texts for the file tools, worded as Pi's so the model reads what it
//! would read from Pi.
//!
//! Pi's file tools let Node's errors through unchanged:
//! `ENOENT: no such file or directory, access '/abs/path'`. Models have seen
//! that shape countless times and know what to do with it, so the same
//! `CODE: description, syscall 'path'` shape is produced here from the OS
//! error number. The one error Node never produces is the sandbox's: a path
//! that leads outside the workspace (through a symlink or `..`) gets a text of
//! its own.

use std::io;
use std::path::Path;

use super::ToolError;

/// The text of a cancelled call, as Pi words it.
pub(crate) const ABORTED: &str = "Operation aborted";

/// Node's code and libuv's description for the errors file tools meet.
fn errno_name(err: &io::Error) -> Option<(&'static str, &'static str)> {
    let name = match err.raw_os_error()? {
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EIO => ("EIO", "i/o error"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::ENXIO => ("ENXIO", "no such device or address"),
        _ => return None,
    };
    Some(name)
}

/// True for the sandbox's refusal: cap-std reports an escape as
/// `PermissionDenied` with no OS error number, and so does
/// [`super::Sandbox::locate`].
pub(crate) fn is_escape(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none()
}

/// `CODE: description, syscall 'ABS'` as Node words it; an escape from the
/// sandbox says so; anything else keeps its own text and names the path.
pub(crate) fn describe(err: &io::Error, syscall: &str, abs: &Path) -> String {
    if let Some((code, text)) = errno_name(err) {
        return format!("{code}: {text}, {syscall} '{}'", abs.display());
    }
    if is_escape(err) {
        return format!(
            "Permission denied: {} leads outside the workspace",
            abs.display()
        );
    }
    format!("{err}: '{}'", abs.display())
}

/// Like [`describe`], as a tool error.
pub(crate) fn io_error(err: &io::Error, syscall: &str, abs: &Path) -> ToolError {
    ToolError::new(describe(err, syscall, abs))
}

/// Only the code (`ENOENT`), for Pi's `Could not edit file: PATH. Error code: ENOENT.`;
/// errors without one keep their own text.
pub(crate) fn error_code(err: &io::Error) -> String {
    match errno_name(err) {
        Some((code, _)) => format!("Error code: {code}"),
        None if is_escape(err) => "The path leads outside the workspace".to_string(),
        None => err.to_string(),
    }
}

/// The error a `spawn_blocking` task that panicked or was cancelled turns into.
pub(crate) fn join_error(err: tokio::task::JoinError) -> ToolError {
    ToolError::new(format!("The file operation did not finish: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_like_node() {
        let abs = Path::new("/w/missing.txt");
        let err = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            describe(&err, "access", abs),
            "ENOENT: no such file or directory, access '/w/missing.txt'"
        );
        assert_eq!(error_code(&err), "Error code: ENOENT");
        let escape = io::Error::new(io::ErrorKind::PermissionDenied, "a path led outside");
        assert_eq!(
            describe(&escape, "open", abs),
            "Permission denied: /w/missing.txt leads outside the workspace"
        );
    }
}
