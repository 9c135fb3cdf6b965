//! Where tools may open files: one capability directory per root.
//!
//! The policy checked a path when the call arrived; a tool opens it a moment
//! later. Opening by absolute path would race with anyone who swaps a symlink
//! in between. So a tool opens paths *relative to a root's directory handle*
//! with `cap-std`, which resolves every component beneath that handle
//! (`openat2(RESOLVE_BENEATH)` where the kernel has it) and refuses to leave
//! it, whatever the file system looks like by then.

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use crate::workspace::{expand, fold, Workspace};

/// The workspace and the policy's other roots, opened as capability
/// directories.
#[derive(Debug)]
pub struct Sandbox {
    workspace: Workspace,
    /// Deepest first, so the most specific root wins.
    roots: Vec<(PathBuf, Dir)>,
}

impl Sandbox {
    /// Opens the workspace and every extra root that exists as a directory.
    /// Roots that do not exist are skipped: nothing can be opened there.
    pub fn new(workspace: Workspace, extra_roots: &[PathBuf]) -> io::Result<Sandbox> {
        let mut roots = vec![(
            workspace.root().to_path_buf(),
            Dir::open_ambient_dir(workspace.root(), ambient_authority())?,
        )];
        for root in extra_roots {
            if roots.iter().any(|(p, _)| p == root) {
                continue;
            }
            if let Ok(dir) = Dir::open_ambient_dir(root, ambient_authority()) {
                roots.push((root.clone(), dir));
            }
        }
        roots.sort_by_key(|(p, _)| std::cmp::Reverse(p.components().count()));
        Ok(Sandbox { workspace, roots })
    }

    /// The workspace the sandbox is anchored at.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// `raw` as an absolute path, spelled the way the policy judged it:
    /// `@`, `~` and `file://` handled, relative to the workspace, `.` and `..`
    /// folded. Symlinks are *not* followed here; the capability directory
    /// follows them when opening, and only beneath its root.
    pub fn absolute(&self, raw: &str) -> PathBuf {
        let spelled = expand(&self.workspace, raw);
        if spelled.is_absolute() {
            fold(&spelled)
        } else {
            fold(&self.workspace.root().join(spelled))
        }
    }

    /// The root directory holding `abs` and the path relative to it (`.` for
    /// the root itself). Fails with `PermissionDenied` outside every root.
    pub fn locate(&self, abs: &Path) -> io::Result<(&Dir, PathBuf)> {
        for (root, dir) in &self.roots {
            if let Ok(rel) = abs.strip_prefix(root) {
                let rel: PathBuf = rel
                    .components()
                    .filter(|c| matches!(c, Component::Normal(_)))
                    .collect();
                let rel = if rel.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    rel
                };
                return Ok((dir, rel));
            }
        }
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} is outside the workspace", abs.display()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_beneath_the_root_only() {
        let tmp = tempfile::tempdir().unwrap();
        let ws_dir = tmp.path().join("ws");
        std::fs::create_dir(&ws_dir).unwrap();
        std::fs::write(ws_dir.join("a.txt"), "inside").unwrap();
        std::fs::write(tmp.path().join("secret"), "outside").unwrap();
        // A symlink that points out of the workspace, as if swapped in after
        // the policy check.
        std::os::unix::fs::symlink(tmp.path().join("secret"), ws_dir.join("link")).unwrap();
        let sandbox = Sandbox::new(Workspace::new(&ws_dir).unwrap(), &[]).unwrap();

        let abs = sandbox.absolute("@a.txt");
        let (dir, rel) = sandbox.locate(&abs).unwrap();
        assert_eq!(dir.read_to_string(&rel).unwrap(), "inside");

        let (dir, rel) = sandbox.locate(&sandbox.absolute("link")).unwrap();
        assert!(
            dir.read_to_string(&rel).is_err(),
            "symlink escaped the sandbox"
        );

        let outside = sandbox.absolute("../secret");
        assert_eq!(
            sandbox.locate(&outside).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
    }
}
