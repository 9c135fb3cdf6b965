//! Command patterns from policy lists (`rm -rf`, `git push --force`),
//! matched word by word against analyzed commands, with a small table of
//! flag aliases so a synonym cannot sidestep a deny entry.

use std::sync::OnceLock;

use super::{basename, is_flag, SimpleCommand};

/// Which way a pattern's positional words must line up with a command's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchMode {
    /// For allow lists (a false match would allow too much): the pattern's
    /// positional words must be the command's FIRST positional (non-flag)
    /// words, in order.
    Prefix,
    /// For deny/ask lists (a missed match would allow too much): the
    /// pattern's positional words appear in order anywhere among the
    /// command's positional words (so `git -C dir push` matches `git push`).
    Anywhere,
}

/// A flag after alias folding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Flag {
    Short(char),
    Long(String),
}

/// A set of flags, kept sorted in a `Vec` (a command has a handful, and a
/// `BTreeSet` costs more to fill, compare and drop on every decision).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct FlagSet(Vec<Flag>);

impl FlagSet {
    /// Sorted and deduplicated at once (inserting one by one in order would
    /// be quadratic in a word of thousands of distinct short flags).
    fn from_unsorted(mut flags: Vec<Flag>) -> FlagSet {
        flags.sort_unstable();
        flags.dedup();
        FlagSet(flags)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_subset(&self, other: &FlagSet) -> bool {
        self.0.iter().all(|f| other.0.binary_search(f).is_ok())
    }
}

impl IntoIterator for FlagSet {
    type Item = Flag;
    type IntoIter = std::vec::IntoIter<Flag>;

    /// In order, as a `BTreeSet` would give them.
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// A command pattern from a policy list such as "rm -rf" or
/// "git push --force".
#[derive(Clone, Debug)]
pub struct CommandPattern {
    text: String,
    program: String,
    /// Flags compared as written: no alias folding (`exact: true`).
    exact: bool,
    /// The words after the program; for a [plain](plain_words) pattern
    /// read the first time a command runs `program` (a command is judged
    /// against every list entry, nearly all for other programs).
    words: OnceLock<Words>,
}

/// A pattern's words after its program.
#[derive(Clone, Debug)]
struct Words {
    positional: Vec<String>,
    flags: FlagSet,
    /// The git subcommand of `positional` (for flag aliases), found once.
    git: GitSub,
    /// Whether `positional` names a literal `--`, found once.
    double_dash: bool,
}

impl Words {
    /// `args` (the words after the program) split and folded.
    fn read(program: &str, exact: bool, args: &[&str]) -> Words {
        let git = GitSub::of(program, args);
        let fold_as = if exact { "" } else { program };
        let (positional, flags) = split_words(fold_as, git, args.iter().copied());
        let positional: Vec<String> = positional.into_iter().map(str::to_string).collect();
        Words {
            git: GitSub::of(program, &positional),
            double_dash: positional.iter().any(|w| w == "--"),
            positional,
            flags,
        }
    }
}

/// The words of a pattern made only of letters, digits, `._+/=:@,%~^-` and
/// spaces, whose first word names a program: such a pattern always parses
/// (no quotes, escapes, operators or expansions for [`split_pattern`] to
/// refuse), and its words are what [`split_pattern`] returns. `None` for
/// every other pattern.
fn plain_words(pattern: &str) -> Option<Vec<&str>> {
    plain_program(pattern)?;
    Some(pattern.split(' ').filter(|w| !w.is_empty()).collect())
}

/// The bytes of a [plain](plain_words) pattern.
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        table[i] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b' ' | b'.'
                    | b'_'
                    | b'+'
                    | b'/'
                    | b'='
                    | b':'
                    | b'@'
                    | b','
                    | b'%'
                    | b'~'
                    | b'^'
                    | b'-'
            );
        i += 1;
    }
    table
};

/// The program of a [plain](plain_words) pattern (its first word's
/// basename); `None` for every other pattern.
fn plain_program(pattern: &str) -> Option<&str> {
    if !pattern.bytes().all(|b| PLAIN[usize::from(b)]) {
        return None;
    }
    let program = basename(pattern.split(' ').find(|w| !w.is_empty())?);
    (!program.is_empty() && !is_flag(program)).then_some(program)
}

