//! Path resolution and confinement.
//!
//! A path is judged by where it really leads, not by how it is spelled: it is
//! resolved against the workspace (`@` prefix, `~`, `file://` accepted), `.`
//! and `..` folded, and symlinks followed — for a file that does not exist yet,
//! through its nearest existing ancestor. Both the spelled (lexical) location
//! and the real one must pass every check, so a symlink is allowed only when
//! both the link and its target are.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::decide::Finding;
use super::{Access, Decision};

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

/// `@x` -> `x`, `file:///x` -> `/x`, `~/x` -> `$HOME/x`.
pub(crate) fn expand(ws: &Workspace, raw: &str) -> PathBuf {
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
    let mut out = PathBuf::new();
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

/// Follows symlinks component by component, as the kernel does (so `link/..`
/// is the target's parent), and folds the part that does not exist yet.
///
/// The workspace root was canonicalized when the workspace was opened, so a
/// path spelled under it starts from there instead of checking each of the
/// root's own components again (a `..` after the root still walks up it, as
/// the kernel would).
fn follow(ws: &Workspace, absolute: &Path) -> Result<PathBuf, String> {
    let mut queue: VecDeque<OsString> = VecDeque::new();
    let (mut current, rest) = match absolute.strip_prefix(&ws.root) {
        Ok(rest) => (ws.root.clone(), rest),
        Err(_) => (PathBuf::from("/"), absolute),
    };
    for c in rest.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {}
            other => queue.push_back(other.as_os_str().to_os_string()),
        }
    }
    let mut links = 0;
    let mut exists = true;
    while let Some(part) = queue.pop_front() {
        if part == "." {
            continue;
        }
        if part == ".." {
            current.pop();
            continue;
        }
        let candidate = current.join(&part);
        if !exists {
            current = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(format!(
                        "too many levels of symbolic links at `{}` (a symlink loop?)",
                        candidate.display()
                    ));
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|e| format!("cannot read symlink `{}`: {e}", candidate.display()))?;
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                for c in target.components().rev() {
                    match c {
                        Component::RootDir | Component::Prefix(_) => {}
                        other => queue.push_front(other.as_os_str().to_os_string()),
                    }
                }
            }
            Ok(_) => current = candidate,
            Err(_) => {
                // The nearest existing ancestor is `current`; the rest is new.
                exists = false;
                current = candidate;
            }
        }
    }
    Ok(current)
}

/// One root set: the path must be inside one of these. Each policy layer that
/// names roots adds a set, and a path must satisfy every set (deny-overrides).
#[derive(Clone, Debug)]
pub struct RootSet {
    /// As written in the policy, relative to the workspace (or absolute, or `~`).
    pub roots: Vec<String>,
}

/// A compiled glob list that remembers which pattern matched.
///
/// Each glob is checked when the list is made, but the matcher over all of
/// them is built on the first path that could match: building it is the
/// larger part of loading a policy, and a hook starts for every call. A path
/// could match only when it contains every glob's [`required_literal`] for
/// some glob (`.ssh` for `**/.ssh/**`), so `src/main.rs` is cleared against
/// the default deny list without building anything.
#[derive(Clone, Debug, Default)]
pub struct GlobList {
    patterns: Vec<String>,
    /// Per glob, a substring every path it matches contains ("" when none).
    required: Vec<String>,
    set: OnceLock<Option<GlobSet>>,
}

impl GlobList {
    /// Checks globs (with `literal_separator`: `*` never crosses `/`); they
    /// are compiled when the first path needs them. A [plain](is_plain_glob)
    /// glob cannot fail to compile, so only the others are compiled now, for
    /// their errors.
    pub fn new(patterns: &[String]) -> Result<GlobList, (usize, String)> {
        for (i, p) in patterns.iter().enumerate() {
            if !is_plain_glob(p) {
                compile_glob(p).map_err(|e| (i, e))?;
            }
        }
        Ok(GlobList {
            required: patterns.iter().map(|p| required_literal(p)).collect(),
            patterns: patterns.to_vec(),
            set: OnceLock::new(),
        })
    }

    /// The first pattern that matches `path` (a `/`-separated relative path).
    pub fn first_match(&self, path: &str) -> Option<&str> {
        if !self.required.iter().any(|r| path.contains(r.as_str())) {
            return None;
        }
        let set = self.set.get_or_init(|| {
            let mut builder = GlobSetBuilder::new();
            for p in &self.patterns {
                // Checked in `new`; a failure here fails closed (below).
                builder.add(compile_glob(p).ok()?);
            }
            builder.build().ok()
        });
        match set {
            Some(set) => set
                .matches(path)
                .into_iter()
                .min()
                .map(|i| self.patterns[i].as_str()),
            // Every glob was checked in `new`, so only a size limit can
            // fail the set; then every pattern is taken to match (deny and
            // read-only lists fail closed).
            None => self.patterns.first().map(String::as_str),
        }
    }

