//! The workspace and the paths in it: resolution shared by every layer.
//!
//! A path is judged by where it really leads, not by how it is spelled: it is
//! resolved against the workspace (`@` prefix, `~`, `file://` accepted), `.`
//! and `..` folded, and symlinks followed — for a file that does not exist yet,
//! through its nearest existing ancestor. The policy judges both the spelled
//! (lexical) and the real location; tools open files beneath the same roots.
//! This module knows nothing of policies: it only says where a path leads and
//! which globs match it.

mod glob;
mod prefix;

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use globset::GlobBuilder;

pub use glob::{compile_glob, is_plain_glob, required_literal, GlobList};
pub use prefix::path_starts_with;

/// How a tool argument or shell word touches a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads it.
    Read,
    /// Creates, changes or deletes it.
    Write,
}

/// Symlinks followed in one resolution before it is called a loop (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// The directory an agent works in, canonicalized once.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    home: Option<PathBuf>,
}

impl Workspace {
    /// Opens `dir` as the workspace; it must exist.
    pub fn new(dir: impl AsRef<Path>) -> std::io::Result<Workspace> {
        let root = dir.as_ref().canonicalize()?;
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        Ok(Workspace { root, home })
    }

    /// The canonical workspace directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Where a path leads: as spelled (folded) and as the file system resolves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, with `.` and `..` folded, symlinks not followed.
    pub lexical: PathBuf,
    /// Absolute, symlinks followed as far as the path exists.
    pub real: PathBuf,
}

/// Resolves `raw` the way a tool would open it. Errors name what is wrong.
pub fn resolve(ws: &Workspace, raw: &str) -> Result<ResolvedPath, String> {
    if raw.contains('\0') {
        return Err("the path contains a NUL byte".to_string());
    }
    let spelled = expand(ws, raw);
    let absolute = if spelled.is_absolute() {
        spelled
    } else {
        ws.root.join(spelled)
    };
    let lexical = fold(&absolute);
    let real = follow(ws, &absolute)?;
    Ok(ResolvedPath { lexical, real })
}

/// `@x` -> `x`, `file:///x` -> `/x`, `~/x` -> `$HOME/x` (nothing resolved yet).
pub fn expand(ws: &Workspace, raw: &str) -> PathBuf {
    let mut s = raw.strip_prefix('@').unwrap_or(raw);
    if let Some(rest) = s.strip_prefix("file://") {
        // file://host/path is not a local file; keep only the path part.
        s = match rest.find('/') {
            Some(i) => &rest[i..],
            None => rest,
        };
        return PathBuf::from(percent_decode(s));
    }
    if s == "~" || s.starts_with("~/") {
        if let Some(home) = &ws.home {
            return home.join(s.trim_start_matches('~').trim_start_matches('/'));
        }
    }
    PathBuf::from(s)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Folds `.` and `..` without touching the file system.
pub fn fold(path: &Path) -> PathBuf {
    if is_folded(path) {
        return path.to_path_buf();
    }
    // Folding only shortens: one allocation.
    let mut out = PathBuf::with_capacity(path.as_os_str().len());
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` is spelled as [`fold`] would rebuild it: an optional
/// leading `/`, then non-empty segments other than `.` and `..` (so no `//`
/// and no trailing `/`). Checked on the bytes, which is cheaper than
/// rebuilding the path from its components.
fn is_folded(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let bytes = path.as_os_str().as_bytes();
        let body = bytes.strip_prefix(b"/").unwrap_or(bytes);
        !body.is_empty()
            && body
                .split(|&b| b == b'/')
                .all(|seg| !seg.is_empty() && seg != b"." && seg != b"..")
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Follows symlinks component by component, as the kernel does (so `link/..`
/// is the target's parent), and folds the part that does not exist yet.
///
/// The workspace root was canonicalized when the workspace was opened, so a
/// path spelled under it starts from there instead of checking each of the
/// root's own components again (a `..` after the root still walks up it, as
/// the kernel would).
fn follow(ws: &Workspace, absolute: &Path) -> Result<PathBuf, String> {
    // Components still to walk: borrowed from `absolute`, owned only when
    // a symlink's target adds its own.
    let mut queue: VecDeque<Cow<'_, OsStr>> = VecDeque::new();
    // Room for the whole path as spelled (a symlink may need more).
    let mut current = PathBuf::with_capacity(absolute.as_os_str().len() + 1);
    let rest = match strip_root(absolute, &ws.root) {
        Some(rest) => {
            current.push(&ws.root);
            rest
        }
        None => {
            current.push("/");
            absolute
        }
    };
    for c in rest.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {}
            other => queue.push_back(Cow::Borrowed(other.as_os_str())),
        }
    }
    let mut links = 0;
    let mut exists = true;
    while let Some(part) = queue.pop_front() {
        if *part == *OsStr::new(".") {
            continue;
        }
        if *part == *OsStr::new("..") {
            current.pop();
            continue;
        }
        // `current` becomes the candidate; a symlink takes it back off.
        current.push(&*part);
        if !exists {
            continue;
        }
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(format!(
                        "too many levels of symbolic links at `{}` (a symlink loop?)",
                        current.display()
                    ));
                }
                let target = std::fs::read_link(&current)
                    .map_err(|e| format!("cannot read symlink `{}`: {e}", current.display()))?;
                current.pop();
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                for c in target.components().rev() {
                    match c {
                        Component::RootDir | Component::Prefix(_) => {}
                        other => queue.push_front(Cow::Owned(other.as_os_str().to_os_string())),
                    }
                }
            }
            Ok(_) => {}
            // The nearest existing ancestor is the parent; the rest is new.
            Err(_) => exists = false,
        }
    }
    Ok(current)
}