/// The flag spellings that mean the same thing, so a deny entry cannot be
/// sidestepped by a synonym. Kept deliberately small:
/// - `rm`: `-R` and `--recursive` are `-r`; `--force` is `-f`.
/// - `git ... push`: `-f` and `--force-with-lease` are `--force`, and a
///   `+refspec` operand (a forced update) also counts as `--force`.
/// - `git ... clean`: `--force` is `-f`, `--dry-run` is `-n`.
/// - `git ... restore`: `--staged` is `-S`, `--worktree` is `-W`.
fn fold_flag(program: &str, git: GitSub, flag: Flag) -> Flag {
    let git_push = git == GitSub::Push;
    if program.is_empty() {
        return flag;
    }
    match (program, flag) {
        ("rm", Flag::Short('R')) => Flag::Short('r'),
        ("rm", Flag::Long(l)) if l == "recursive" => Flag::Short('r'),
        ("rm", Flag::Long(l)) if l == "force" => Flag::Short('f'),
        ("git", Flag::Short('f')) if git_push => Flag::Long("force".into()),
        ("git", Flag::Long(l)) if git_push && l == "force-with-lease" => Flag::Long("force".into()),
        ("git", Flag::Long(l)) if git == GitSub::Clean && l == "force" => Flag::Short('f'),
        ("git", Flag::Long(l)) if git == GitSub::Clean && l == "dry-run" => Flag::Short('n'),
        ("git", Flag::Long(l)) if git == GitSub::Restore && l == "staged" => Flag::Short('S'),
        ("git", Flag::Long(l)) if git == GitSub::Restore && l == "worktree" => Flag::Short('W'),
        (_, flag) => flag,
    }
}

/// The git subcommand a pattern names, for its flag aliases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GitSub {
    Push,
    Clean,
    Restore,
    Other,
}

impl GitSub {
    fn of(program: &str, words: &[impl AsRef<str>]) -> GitSub {
        if program != "git" {
            return GitSub::Other;
        }
        let has = |w: &str| words.iter().any(|x| x.as_ref() == w);
        if has("push") {
            GitSub::Push
        } else if has("clean") {
            GitSub::Clean
        } else if has("restore") {
            GitSub::Restore
        } else {
            GitSub::Other
        }
    }
}

/// `mkfs.ext4` and friends are `mkfs`: the front end only dispatches to them.
fn program_matches(pattern: &str, program: &str) -> bool {
    program == pattern || (pattern == "mkfs" && program.starts_with("mkfs.") && program.len() > 5)
}

/// Splits words into positional words and folded flags. A `--` ends the
/// options and is kept as a positional word, so a pattern can name it
/// (`git checkout --`). An empty `program` folds nothing (`exact: true`).
fn split_words<'a>(
    program: &str,
    git: GitSub,
    args: impl Iterator<Item = &'a str>,
) -> (Vec<&'a str>, FlagSet) {
    let mut positional = Vec::new();
    let mut flags = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
            positional.push(arg);
        } else if !options_done && is_flag(arg) {
            if let Some(long) = arg.strip_prefix("--") {
                let name = long.split_once('=').map_or(long, |(n, _)| n);
                flags.push(fold_flag(program, git, Flag::Long(name.to_string())));
            } else {
                for c in arg[1..].chars() {
                    flags.push(fold_flag(program, git, Flag::Short(c)));
                }
            }
        } else {
            if program == "git" && git == GitSub::Push && arg.starts_with('+') && arg.len() > 1 {
                // (Only when folding: `exact` passes an empty program.)
                flags.push(Flag::Long("force".into()));
            }
            positional.push(arg);
        }
    }
    (positional, FlagSet::from_unsorted(flags))
}

impl CommandPattern {
    /// Parses a pattern; errors say what is wrong and what to write instead.
    pub fn parse(pattern: &str) -> Result<Self, String> {
        Self::parse_with(pattern, false)
    }

    /// [`CommandPattern::parse`]; with `exact`, the pattern's flags and the
    /// command's are compared as written, without the alias table
    /// (`--force-with-lease` and `-f` are then not `--force`).
    pub fn parse_with(pattern: &str, exact: bool) -> Result<Self, String> {
        if let Some(program) = plain_program(pattern) {
            // Cannot fail: the rest is read on first use.
            return Ok(CommandPattern {
                text: pattern.to_string(),
                program: program.to_string(),
                exact,
                words: OnceLock::new(),
            });
        }
        Self::parse_now(pattern, exact)
    }

    /// [`CommandPattern::parse_with`] with every word read now.
    fn parse_now(pattern: &str, exact: bool) -> Result<Self, String> {
        let words = split_pattern(pattern)?;
        let Some(first) = words.first() else {
            return Err("empty command pattern: write a program name such as \"rm -rf\"".into());
        };
        let program = basename(first).to_string();
        if program.is_empty() || is_flag(&program) {
            return Err(format!(
                "command pattern `{pattern}` must start with a program name, e.g. \"rm -rf\""
            ));
        }
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let read = Words::read(&program, exact, &args);
        Ok(CommandPattern {
            text: pattern.to_string(),
            program,
            exact,
            words: OnceLock::from(read),
        })
    }

