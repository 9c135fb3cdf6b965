//! Reads one command's words against its program's exec-table entry and
//! returns the [`Hatch`]es found: values to analyze as commands, code that
//! cannot be seen, files written, commands run. The walker acts on them.

use std::ops::Range;

use super::exec::{ExecRules, ProgramSpec, ValueKind};

/// One thing a command's words make it run, load or write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Hatch {
    /// `value` is run as a shell command (`program`: and given input we
    /// cannot see). `what` names the option, e.g. "`rg --pre`".
    Run {
        what: String,
        value: String,
        literal: bool,
        program: bool,
    },
    /// Something we cannot see is loaded or run.
    Opaque(String),
    /// A file is written.
    Write { value: String, literal: bool },
    /// `words[range]` is a command.
    Argv(Range<usize>),
    /// A shell variable is assigned a value we cannot see.
    Variable(String),
}

/// The result of scanning one command.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub(super) hatches: Vec<Hatch>,
    /// Words that are an option's value (skipped by command patterns).
    pub(super) option_values: Vec<usize>,
    /// Word ranges that are a command run by the program (not operands).
    pub(super) run_words: Vec<Range<usize>>,
}

/// Where a value was found: the entry whose `config` keys apply, and how
/// deeply `flags:` values nest.
#[derive(Clone, Copy)]
struct Level<'k> {
    keys: &'k ProgramSpec,
    nesting: usize,
}

/// How a word matched an option.
enum OptionMatch<'a> {
    /// An exec option; its value is attached or the next word.
    Exec(&'a str, &'a ValueKind, Option<String>),
    /// An option that consumes the next word.
    TakesNext,
    /// A `dispatch` option: the next word names the program the rest is for.
    Dispatch,
    /// Any other option.
    Other,
}

/// Reads commands against an [`ExecRules`].
pub(super) struct Scanner<'a> {
    pub(super) rules: &'a ExecRules,
}

/// How deep `flags:` values may nest (each is shorter than the last, so
/// this only bounds work on a table that points at itself).
const MAX_FLAG_NESTING: usize = 4;