/// The string globs match against: workspace-relative when inside the
/// workspace, the absolute path without its leading `/` otherwise (so `**/x`
/// patterns still apply outside).
pub fn glob_key(ws: &Workspace, path: &Path) -> String {
    glob_key_ref(ws, path).into_owned()
}

/// [`glob_key`], borrowed from `path` when it is valid UTF-8.
pub fn glob_key_ref<'p>(ws: &Workspace, path: &'p Path) -> std::borrow::Cow<'p, str> {
    use std::borrow::Cow;
    match strip_root(path, &ws.root) {
        Some(rel) if rel.as_os_str().is_empty() => Cow::Borrowed("."),
        Some(rel) => rel.to_string_lossy(),
        None => match path.to_string_lossy() {
            Cow::Borrowed(s) => Cow::Borrowed(s.trim_start_matches('/')),
            Cow::Owned(s) => Cow::Owned(s.trim_start_matches('/').to_string()),
        },
    }
}

/// `path.strip_prefix(root)`, without walking both paths' components when
/// `path` is spelled as `root`, a `/` and plain segments (no empty or `.`
/// segment, no trailing `/`): then the rest is exactly what
/// [`Path::strip_prefix`] returns. Anything else is left to it.
fn strip_root<'p>(path: &'p Path, root: &Path) -> Option<&'p Path> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (bytes, prefix) = (path.as_os_str().as_bytes(), root.as_os_str().as_bytes());
        if let Some(rest) = bytes.strip_prefix(prefix) {
            if rest.is_empty() {
                return Some(Path::new(""));
            }
            if let Some(rest) = rest.strip_prefix(b"/") {
                if !prefix.is_empty()
                    && !rest.is_empty()
                    && rest
                        .split(|&b| b == b'/')
                        .all(|seg| !seg.is_empty() && seg != b".")
                {
                    return Some(Path::new(OsStr::from_bytes(rest)));
                }
            }
        }
    }
    path.strip_prefix(root).ok()
}