    /// The words after the program, read now if they were not yet.
    fn words(&self) -> &Words {
        self.words.get_or_init(|| {
            // Only plain patterns are read late, and they always split.
            let words = plain_words(&self.text).unwrap_or_default();
            Words::read(
                &self.program,
                self.exact,
                words.get(1..).unwrap_or_default(),
            )
        })
    }

    /// The pattern text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the pattern names a literal `--` word (read differently
    /// before `--` became a word a command must contain).
    pub fn has_double_dash(&self) -> bool {
        match self.words.get() {
            Some(words) => words.double_dash,
            // A plain pattern not read yet: every `--` after the program
            // is a positional word (`split_words`).
            None => {
                self.text.as_bytes().windows(2).any(|w| w == b"--")
                    && self
                        .text
                        .split(' ')
                        .filter(|w| !w.is_empty())
                        .skip(1)
                        .any(|w| w == "--")
            }
        }
    }

    /// The program the pattern names (its basename).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The flags of `cmd` after this pattern's alias folding (none with
    /// `exact`), as written in a policy: `-n`, `--dry-run`. Used by
    /// `unless: { flags: [...] }`.
    pub fn command_flags(&self, cmd: &SimpleCommand) -> Vec<String> {
        let (_, flags) = self.split_command(cmd);
        flags
            .into_iter()
            .map(|f| match f {
                Flag::Short(c) => format!("-{c}"),
                Flag::Long(l) => format!("--{l}"),
            })
            .collect()
    }

    /// Folds a flag as written in a policy (`-R`, `--force-with-lease`) the
    /// way this pattern folds a command's flags; None for a word that is not
    /// a single flag.
    pub fn fold_policy_flag(&self, flag: &str) -> Option<String> {
        let program = if self.exact {
            ""
        } else {
            self.program.as_str()
        };
        let (positional, flags) = split_words(program, self.words().git, std::iter::once(flag));
        if !positional.is_empty()
            || flags.len() != 1
            || (!flag.starts_with("--") && flag.len() != 2)
        {
            return None;
        }
        flags.into_iter().next().map(|f| match f {
            Flag::Short(c) => format!("-{c}"),
            Flag::Long(l) => format!("--{l}"),
        })
    }

    fn split_command<'c>(&self, cmd: &'c SimpleCommand) -> (Vec<&'c str>, FlagSet) {
        let git = self.words().git;
        // Values of options (`git -c KEY=VALUE`) are neither flags nor
        // positional words.
        let args = cmd
            .words
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(i, _)| !cmd.option_values.contains(i))
            .map(|(_, w)| w.as_str());
        let program = if self.exact {
            ""
        } else {
            self.program.as_str()
        };
        split_words(program, git, args)
    }

    /// True when `cmd` runs this pattern: same program basename, every flag
    /// of the pattern present (short flags in any grouping and order, after
    /// alias folding), and the positional words lined up as `mode` says.
    pub fn matches(&self, cmd: &SimpleCommand, mode: MatchMode) -> bool {
        self.matches_in(cmd, mode, &mut CommandSplits::default())
    }

    /// [`CommandPattern::matches`], reusing the splits of `cmd` that other
    /// patterns already made (`splits` must only ever see this `cmd`).
    pub fn matches_in<'c, 'p>(
        &'p self,
        cmd: &'c SimpleCommand,
        mode: MatchMode,
        splits: &mut CommandSplits<'c, 'p>,
    ) -> bool {
        let program = *splits.program.get_or_insert_with(|| cmd.program());
        if !program_matches(&self.program, program) {
            return false;
        }
        // The split depends on the program that folds flags ("" with
        // `exact`) and the pattern's git subcommand, nothing else.
        let key = (
            if self.exact {
                ""
            } else {
                self.program.as_str()
            },
            self.words().git,
        );
        let at = match splits.done.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                splits.done.push((key, self.split_command(cmd)));
                splits.done.len() - 1
            }
        };
        let (positional, flags) = &splits.done[at].1;
        let own = self.words();
        if !own.flags.is_subset(flags) {
            return false;
        }
        // A `--` in the command only counts when the pattern names one.
        let dash = own.double_dash;
        let mut words = positional.iter().filter(|w| dash || **w != "--");
        match mode {
            MatchMode::Prefix => own
                .positional
                .iter()
                .all(|p| words.next() == Some(&p.as_str())),
            MatchMode::Anywhere => own.positional.iter().all(|p| words.any(|c| c == p)),
        }
    }
}

/// One command's words split into positional words and folded flags, per
/// way of folding, kept while the command is matched against a whole list
/// of patterns ([`CommandPattern::matches_in`]).
#[derive(Default)]
pub struct CommandSplits<'c, 'p> {
    /// The command's program basename.
    program: Option<&'c str>,
    #[allow(clippy::type_complexity)]
    done: Vec<((&'p str, GitSub), (Vec<&'c str>, FlagSet))>,
}