impl Scanner<'_> {
    /// Scans `words[1..end]` of a command whose program is `program`; None
    /// when the program has no entry (the common case, one lookup).
    pub(super) fn scan(
        &self,
        program: &str,
        words: &[String],
        literal: &[bool],
        end: usize,
    ) -> Option<Scan> {
        let spec = self.rules.program(program)?;
        let mut out = Scan::default();
        let end = end.min(words.len());
        self.words(program, spec, &words[..end], literal, &mut out, 0);
        Some(out)
    }

    /// What assigning `value` to the variable `name` does.
    pub(super) fn variable(&self, name: &str, value: Option<(&str, bool)>) -> Vec<Hatch> {
        let Some(kind) = self.rules.env(name) else {
            return Vec::new();
        };
        let mut out = Scan::default();
        match value {
            Some((value, literal)) => {
                // A variable has no config keys of its own.
                let keys = ProgramSpec::default();
                let level = Level {
                    keys: &keys,
                    nesting: 0,
                };
                self.value(&format!("`{name}`"), kind, value, literal, level, &mut out);
            }
            None => out.hatches.push(Hatch::Opaque(format!(
                "`{name}` is assigned a value that cannot be seen"
            ))),
        }
        out.hatches
    }

    fn words(
        &self,
        program: &str,
        top: &ProgramSpec,
        words: &[String],
        literal: &[bool],
        out: &mut Scan,
        nesting: usize,
    ) {
        let lit = |i: usize| literal.get(i).copied().unwrap_or(false);
        let mut spec = top;
        // The entry whose `config` keys apply: a subcommand's own, or else
        // the program's (`git clone -c` takes git's keys).
        let mut keys = top;
        // Named in reasons only, so built only when a subcommand is entered.
        let mut path = std::borrow::Cow::Borrowed(program);
        let mut options_done = false;
        let mut operand = 0;
        let mut i = 1;
        while i < words.len() {
            let word = words[i].as_str();
            if !options_done && word == "--" {
                options_done = true;
                i += 1;
                continue;
            }
            if !options_done && is_option(word) {
                match match_option(spec, word) {
                    OptionMatch::Exec(name, kind, attached) => {
                        let what = format!("`{path} {name}`");
                        if let Some(value) = attached {
                            self.value(&what, kind, &value, lit(i), Level { keys, nesting }, out);
                            i += 1;
                        } else if *kind == ValueKind::Argv {
                            let start = i + 1;
                            let mut stop = start;
                            while stop < words.len() && words[stop] != ";" && words[stop] != "+" {
                                stop += 1;
                            }
                            if stop > start {
                                out.run_words.push(start..stop);
                                out.hatches.push(Hatch::Argv(start..stop));
                            }
                            i = stop + 1;
                        } else if let Some(value) = words.get(i + 1) {
                            // A setting or command is not an operand, so
                            // patterns skip it (`git -c K=V log` is `git
                            // log`). An opaque or written value stays visible
                            // to deny patterns: if the table is wrong about
                            // it taking a value, nothing is hidden.
                            if !matches!(kind, ValueKind::Opaque | ValueKind::Write) {
                                out.option_values.push(i + 1);
                            }
                            self.value(
                                &what,
                                kind,
                                value,
                                lit(i + 1),
                                Level { keys, nesting },
                                out,
                            );
                            i += 2;
                        } else {
                            i += 1;
                        }
                    }
                    OptionMatch::TakesNext => {
                        if i + 1 < words.len() {
                            out.option_values.push(i + 1);
                        }
                        i += 2;
                    }
                    OptionMatch::Dispatch => {
                        // `python -m pytest ARGS`: ARGS belong to pytest.
                        if let Some(next) = words.get(i + 1) {
                            if let Some(inner) = self.rules.program(next) {
                                let rest = &literal[(i + 1).min(literal.len())..];
                                let mut nested = Scan::default();
                                self.words(
                                    next,
                                    inner,
                                    &words[i + 1..],
                                    rest,
                                    &mut nested,
                                    nesting,
                                );
                                // Its indices are relative to the cut.
                                out.hatches
                                    .extend(nested.hatches.into_iter().map(|h| match h {
                                        Hatch::Argv(r) => {
                                            Hatch::Argv(r.start + i + 1..r.end + i + 1)
                                        }
                                        h => h,
                                    }));
                                let shift = |r: Range<usize>| r.start + i + 1..r.end + i + 1;
                                out.run_words
                                    .extend(nested.run_words.into_iter().map(shift));
                                out.option_values
                                    .extend(nested.option_values.into_iter().map(|v| v + i + 1));
                            }
                        }
                        return;
                    }
                    OptionMatch::Other => i += 1,
                }
                continue;
            }
            // An operand.
            if let Some((name, value)) = word.split_once('=') {
                if let Some((_, kind)) = spec.assignments.iter().find(|(n, _)| *n == name) {
                    let what = format!("`{path} {name}=`");
                    self.value(&what, kind, value, lit(i), Level { keys, nesting }, out);
                    i += 1;
                    continue;
                }
            }
            if operand == 0 {
                if let Some(sub) = spec.subcommand(word) {
                    spec = sub;
                    if !sub.config.is_empty() {
                        keys = sub;
                    }
                    path = std::borrow::Cow::Owned(format!("{path} {word}"));
                    i += 1;
                    continue;
                }
            }
            match &spec.operands {
                Some(ValueKind::Argv) => {
                    out.run_words.push(i..words.len());
                    out.hatches.push(Hatch::Argv(i..words.len()));
                    return;
                }
                Some(ValueKind::Variable) => {
                    // `read NAME...`: every operand names a variable.
                    for name in &words[i..] {
                        out.hatches.push(Hatch::Variable(name.clone()));
                    }
                    return;
                }
                Some(ValueKind::Opaque) => {
                    out.hatches.push(Hatch::Opaque(format!(
                        "`{path}` runs code given as `{}`, which cannot be checked",
                        short(&words[i..].join(" "))
                    )));
                    return;
                }
                Some(kind @ ValueKind::Command) => {
                    let value = words[i..].join(" ");
                    let all_literal = (i..words.len()).all(lit);
                    out.run_words.push(i..words.len());
                    self.value(
                        &format!("`{path}`"),
                        kind,
                        &value,
                        all_literal,
                        Level { keys, nesting },
                        out,
                    );
                    return;
                }
                _ => {}
            }
            if spec.write_operands.contains(&operand) {
                out.hatches.push(Hatch::Write {
                    value: word.to_string(),
                    literal: lit(i),
                });
            }
            operand += 1;
            i += 1;
        }
    }

    /// Judges one value of kind `kind`; `what` names where it came from.
    fn value(
        &self,
        what: &str,
        kind: &ValueKind,
        value: &str,
        literal: bool,
        Level { keys, nesting }: Level<'_>,
        out: &mut Scan,
    ) {
        match kind {
            ValueKind::Plain => {}
            ValueKind::Command | ValueKind::Program | ValueKind::BangCommand => {
                let trimmed = value.trim();
                if *kind == ValueKind::BangCommand && !trimmed.starts_with('!') {
                    return;
                }
                // git runs `!cmd` through the shell, less reads `|cmd`.
                let script = trimmed.trim_start_matches(['!', '|']);
                if script.is_empty() {
                    return;
                }
                out.hatches.push(Hatch::Run {
                    what: what.to_string(),
                    value: script.to_string(),
                    literal,
                    program: *kind == ValueKind::Program,
                });
            }
            ValueKind::Opaque | ValueKind::Argv => out.hatches.push(Hatch::Opaque(format!(
                "{what} loads or runs `{}`, which cannot be checked",
                short(value)
            ))),
            ValueKind::Write => out.hatches.push(Hatch::Write {
                value: value.to_string(),
                literal,
            }),
            ValueKind::Variable => out.hatches.push(Hatch::Variable(value.to_string())),
            ValueKind::Config | ValueKind::ConfigOrFile | ValueKind::ConfigEnv => {
                self.config(what, kind, value, literal, Level { keys, nesting }, out)
            }
            ValueKind::Flags(target) => {
                if !literal {
                    out.hatches.push(Hatch::Opaque(format!(
                        "{what} takes options that are not a literal string"
                    )));
                    return;
                }
                let Some(spec) = self.rules.program(target) else {
                    return;
                };
                if nesting >= MAX_FLAG_NESTING {
                    out.hatches
                        .push(Hatch::Opaque(format!("{what} nests options too deeply")));
                    return;
                }
                let mut words = vec![target.to_string()];
                words.extend(value.split_whitespace().map(str::to_string));
                let lit = vec![true; words.len()];
                let mut nested = Scan::default();
                self.words(target, spec, &words, &lit, &mut nested, nesting + 1);
                // Indices of the split value mean nothing in the command.
                out.hatches
                    .extend(nested.hatches.into_iter().map(|h| match h {
                        Hatch::Argv(r) => Hatch::Run {
                            what: what.to_string(),
                            value: words[r].join(" "),
                            literal: true,
                            program: true,
                        },
                        h => h,
                    }));
            }
        }
    }

    /// A `KEY=VALUE` (or `KEY VALUE`) config setting.
    fn config(
        &self,
        what: &str,
        kind: &ValueKind,
        value: &str,
        literal: bool,
        Level { keys, nesting }: Level<'_>,
        out: &mut Scan,
    ) {
        let split = value.find(|c: char| c == '=' || c.is_whitespace());
        let Some(at) = split else {
            if *kind == ValueKind::ConfigOrFile {
                out.hatches.push(Hatch::Opaque(format!(
                    "{what} loads the config file `{}`, which cannot be checked",
                    short(value)
                )));
            }
            // A key alone is a boolean `true`: it runs nothing.
            return;
        };
        let key = value[..at].trim().to_ascii_lowercase();
        let setting = value[at + 1..].trim();
        let Some(key_kind) = lookup_key(keys.config, &key) else {
            return;
        };
        let what = format!("{what} {key}");
        match kind {
            ValueKind::ConfigEnv if *key_kind != ValueKind::Plain => {
                out.hatches.push(Hatch::Opaque(format!(
                    "{what} takes its value from the environment variable `{setting}`"
                )));
            }
            ValueKind::ConfigEnv => {}
            _ => {
                // Cargo's values are TOML: `"rm"` is the string rm.
                let unquoted = unquote(setting);
                if setting.starts_with('[') {
                    out.hatches.push(Hatch::Opaque(format!(
                        "{what} is set to `{}`, which cannot be checked",
                        short(setting)
                    )));
                } else {
                    self.value(
                        &what,
                        key_kind,
                        unquoted,
                        literal,
                        Level { keys, nesting },
                        out,
                    );
                }
            }
        }
    }
}

