//! Path confinement: the `paths:` rules (roots, deny, read-only).
//!
//! Paths arrive resolved by [`crate::workspace`]; both the spelled (lexical)
//! location and the real one must pass every check, so a symlink is allowed
//! only when both the link and its target are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::finding::{Finding, RuleId};
use super::Decision;
use crate::workspace::{
    glob_key_ref, path_starts_with, resolve, Access, GlobList, ResolvedPath, Workspace,
};

/// One root set: the path must be inside one of these. Each policy layer that
/// names roots adds a set, and a path must satisfy every set (deny-overrides).
#[derive(Clone, Debug)]
pub struct RootSet {
    /// As written in the policy, relative to the workspace (or absolute, or `~`).
    pub roots: Vec<String>,
}

/// The compiled `paths:` rules of every layer.
#[derive(Clone, Debug, Default)]
pub struct PathRules {
    /// Every layer's roots; a path must be inside each set.
    pub root_sets: Vec<RootSet>,
    /// Never touched (shared with the tools that walk directories).
    pub deny: Arc<GlobList>,
    /// Never written.
    pub read_only: GlobList,
}

/// Where a path the policy judges came from; `Display` is how reasons name
/// it (`argument \`path\``, `\`cat\` operand`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathSource {
    /// A tool argument the manifest declares as a path.
    Argument(String),
    /// An operand of a simple command, by its program.
    Operand(String),
    /// A redirection target (`> file`, `< file`).
    Redirection,
    /// The directory an agent CLI runs a command in.
    WorkingDirectory,
}

impl PathSource {
    /// Appends what `Display` shows, without `format!`'s machinery.
    fn push_to(&self, out: &mut String) {
        match self {
            PathSource::Argument(arg) => {
                out.push_str("argument `");
                out.push_str(arg);
                out.push('`');
            }
            PathSource::Operand(program) => {
                out.push('`');
                out.push_str(program);
                out.push_str("` operand");
            }
            PathSource::Redirection => out.push_str("redirection target"),
            PathSource::WorkingDirectory => out.push_str("working directory"),
        }
    }
}

impl std::fmt::Display for PathSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        self.push_to(&mut text);
        f.write_str(&text)
    }
}

/// One path the policy must judge: an argument declared as a path, or a word
/// of a shell command that names a file.
#[derive(Clone, Debug)]
pub struct PathFact {
    /// Where the path came from, for reasons.
    pub source: PathSource,
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
                    RuleId::PathsResolve,
                    format!(
                        "{} `{}` cannot be checked: {e}. Use a plain path inside the workspace.",
                        fact.source, fact.raw
                    ),
                ))
            }
        };
        // Where no symlink leads elsewhere, the real path is the lexical
        // one: the same checks on the same path, made once.
        let through = usize::from(resolved.real != resolved.lexical);
        for (label, path) in [
            ("", &resolved.lexical),
            (" (through a symlink)", &resolved.real),
        ]
        .into_iter()
        .take(1 + through)
        {
            if fact.check_roots
                && !roots
                    .iter()
                    .all(|set| set.iter().any(|r| path_starts_with(path, r)))
            {
                return Some(Finding::new(
                    Decision::Deny,
                    RuleId::PathsRoots,
                    format!(
                        "{} `{}` resolves{label} to `{}`, which is outside the workspace roots. Use a path inside the workspace.",
                        fact.source,
                        fact.raw,
                        path.display()
                    ),
                ));
            }
            let key = glob_key_ref(ws, path);
            if let Some(glob) = self.deny.covering_key(&key) {
                // `{source} `{raw}`{label} is denied by the policy (matches
                // `{glob}`). Do not access this file.`, in one buffer.
                let mut reason = String::with_capacity(96 + fact.raw.len() + glob.len());
                fact.source.push_to(&mut reason);
                for part in [
                    " `",
                    &fact.raw,
                    "`",
                    label,
                    " is denied by the policy (matches `",
                    glob,
                    "`). Do not access this file.",
                ] {
                    reason.push_str(part);
                }
                return Some(Finding::new(
                    Decision::Deny,
                    RuleId::PathsDeny(glob.to_string()),
                    reason,
                ));
            }
            if fact.access == Access::Write {
                if let Some(glob) = self.read_only.first_match(&key) {
                    return Some(Finding::new(
                        Decision::Deny,
                        RuleId::PathsReadOnly(glob.to_string()),
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
        self.deny.covering(ws, path).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reasons and rule ids are built without `format!`; these are the texts
    /// they replaced.
    #[test]
    fn deny_reasons_read_as_the_format_strings_did() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let rules = PathRules {
            root_sets: vec![RootSet {
                roots: vec![".".into()],
            }],
            deny: Arc::new(GlobList::new(&["**/.env".to_string()]).unwrap()),
            read_only: GlobList::default(),
        };
        let roots = rules.resolved_roots(&ws);
        let sources = [
            PathSource::Argument("path".into()),
            PathSource::Operand("cat".into()),
            PathSource::Redirection,
            PathSource::WorkingDirectory,
        ];
        let shown = [
            "argument `path`",
            "`cat` operand",
            "redirection target",
            "working directory",
        ];
        for (source, shown) in sources.into_iter().zip(shown) {
            assert_eq!(source.to_string(), shown);
            for (lexical, real, label) in [
                ("a/.env", "a/.env", ""),
                ("link", "a/.env", " (through a symlink)"),
            ] {
                let fact = PathFact {
                    source: source.clone(),
                    raw: "./x é".into(),
                    access: Access::Read,
                    resolved: Ok(ResolvedPath {
                        lexical: ws.root().join(lexical),
                        real: ws.root().join(real),
                    }),
                    check_roots: true,
                };
                let finding = rules.check(&ws, &roots, &fact).expect("denied");
                assert_eq!(
                    finding.reason,
                    format!("{shown} `./x é`{label} is denied by the policy (matches `**/.env`). Do not access this file.")
                );
                assert_eq!(finding.rule.to_string(), "paths.deny[**/.env]");
                assert_eq!(finding.rule.into_string(), "paths.deny[**/.env]");
            }
        }
        assert_eq!(
            RuleId::PathsReadOnly("Cargo.lock".into()).into_string(),
            "paths.read_only[Cargo.lock]"
        );
    }
}