/// Tokenizes a pattern with shell quoting, refusing anything that is not one
/// simple command.
fn split_pattern(pattern: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(word) = current.take() {
                    words.push(word);
                }
            }
            '\'' | '"' => {
                let word = current.get_or_insert_with(String::new);
                let mut closed = false;
                while let Some(q) = chars.next() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && q == '\\' {
                        if let Some(&n) = chars.peek() {
                            if matches!(n, '"' | '\\' | '$' | '`') {
                                word.push(n);
                                chars.next();
                                continue;
                            }
                        }
                    }
                    if c == '"' && matches!(q, '$' | '`') {
                        return Err(format!(
                            "command pattern `{pattern}` contains an expansion: write the words literally"
                        ));
                    }
                    word.push(q);
                }
                if !closed {
                    return Err(format!(
                        "command pattern `{pattern}` has a {c} quote that does not close: close it or remove it"
                    ));
                }
            }
            '\\' => match chars.next() {
                Some(n) => current.get_or_insert_with(String::new).push(n),
                None => {
                    return Err(format!(
                        "command pattern `{pattern}` ends with a backslash: remove it"
                    ))
                }
            },
            '&' | '|' | ';' | '<' | '>' | '(' | ')' | '\n' | '`' => {
                return Err(format!(
                    "command pattern `{pattern}` contains the shell operator `{c}`: write one simple command per entry"
                ));
            }
            '$' => {
                return Err(format!(
                    "command pattern `{pattern}` contains an expansion: write the words literally"
                ));
            }
            _ => current.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(word) = current {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy_patterns(name: &str, text: &str) -> Vec<String> {
        let file = crate::config::SourceFile {
            name: name.to_string(),
            path: None,
            text: text.to_string(),
        };
        let layer = crate::config::parse_policy(file).unwrap();
        let c = layer.policy.commands.unwrap();
        [c.allow, c.ask, c.deny]
            .iter()
            .flatten()
            .map(|e| e.pattern().to_string())
            .collect()
    }

    /// A pattern read on first use reads as it does when parsed at once.
    #[test]
    fn plain_patterns_read_late_read_as_parsed_now() {
        let mut patterns = policy_patterns("default", crate::config::embedded_default_policy());
        patterns.extend(policy_patterns(
            "team",
            include_str!("../../../benches/fixtures/team-policy/policies/team.yaml"),
        ));
        assert!(patterns.len() > 120, "{}", patterns.len());
        for p in [
            "git  push   --force",
            " rm -rf -- ",
            "/usr/bin/git push",
            "git -c a=b push +main",
            "git checkout -- .",
            "mkfs.ext4 /dev/x",
            "rm -R --recursive",
            "git clean --dry-run -n",
            "a,b:c@d%e~f^g",
            "x --",
            "-x",
            "/",
            "",
            "   ",
            "a\tb",
            "git 'push'",
            "rm *",
        ] {
            patterns.push(p.to_string());
        }
        let mut late = 0;
        for p in &patterns {
            for exact in [false, true] {
                let now = CommandPattern::parse_now(p, exact);
                let given = CommandPattern::parse_with(p, exact);
                let (Ok(now), Ok(given)) = (&now, &given) else {
                    assert_eq!(now.err(), given.err(), "{p:?}");
                    continue;
                };
                if given.words.get().is_none() {
                    late += 1;
                    // Asked before the words are read, and after.
                    assert_eq!(given.has_double_dash(), now.has_double_dash(), "{p:?}");
                    assert!(given.words.get().is_none());
                }
                assert_eq!(given.program, now.program, "{p:?}");
                assert_eq!(given.exact, now.exact, "{p:?}");
                assert_eq!(
                    format!("{:?}", given.words()),
                    format!("{:?}", now.words()),
                    "{p:?}"
                );
                assert_eq!(given.has_double_dash(), now.has_double_dash(), "{p:?}");
            }
        }
        assert!(late > 200, "{late}");
    }

    /// What `plain_words` accepts, `split_pattern` splits the same way.
    #[test]
    fn plain_words_are_the_split_words() {
        let alphabet = ["a", "-", " ", "/", "+", ".", "=", "\t", "'", "$", "é"];
        let mut texts = vec![String::new()];
        let mut plain = 0;
        for _ in 0..5 {
            texts = texts
                .iter()
                .flat_map(|t| alphabet.map(|c| format!("{t}{c}")))
                .collect();
            for t in &texts {
                if let Some(words) = plain_words(t) {
                    plain += 1;
                    let split = split_pattern(t).expect("a plain pattern splits");
                    assert_eq!(words, split, "{t:?}");
                    assert!(CommandPattern::parse_now(t, false).is_ok(), "{t:?}");
                }
            }
        }
        assert!(plain > 1000, "{plain}");
    }
}