/// A word that is an option: `-x`, `--long`, or `+cmd`.
fn is_option(word: &str) -> bool {
    (word.starts_with('-') || word.starts_with('+')) && word.len() > 1
}

/// Matches one option word against an entry.
fn match_option<'a>(spec: &'a ProgramSpec, word: &str) -> OptionMatch<'a> {
    let (name, attached) = match word.split_once('=') {
        Some((n, v)) if word.starts_with('-') => (n, Some(v)),
        _ => (word, None),
    };
    // Exact names first: `--pre`, `-exec`, `-TT`.
    if let Some((n, kind)) = spec.option(name) {
        if !(n.len() == 2 && attached.is_some() && spec.grouping) {
            return OptionMatch::Exec(n, kind, attached.map(str::to_string));
        }
    }
    if spec.dispatch.contains(&name) {
        return OptionMatch::Dispatch;
    }
    if let Some(rest) = word.strip_prefix('+') {
        for (n, kind) in spec.options.iter() {
            if n == "+*" {
                return OptionMatch::Exec(n, kind, Some(rest.to_string()));
            }
        }
        return OptionMatch::Other;
    }
    if let Some(long) = name.strip_prefix("--") {
        if spec.abbrev && long.len() >= 2 {
            for (n, kind) in spec.options.iter() {
                if n.strip_prefix("--")
                    .is_some_and(|full| full.starts_with(long))
                {
                    return OptionMatch::Exec(n, kind, attached.map(str::to_string));
                }
            }
        }
        if attached.is_none() && spec.takes_value.contains(&name) {
            return OptionMatch::TakesNext;
        }
        return OptionMatch::Other;
    }
    if !spec.grouping {
        if attached.is_none() && spec.takes_value.contains(&name) {
            return OptionMatch::TakesNext;
        }
        return OptionMatch::Other;
    }
    // A short group: letters are flags until one takes a value; the rest of
    // the group is that value, or else the next word.
    let letters = &word[1..];
    for (k, c) in letters.char_indices() {
        let mut buf = [0u8; 4];
        let short = format!("-{}", c.encode_utf8(&mut buf));
        let rest = &letters[k + c.len_utf8()..];
        let value = (!rest.is_empty()).then(|| rest.to_string());
        if let Some((n, kind)) = spec.option(&short) {
            return OptionMatch::Exec(n, kind, value);
        }
        if spec.takes_value.contains(&short.as_str()) {
            return if value.is_some() {
                OptionMatch::Other
            } else {
                OptionMatch::TakesNext
            };
        }
    }
    OptionMatch::Other
}

/// Looks a config key up: exact first, then `*` patterns.
fn lookup_key<'a>(config: &'a [(&str, ValueKind)], key: &str) -> Option<&'a ValueKind> {
    if let Some((_, kind)) = config.iter().find(|(k, _)| *k == key) {
        return Some(kind);
    }
    config
        .iter()
        .find(|(pattern, _)| pattern.contains('*') && glob_match(pattern, key))
        .map(|(_, kind)| kind)
}

/// `*` matches any run of characters (dots included: a subsection such as
/// `target.'cfg(unix)'.runner` may hold them).
pub(super) fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Strips one pair of matching quotes.
fn unquote(s: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// A value shortened for reasons.
fn short(value: &str) -> String {
    super::snippet(value)
}
