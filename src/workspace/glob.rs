//! Globs as every toolgate glob works: `*` never crosses `/`, and a list
//! remembers which pattern matched.

use std::cell::Cell;
use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

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
        self.matched(path)
    }

    /// [`GlobList::first_match`] without the literal prefilter.
    fn matched(&self, path: &str) -> Option<&str> {
        let set = self.set.get_or_init(|| {
            let mut builder = GlobSetBuilder::new();
            for p in &self.patterns {
                // Checked in `new`; a failure here fails closed (below).
                builder.add(compile_glob(p).ok()?);
            }
            builder.build().ok()
        });
        match set {
            // One pattern: whether it matches is all there is to know.
            Some(set) if self.patterns.len() == 1 => {
                set.is_match(path).then(|| self.patterns[0].as_str())
            }
            Some(set) => first_index(set, path).map(|i| self.patterns[i].as_str()),
            // Every glob was checked in `new`, so only a size limit can
            // fail the set; then every pattern is taken to match (deny and
            // read-only lists fail closed).
            None => self.patterns.first().map(String::as_str),
        }
    }

    /// The first pattern that covers `path` (absolute, as spelled) or, for a
    /// directory, what is inside it: `.git/**` covers `.git` itself, so
    /// `grep -r x .git` is judged like `.git/config`.
    pub fn covering(&self, ws: &super::Workspace, path: &std::path::Path) -> Option<&str> {
        self.covering_key(&super::glob_key_ref(ws, path))
    }

    /// [`GlobList::covering`] for a path already turned into its
    /// [`glob_key`](super::glob_key).
    pub fn covering_key(&self, key: &str) -> Option<&str> {
        const INSIDE: &str = "/\u{0}";
        // `first_match`'s literal prefilter, for `key` and for `key/\0`
        // (which contains a literal when `key` does, or when the literal
        // reaches into the appended part), so the usual path that no
        // glob's literal is in costs one pass and builds nothing.
        let in_key = self.required.iter().any(|r| key.contains(r.as_str()));
        if in_key {
            if let Some(glob) = self.matched(key) {
                return Some(glob);
            }
        }
        if in_key || self.required.iter().any(|r| reaches_into(key, INSIDE, r)) {
            return with_buffer(&PROBE, |probe| {
                probe.clear();
                probe.push_str(key);
                probe.push_str(INSIDE);
                self.matched(probe)
            });
        }
        None
    }

    /// True when no pattern is present.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

thread_local! {
    /// The indices of the globs that matched, reused from call to call.
    static MATCHES: Cell<Vec<usize>> = const { Cell::new(Vec::new()) };
    /// `key/\0` for [`GlobList::covering_key`], reused from call to call.
    static PROBE: Cell<String> = const { Cell::new(String::new()) };
}

/// Runs `f` on this thread's buffer in `slot` (taken out meanwhile, so a
/// nested use gets an empty one; an exiting thread gets a fresh one).
fn with_buffer<B: Default, R>(
    slot: &'static std::thread::LocalKey<Cell<B>>,
    f: impl FnOnce(&mut B) -> R,
) -> R {
    let mut buffer = slot.try_with(Cell::take).unwrap_or_default();
    let answer = f(&mut buffer);
    let _ = slot.try_with(|cell| cell.set(buffer));
    answer
}

/// The lowest index of a glob in `set` that matches `path`, without a
/// `Vec` per call.
fn first_index(set: &GlobSet, path: &str) -> Option<usize> {
    with_buffer(&MATCHES, |matches| {
        set.matches_into(path, matches);
        matches.iter().copied().min()
    })
}

/// True when `needle` occurs in `a` followed by `b` other than wholly
/// inside `a`: inside `b`, or across the two.
fn reaches_into(a: &str, b: &str, needle: &str) -> bool {
    b.contains(needle)
        || (1..needle.len()).any(|k| {
            needle.is_char_boundary(k) && a.ends_with(&needle[..k]) && b.starts_with(&needle[k..])
        })
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
    // By byte: a byte of a non-ASCII character is neither (as the
    // character is neither).
    let allowed = |b: u8| matches!(b, b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' | b'+' | b'@' | b'=' | b'~' | b'/' | b'*' | b'?');
    pattern.bytes().all(allowed)
        && pattern.split('/').all(|component| {
            component == "**" || !component.as_bytes().windows(2).any(|w| w == b"**")
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobSetBuilder;

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
        assert!(is_plain_glob("a+b@c=d~e_F9.x-y"));
        // The byte-wise check says what the first, character-wise one said.
        let reference = |p: &str| {
            let allowed = |c: char| c.is_ascii_alphanumeric() || "._-+@=~/*?".contains(c);
            p.chars().all(allowed) && p.split('/').all(|c| c == "**" || !c.contains("**"))
        };
        let mut words = vec![String::new()];
        for _ in 0..4 {
            words = words
                .iter()
                .flat_map(|w| {
                    ["*", "/", "a", "Z", "9", "é", "[", " ", "+"].map(|c| format!("{w}{c}"))
                })
                .collect();
            for w in &words {
                assert_eq!(is_plain_glob(w), reference(w), "{w:?}");
            }
        }
        for p in &patterns {
            assert_eq!(is_plain_glob(p), reference(p), "{p:?}");
        }
        for not_plain in ["é*", "*.ﬁ", "a{b,c}", "a\\*", "a b", "a!", "\u{0}", "a,b"] {
            assert!(!is_plain_glob(not_plain), "{not_plain:?}");
        }
    }

    #[test]
    fn a_literal_in_a_join_is_in_one_part_or_across() {
        let parts = ["", "a", ".git", "x/.gi", "é", "/", "\u{0}", "/\u{0}", "t/"];
        let needles = [
            "",
            "a",
            ".git",
            "git/",
            "t/\u{0}",
            "/\u{0}",
            "é/",
            "/",
            "x/.git/\u{0}",
            "ab",
        ];
        for a in parts {
            for b in parts {
                for n in needles {
                    let joined = format!("{a}{b}");
                    assert_eq!(
                        a.contains(n) || reaches_into(a, b, n),
                        joined.contains(n),
                        "{a:?} {b:?} {n:?}"
                    );
                }
            }
        }
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
            let inside = format!("{path}/\u{0}");
            assert_eq!(
                all.covering_key(path).map(str::to_string),
                reference(&patterns, path).or_else(|| reference(&patterns, &inside)),
                "covering {path:?}"
            );
            for p in &patterns {
                let one = GlobList::new(std::slice::from_ref(p)).unwrap();
                assert_eq!(
                    one.covering_key(path).map(str::to_string),
                    reference(std::slice::from_ref(p), path)
                        .or_else(|| reference(std::slice::from_ref(p), &inside)),
                    "{p:?} covering {path:?}"
                );
                assert_eq!(
                    one.first_match(path).map(str::to_string),
                    reference(std::slice::from_ref(p), path),
                    "{p:?} against {path:?}"
                );
            }
        }
    }
}