    /// True when no pattern is present.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

/// The longest run of plain characters that every path matched by `pattern`
/// must contain, or "" when there is none to be sure of.
///
/// Only `*`, `?` and `**` are looked through; a pattern with a class
/// (`[…]`), an alternation (`{…}`) or an escape gets "" (always checked), and
/// `/` at the edge of a run is not required (`**/x` matches a top-level `x`).
/// So the answer is never wrong, only sometimes less selective than it could
/// be.
pub fn required_literal(pattern: &str) -> String {
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    if pattern.contains(['[', ']', '{', '}', '\\']) {
        return String::new();
    }
    pattern
        .split(['*', '?'])
        .map(|run| run.trim_matches('/'))
        .max_by_key(|run| run.len())
        .unwrap_or("")
        .to_string()
}

/// True for a glob made only of letters, digits, `._-+@=~/`, `*` and `?`,
/// with `**` only as a whole path component: globset compiles every such
/// glob, so it need not be compiled just to be checked.
pub fn is_plain_glob(pattern: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-+@=~/*?".contains(c);
    pattern.chars().all(allowed)
        && pattern
            .split('/')
            .all(|component| component == "**" || !component.contains("**"))
}

/// Compiles one glob the way every toolgate glob works.
pub fn compile_glob(pattern: &str) -> Result<Glob, String> {
    let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
    GlobBuilder::new(trimmed)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// The compiled `paths:` rules of every layer.
#[derive(Clone, Debug, Default)]
pub struct PathRules {
    /// Every layer's roots; a path must be inside each set.
    pub root_sets: Vec<RootSet>,
    /// Never touched.
    pub deny: GlobList,
    /// Never written.
    pub read_only: GlobList,
}

/// One path the policy must judge: an argument declared as a path, or a word
/// of a shell command that names a file.
#[derive(Clone, Debug)]
pub struct PathFact {
    /// Where the path came from, for reasons: `argument \`path\``, `cat operand`, …
    pub source: String,
    /// The path as given.
    pub raw: String,
    /// What the tool does with it.
    pub access: Access,
    /// Where it leads, or why it cannot be resolved.
    pub resolved: Result<ResolvedPath, String>,
    /// Check roots for this path. Shell words are checked against roots only
    /// when they look like paths (absolute, `~`, or a `..` segment), so that
    /// `git commit -m "fix bug"` is not judged as a file.
    pub check_roots: bool,
}

impl PathRules {
    /// Resolves each root of each set against the workspace.
    pub fn resolved_roots(&self, ws: &Workspace) -> Vec<Vec<PathBuf>> {
        self.root_sets
            .iter()
            .map(|set| {
                set.roots
                    .iter()
                    .filter_map(|r| resolve(ws, r).ok())
                    .flat_map(|r| [r.lexical, r.real])
                    .collect()
            })
            .collect()
    }

    /// Judges one path: `Some(deny finding)` when it breaks a rule.
    pub fn check(
        &self,
        ws: &Workspace,
        roots: &[Vec<PathBuf>],
        fact: &PathFact,
    ) -> Option<Finding> {
        let resolved = match &fact.resolved {
            Ok(r) => r,
            Err(e) => {
                return Some(Finding::new(
                    Decision::Deny,
                    "paths.resolve",
                    format!(
                        "{} `{}` cannot be checked: {e}. Use a plain path inside the workspace.",
                        fact.source, fact.raw
                    ),
                ))
            }
        };
        for (label, path) in [
            ("", &resolved.lexical),
            (" (through a symlink)", &resolved.real),
        ] {
            if fact.check_roots
                && !roots
                    .iter()
                    .all(|set| set.iter().any(|r| path.starts_with(r)))
            {
                return Some(Finding::new(
                    Decision::Deny,
                    "paths.roots",
                    format!(
                        "{} `{}` resolves{label} to `{}`, which is outside the workspace roots. Use a path inside the workspace.",
                        fact.source,
                        fact.raw,
                        path.display()
                    ),
                ));
            }
            let key = glob_key(ws, path);
            // A directory is denied when the glob denies what is inside it, so
            // `grep -r x .git` is judged like `.git/config` (`.git/**`).
            let inside = format!("{key}/\u{0}");
            if let Some(glob) = self
                .deny
                .first_match(&key)
                .or_else(|| self.deny.first_match(&inside))
            {
                return Some(Finding::new(
                    Decision::Deny,
                    format!("paths.deny[{glob}]"),
                    format!(
                        "{} `{}`{label} is denied by the policy (matches `{glob}`). Do not access this file.",
                        fact.source, fact.raw
                    ),
                ));
            }
            if fact.access == Access::Write {
                if let Some(glob) = self.read_only.first_match(&key) {
                    return Some(Finding::new(
                        Decision::Deny,
                        format!("paths.read_only[{glob}]"),
                        format!(
                            "{} `{}`{label} is read-only under this policy (matches `{glob}`). It may be read but not changed.",
                            fact.source, fact.raw
                        ),
                    ));
                }
            }
        }
        None
    }
}

impl PathRules {
    /// True when the deny globs cover `path` (absolute, as spelled), or, for a
    /// directory, what is inside it. Search tools skip such entries while
    /// walking, so a search never shows what a read of the file would be
    /// refused; a denied directory is not entered at all.
    pub fn denies_read(&self, ws: &Workspace, path: &Path) -> bool {
        let key = glob_key(ws, path);
        // The same "inside" probe as `check`: `.git/**` covers `.git` itself.
        let inside = format!("{key}/\u{0}");
        self.deny.first_match(&key).is_some() || self.deny.first_match(&inside).is_some()
    }
}

/// The string globs match against: workspace-relative when inside the
/// workspace, the absolute path without its leading `/` otherwise (so `**/x`
/// patterns still apply outside).
pub fn glob_key(ws: &Workspace, path: &Path) -> String {
    match path.strip_prefix(&ws.root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().trim_start_matches('/').to_string(),
    }
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

    #[test]
    fn required_literals_are_what_every_match_contains() {
        assert_eq!(required_literal("**/.ssh/**"), ".ssh");
        assert_eq!(required_literal("./.git/**"), ".git");
        assert_eq!(required_literal("**/id_ed25519*"), "id_ed25519");
        assert_eq!(required_literal("**/*.pem"), ".pem");
        assert_eq!(required_literal("src/?/lib.rs"), "lib.rs");
        // Classes, alternations and escapes are not looked into.
        assert_eq!(required_literal("[]a]"), "");
        assert_eq!(required_literal("**/*.{pem,key}"), "");
        assert_eq!(required_literal("a\\*b"), "");
        assert_eq!(required_literal("**"), "");
    }

    /// `is_plain_glob` promises a successful compile.
    #[test]
    fn plain_globs_always_compile() {
        let alphabet = ['a', '.', '*', '/', '?', '-', '~'];
        let mut plain = 0;
        // Every pattern of up to five characters over the alphabet.
        let mut patterns = vec![String::new()];
        let mut longest = vec![String::new()];
        for _ in 0..5 {
            longest = longest
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            patterns.extend(longest.iter().cloned());
        }
        for p in &patterns {
            if is_plain_glob(p) {
                plain += 1;
                assert!(compile_glob(p).is_ok(), "{p:?}");
            }
        }
        assert!(plain > 5000, "{plain}");
        assert!(!is_plain_glob("a**"));
        assert!(!is_plain_glob("[ab]"));
        assert!(is_plain_glob("**/.ssh/**"));
    }

    /// The prefilter never changes an answer: every pattern against every
    /// path, as one list and one by one, agrees with a plain `GlobSet`.
    #[test]
    fn the_literal_prefilter_agrees_with_globset() {
        let patterns: Vec<String> = [
            "**/.env",
            "**/.env.*",
            ".git/**",
            "**/*.pem",
            "**/id_rsa*",
            "**/.ssh/**",
            "Cargo.lock",
            "policies/**",
            "*",
            "**",
            "src/*.rs",
            "a/**/b",
            "**/x?z",
            "[]a]",
            "[!a]b",
            "{a,b}/c",
            "**/*.{pem,key}",
            "a\\*b",
            "a,b",
            "./lib/**",
            "**/.aws/**",
            "é*ß",
            "*/",
        ]
        .iter()
        .map(|p| p.to_string())
        .collect();
        let paths = [
            ".",
            "src/main.rs",
            ".env",
            "a/.env",
            ".env.local",
            "x/.env.prod",
            ".git",
            ".git/config",
            ".git/\u{0}",
            "keys/server.pem",
            "id_rsa",
            "home/id_rsa.pub",
            "u/.ssh/known_hosts",
            ".ssh/\u{0}",
            "Cargo.lock",
            "sub/Cargo.lock",
            "policies",
            "policies/a.yaml",
            "a/b",
            "a/x/y/b",
            "b",
            "xyz",
            "q/xaz",
            "]",
            "a",
            "ab",
            "bb",
            "a/c",
            "b/c",
            "k.key",
            "a*b",
            "a,b",
            "lib/x",
            "éxß",
            "x/",
            "",
        ];
        let reference = |set: &[String], path: &str| {
            let mut builder = GlobSetBuilder::new();
            for p in set {
                builder.add(compile_glob(p).unwrap());
            }
            let matched = builder.build().unwrap().matches(path).into_iter().min();
            matched.map(|i| set[i].clone())
        };
        let all = GlobList::new(&patterns).unwrap();
        for path in paths {
            assert_eq!(
                all.first_match(path).map(str::to_string),
                reference(&patterns, path),
                "{path:?}"
            );
            for p in &patterns {
                let one = GlobList::new(std::slice::from_ref(p)).unwrap();
                assert_eq!(
                    one.first_match(path).map(str::to_string),
                    reference(std::slice::from_ref(p), path),
                    "{p:?} against {path:?}"
                );
            }
        }
    }
}
