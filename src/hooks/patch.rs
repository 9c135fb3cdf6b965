//! Codex's `apply_patch` format, read for one question: which files does a
//! patch write, and with what text?
//!
//! ```text
//! *** Begin Patch
//! *** Add File: docs/new.md
//! +hello
//! *** Update File: src/lib.rs
//! *** Move to: src/core.rs
//! @@ fn main
//! -old
//! +new
//! *** Delete File: old.txt
//! *** End Patch
//! ```
//!
//! The parser is strict on purpose: a line it does not understand is an
//! error, and the hook denies the call. A looser reading could miss a file
//! header that Codex would act on.

use std::fmt;

/// One file a patch writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileWrite {
    /// The file, as the patch spells it (relative to the session's directory
    /// or absolute).
    pub path: String,
    /// The text the patch puts there: an added file's lines, an update's `+`
    /// lines; empty for a delete and for the source of a move.
    pub content: String,
}

/// Why a patch could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatchError {
    /// The 1-based line of the problem (0 when it concerns the whole patch).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

fn error(line: usize, message: impl Into<String>) -> PatchError {
    PatchError {
        line,
        message: message.into(),
    }
}

/// Every file `patch` writes, in the order the patch names them. A moved file
/// counts twice: its old path (emptied) and its new one.
pub fn files_written(patch: &str) -> Result<Vec<FileWrite>, PatchError> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut numbered = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, *l))
        .filter(|(_, l)| !l.trim().is_empty());
    match numbered.next() {
        Some((_, l)) if l.trim() == "*** Begin Patch" => {}
        Some((n, _)) => return Err(error(n, "a patch must start with `*** Begin Patch`")),
        None => return Err(error(0, "the patch is empty")),
    }
    let mut out: Vec<FileWrite> = Vec::new();
    // The file whose body lines are being read, and whether it is an added
    // file (whose every line must be `+`).
    let mut current: Option<(usize, bool)> = None;
    let mut after_update_header = false;
    let mut ended = false;
    for (n, line) in numbered {
        if ended {
            return Err(error(n, "text after `*** End Patch`"));
        }
        let marker = line.trim();
        let follows_update = std::mem::take(&mut after_update_header);
        if let Some(rest) = marker.strip_prefix("*** ") {
            let header = |prefix: &str| rest.strip_prefix(prefix).map(str::trim);
            if marker == "*** End Patch" {
                ended = true;
            } else if marker == "*** End of File" {
                if current.is_none() {
                    return Err(error(n, "`*** End of File` outside a file"));
                }
            } else if let Some(path) = header("Add File:") {
                out.push(file(n, path)?);
                current = Some((out.len() - 1, true));
            } else if let Some(path) = header("Update File:") {
                out.push(file(n, path)?);
                current = Some((out.len() - 1, false));
                after_update_header = true;
            } else if let Some(path) = header("Delete File:") {
                out.push(file(n, path)?);
                current = None;
            } else if let Some(path) = header("Move to:") {
                // Only right after `Update File`: the updated text lands at
                // the new path and the old one is left empty.
                if !follows_update {
                    return Err(error(n, "`*** Move to:` must follow `*** Update File:`"));
                }
                out.push(file(n, path)?);
                current = Some((out.len() - 1, false));
            } else {
                return Err(error(n, format!("unknown patch header `{marker}`")));
            }
            continue;
        }
        let Some((i, added)) = current else {
            return Err(error(n, "a line outside any file section"));
        };
        if let Some(text) = line.strip_prefix('+') {
            let content = &mut out[i].content;
            content.push_str(text);
            content.push('\n');
        } else if added {
            return Err(error(n, "every line of an added file must start with `+`"));
        } else if !(line.starts_with(' ') || line.starts_with('-') || line.starts_with("@@")) {
            return Err(error(
                n,
                "a hunk line must start with ` `, `-`, `+` or `@@`",
            ));
        }
    }
    if !ended {
        return Err(error(0, "the patch does not end with `*** End Patch`"));
    }
    if out.is_empty() {
        return Err(error(0, "the patch names no file"));
    }
    Ok(out)
}

fn file(line: usize, path: &str) -> Result<FileWrite, PatchError> {
    if path.is_empty() {
        return Err(error(line, "a file header without a path"));
    }
    Ok(FileWrite {
        path: path.to_string(),
        content: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(patch: &str) -> Vec<String> {
        files_written(patch)
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect()
    }

    #[test]
    fn every_kind_of_header_is_a_write() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Update File: src/lib.rs\n*** Move to: src/core.rs\n@@ fn x\n-old\n+new\n context\n*** Delete File: gone.txt\n*** End Patch\n";
        let files = files_written(patch).unwrap();
        assert_eq!(
            paths(patch),
            ["a.txt", "src/lib.rs", "src/core.rs", "gone.txt"]
        );
        assert_eq!(files[0].content, "one\ntwo\n");
        assert_eq!(files[1].content, "", "the source of a move is emptied");
        assert_eq!(files[2].content, "new\n");
    }

    #[test]
    fn absolute_and_parent_paths_are_kept_as_spelled() {
        let patch = "*** Begin Patch\n*** Update File: ../outside.txt\n@@\n-a\n+b\n*** End of File\n*** Add File: /etc/cron.d/x\n+* * * * * root sh\n*** End Patch";
        assert_eq!(paths(patch), ["../outside.txt", "/etc/cron.d/x"]);
    }

    #[test]
    fn what_is_not_understood_is_an_error() {
        for (patch, want) in [
            ("", "empty"),
            ("*** Add File: a\n+x\n*** End Patch", "must start"),
            ("*** Begin Patch\n*** Add File: a\n+x\n", "does not end"),
            (
                "*** Begin Patch\n*** Copy File: a\n*** End Patch",
                "unknown patch header",
            ),
            (
                "*** Begin Patch\n*** Add File: \n+x\n*** End Patch",
                "without a path",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nx\n*** End Patch",
                "must start with `+`",
            ),
            ("*** Begin Patch\nstray\n*** End Patch", "outside any file"),
            ("*** Begin Patch\n*** End Patch", "names no file"),
            (
                "*** Begin Patch\n*** Move to: b\n*** End Patch",
                "must follow",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Add File: b\n",
                "after `*** End Patch`",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n?x\n*** End Patch",
                "hunk line",
            ),
        ] {
            let err = files_written(patch).unwrap_err().to_string();
            assert!(err.contains(want), "{patch:?}: {err}");
        }
    }
}
