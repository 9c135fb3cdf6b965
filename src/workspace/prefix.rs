//! `Path::starts_with` on the bytes, for the paths the policy compares.
//!
//! [`Path::starts_with`] walks both paths component by component, which is
//! most of what a path check costs when the workspace sits deep in the file
//! system. Every path toolgate resolves is spelled plainly (absolute, no
//! empty or `.` segment, no trailing `/`), and for two such paths "starts
//! with" is a byte prefix that ends at a `/` or at the end. Anything spelled
//! otherwise is left to `Path::starts_with`, so the answer is always the same.

use std::path::Path;

/// Exactly `path.starts_with(root)`, compared as bytes when both are spelled
/// plainly (see the module docs) and component-wise otherwise.
pub fn path_starts_with(path: &Path, root: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (p, r) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
        let at_boundary =
            p.starts_with(r) && (r == b"/" || p.len() == r.len() || p.get(r.len()) == Some(&b'/'));
        if at_boundary {
            // `path` begins with `root`'s components when `root` is plain:
            // its bytes end where one of `path`'s components ends.
            if is_plain_absolute(r) {
                return true;
            }
        } else if is_plain_absolute(r) && is_plain_absolute(p) {
            // Plain paths have one spelling per component list.
            return false;
        }
    }
    path.starts_with(root)
}

/// `/` followed by segments that are neither empty nor `.` (`/` alone too).
#[cfg(unix)]
fn is_plain_absolute(bytes: &[u8]) -> bool {
    match bytes.strip_prefix(b"/") {
        Some([]) => true,
        Some(body) => body
            .split(|&b| b == b'/')
            .all(|seg| !seg.is_empty() && seg != b"."),
        None => false,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    fn check(path: &[u8], root: &[u8]) {
        let (p, r) = (
            Path::new(OsStr::from_bytes(path)),
            Path::new(OsStr::from_bytes(root)),
        );
        assert_eq!(
            path_starts_with(p, r),
            p.starts_with(r),
            "{p:?} starts with {r:?}"
        );
    }

    #[test]
    fn the_usual_cases() {
        let p = |s: &str| Path::new(s).to_path_buf();
        assert!(path_starts_with(&p("/ws/src/main.rs"), &p("/ws/src")));
        assert!(path_starts_with(&p("/ws/src"), &p("/ws/src")));
        assert!(path_starts_with(&p("/ws"), &p("/")));
        assert!(path_starts_with(&p("/"), &p("/")));
        // A sibling whose name starts with the root's is not inside it.
        assert!(!path_starts_with(&p("/ws2/a"), &p("/ws")));
        assert!(!path_starts_with(&p("/ws2"), &p("/ws")));
        assert!(!path_starts_with(&p("/w"), &p("/ws")));
        assert!(!path_starts_with(&p("/etc/passwd"), &p("/ws")));
        // Spelled differently, same components: still inside.
        assert!(path_starts_with(&p("/ws/"), &p("/ws")));
        assert!(path_starts_with(&p("/ws/a"), &p("/ws/")));
        assert!(path_starts_with(&p("//ws//a"), &p("/ws")));
        assert!(path_starts_with(&p("/./ws/a"), &p("/ws")));
        assert!(path_starts_with(&p("/ws/./a"), &p("/ws/.")));
        // `..` is a component like any other (nothing is resolved here).
        assert!(path_starts_with(&p("/ws/../etc"), &p("/ws")));
        assert!(!path_starts_with(&p("/etc"), &p("/ws/..")));
    }

    #[test]
    fn non_utf8_bytes_compare_as_bytes() {
        assert!(path_starts_with(
            Path::new(OsStr::from_bytes(b"/ws/\xff\xfe/x")),
            Path::new(OsStr::from_bytes(b"/ws/\xff\xfe"))
        ));
        assert!(!path_starts_with(
            Path::new(OsStr::from_bytes(b"/ws/\xff\xfe2/x")),
            Path::new(OsStr::from_bytes(b"/ws/\xff\xfe"))
        ));
    }

    /// Every pair of short paths over an alphabet of separators, dots,
    /// letters and a non-UTF-8 byte agrees with `Path::starts_with`.
    #[test]
    fn agrees_with_path_starts_with_everywhere() {
        let alphabet: [&[u8]; 6] = [b"/", b".", b"a", b"b", b"\xff", b"ws"];
        let mut all: Vec<Vec<u8>> = vec![Vec::new()];
        let mut last: Vec<Vec<u8>> = vec![Vec::new()];
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|p| {
                    alphabet.iter().map(move |a| {
                        let mut q = p.clone();
                        q.extend_from_slice(a);
                        q
                    })
                })
                .collect();
            all.extend(last.iter().cloned());
        }
        assert!(all.len() > 9000, "{}", all.len());
        let roots: Vec<&Vec<u8>> = all.iter().filter(|r| r.len() <= 4).collect();
        for path in &all {
            for root in &roots {
                check(path, root);
            }
        }
    }
}