/// True when a shell word should be held to the roots: it is absolute, starts
/// with `~`, is a `file://` URL, or has a `..` segment.
pub fn looks_like_path(word: &str) -> bool {
    word.starts_with('/')
        || word.starts_with('~')
        || word.starts_with("file://")
        || word.split('/').any(|seg| seg == "..")
}

/// Expands a shell glob word (`*.pem`, `.e*`) against the file system the way
/// bash does by default (no dotfiles unless the pattern's segment starts with
/// `.`), so `cat .e*` is judged as `cat .env`. Returns the word itself when it
/// has no glob characters or nothing matches; at most `limit` paths.
pub fn expand_shell_glob(ws: &Workspace, word: &str, limit: usize) -> Vec<String> {
    if !word.contains(['*', '?', '[']) {
        return vec![word.to_string()];
    }
    let absolute = word.starts_with('/');
    let mut partials: Vec<PathBuf> = vec![if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    }];
    for seg in word.split('/').filter(|s| !s.is_empty()) {
        let mut next = Vec::new();
        if !seg.contains(['*', '?', '[']) {
            for p in &partials {
                next.push(p.join(seg));
            }
        } else {
            let Ok(glob) = GlobBuilder::new(seg).literal_separator(true).build() else {
                return vec![word.to_string()];
            };
            let matcher = glob.compile_matcher();
            for p in &partials {
                let dir = if absolute { p.clone() } else { ws.root.join(p) };
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    if name.starts_with('.') && !seg.starts_with('.') {
                        continue;
                    }
                    if matcher.is_match(&*name) {
                        next.push(p.join(&*name));
                        if next.len() >= limit {
                            break;
                        }
                    }
                }
            }
        }
        partials = next;
        if partials.is_empty() {
            return vec![word.to_string()];
        }
    }
    let mut out: Vec<String> = partials
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folded_path_is_kept_as_spelled() {
        for path in [
            "", "/", "//", "/a", "a", "/a/b", "/a//b", "/a/b/", "/a/./b", "/a/../b", "./a", "../a",
            "a/..", "/.", "/..", "/a/.b", "/a/..b/c", "///a", "a/b/c.d",
        ] {
            let path = Path::new(path);
            let mut rebuilt = PathBuf::new();
            for c in path.components() {
                match c {
                    Component::ParentDir => {
                        rebuilt.pop();
                    }
                    Component::CurDir => {}
                    other => rebuilt.push(other.as_os_str()),
                }
            }
            assert_eq!(fold(path).as_os_str(), rebuilt.as_os_str(), "{path:?}");
        }
    }

    #[test]
    fn strip_root_agrees_with_strip_prefix() {
        let roots = [
            "/w/ws", "/w/ws/", "/w/./ws", "/w/ws/..", "/", "", "w/ws", "./w", "/w//ws",
        ];
        let rests = [
            "", "/", "/a", "//a", "/a/", "/a/.", "/./a", "/a//b", "/a/b", "/..", "/a/../b", "x",
            "s/a", "/.a", "/a./b", "/...",
        ];
        for root in roots {
            for rest in rests {
                let path = format!("{root}{rest}");
                let (path, root) = (Path::new(&path), Path::new(root));
                assert_eq!(
                    strip_root(path, root).map(|p| p.as_os_str()),
                    path.strip_prefix(root).ok().map(|p| p.as_os_str()),
                    "{path:?} without {root:?}"
                );
            }
        }
    }

    #[test]
    fn folds_dots_lexically() {
        assert_eq!(fold(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(fold(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn file_urls_are_decoded() {
        assert_eq!(percent_decode("/a%20b"), "/a b");
        assert_eq!(percent_decode("/100%"), "/100%");
    }

    #[test]
    fn path_like_words() {
        assert!(looks_like_path("/etc/passwd"));
        assert!(looks_like_path("../x"));
        assert!(looks_like_path("~/.ssh"));
        assert!(!looks_like_path("fix the bug"));
        assert!(!looks_like_path("src/main.rs"));
    }
}
