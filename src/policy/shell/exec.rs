//! Escape hatches: the options, operands and environment variables that make
//! a program run another program (`sort --compress-program=sh`,
//! `rg --pre CMD`, `git -c core.pager=CMD`, `PAGER=CMD`, `find -exec`), load
//! code we cannot see, or write a file it was not asked to.
//!
//! They are data, not code: `exec_table.yaml` next to this file lists them
//! per program (build.rs converts it to JSON, which loads faster), and a
//! policy adds its own with `commands.exec_options` / `commands.exec_env`
//! ([`ExecRules`]). [`Scanner`] reads one command's words against a
//! program's entry and returns [`Hatch`]es, which the walker turns into
//! nested analyses, unparsed reasons, written files or commands of their
//! own. Only programs with an entry are scanned, so an ordinary command
//! costs one hash lookup.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::OnceLock;

use serde::Deserialize;

/// The table as shipped (`exec_table.yaml`), as JSON made by build.rs.
const TABLE_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/exec-table.json"));

/// What the value of an option, operand or variable does.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum ValueKind {
    /// A shell command string (`sh -c VALUE`): analyzed like `bash -c`.
    Command,
    /// A program run on input it chooses: analyzed like `bash -c`, and
    /// `commands.unparsed` because what it is given is unknown.
    Program,
    /// A command only when it starts with `!` (git aliases).
    BangCommand,
    /// Code or configuration that cannot be seen: `commands.unparsed`.
    Opaque,
    /// A file the program writes.
    Write,
    /// The next words up to `;` or `+` are a command (`find -exec`).
    Argv,
    /// Names a shell variable the command assigns (`printf -v`).
    Variable,
    /// `KEY=VALUE`, KEY looked up in the entry's `config`.
    Config,
    /// Like `Config`; a value without `=` names a config file (opaque).
    ConfigOrFile,
    /// `KEY=ENVVAR`: the value comes from the environment.
    ConfigEnv,
    /// A string of options judged against the named program's entry.
    Flags(String),
    /// Harmless (an exemption from a prefix entry).
    Plain,
}

impl TryFrom<String> for ValueKind {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        Ok(match s.as_str() {
            "command" => ValueKind::Command,
            "program" => ValueKind::Program,
            "bang_command" => ValueKind::BangCommand,
            "opaque" => ValueKind::Opaque,
            "write" => ValueKind::Write,
            "argv" => ValueKind::Argv,
            "variable" => ValueKind::Variable,
            "config" => ValueKind::Config,
            "config_or_file" => ValueKind::ConfigOrFile,
            "config_env" => ValueKind::ConfigEnv,
            "plain" => ValueKind::Plain,
            other => match other.strip_prefix("flags:") {
                Some(target) if !target.is_empty() => ValueKind::Flags(target.to_string()),
                _ => return Err(format!("unknown value kind `{other}`")),
            },
        })
    }
}

/// One program's entry (or a subcommand's).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    /// Options whose value runs, loads or writes something, by name.
    #[serde(default)]
    pub options: BTreeMap<String, ValueKind>,
    /// Other options that consume the next word (so it is not an operand).
    #[serde(default)]
    pub takes_value: Vec<String>,
    /// Long options may be abbreviated to a unique prefix (GNU getopt_long).
    #[serde(default)]
    pub abbrev: bool,
    /// Short options group (`-abc`); false for Go and find.
    #[serde(default = "yes")]
    pub grouping: bool,
    /// What a `config`-kind value's keys do (lowercase; `*` matches anything).
    #[serde(default)]
    pub config: BTreeMap<String, ValueKind>,
    /// What `NAME=VALUE` operands do (make).
    #[serde(default)]
    pub assignments: BTreeMap<String, ValueKind>,
    /// What the operands are: `command` (joined), `argv` or `opaque`.
    #[serde(default)]
    pub operands: Option<ValueKind>,
    /// Operand positions (0-based) the program writes.
    #[serde(default)]
    pub write_operands: Vec<usize>,
    /// Options whose value names the program the remaining words are for.
    #[serde(default)]
    pub dispatch: Vec<String>,
    /// Entries of subcommands, by name (the first operand).
    #[serde(default)]
    pub subcommands: BTreeMap<String, ProgramSpec>,
}

fn yes() -> bool {
    true
}

impl Default for ProgramSpec {
    /// An empty entry; short options group, as most programs' do.
    fn default() -> Self {
        ProgramSpec {
            options: BTreeMap::new(),
            takes_value: Vec::new(),
            abbrev: false,
            grouping: true,
            config: BTreeMap::new(),
            assignments: BTreeMap::new(),
            operands: None,
            write_operands: Vec::new(),
            dispatch: Vec::new(),
            subcommands: BTreeMap::new(),
        }
    }
}

/// The file format of `exec_table.yaml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TableFile {
    #[serde(default)]
    aliases: BTreeMap<String, String>,
    #[serde(default)]
    programs: BTreeMap<String, ProgramSpec>,
    #[serde(default)]
    env: BTreeMap<String, ValueKind>,
}

/// Environment variables by exact name and by prefix (`LD_*`).
#[derive(Clone, Debug, Default)]
pub struct EnvTable {
    exact: HashMap<String, ValueKind>,
    /// Longest prefix first, so `CARGO_TARGET_*` wins over `CARGO_*`.
    prefixes: Vec<(String, ValueKind)>,
}

impl EnvTable {
    /// Adds `NAME` or `PREFIX*`.
    pub fn insert(&mut self, name: &str, kind: ValueKind) {
        match name.strip_suffix('*') {
            Some(prefix) => {
                self.prefixes.retain(|(p, _)| p != prefix);
                self.prefixes.push((prefix.to_string(), kind));
                self.prefixes.sort_by(|a, b| b.0.len().cmp(&a.0.len()));
            }
            None => {
                self.exact.insert(name.to_string(), kind);
            }
        }
    }

    fn get(&self, name: &str) -> Option<&ValueKind> {
        self.exact.get(name).or_else(|| {
            self.prefixes
                .iter()
                .find(|(p, _)| name.starts_with(p.as_str()))
                .map(|(_, k)| k)
        })
    }
}

/// The shipped table, compiled.
#[derive(Debug)]
pub struct ExecTable {
    aliases: HashMap<String, String>,
    programs: HashMap<String, ProgramSpec>,
    env: EnvTable,
}

/// The table shipped in the binary (parsed on first use).
pub fn builtin() -> &'static ExecTable {
    static TABLE: OnceLock<ExecTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        // build.rs made this JSON from the YAML and the unit tests load it,
        // so a failure here is a build defect; an empty table would fail
        // open, so stop instead.
        let file: TableFile = serde_json::from_str(TABLE_JSON)
            .unwrap_or_else(|e| panic!("exec_table.yaml does not load: {e}"));
        let mut env = EnvTable::default();
        for (name, kind) in file.env {
            env.insert(&name, kind);
        }
        ExecTable {
            aliases: file.aliases.into_iter().collect(),
            programs: file.programs.into_iter().collect(),
            env,
        }
    })
}

impl ExecTable {
    /// The entry name `program` goes by (`nvim` is `vim`).
    pub fn canonical<'a>(&'a self, program: &'a str) -> &'a str {
        self.aliases.get(program).map_or(program, String::as_str)
    }

    /// The shipped entry of `program`, if any.
    pub fn program(&self, program: &str) -> Option<&ProgramSpec> {
        self.programs.get(self.canonical(program))
    }
}

/// A policy's view of the table: the shipped entries plus what its
/// `commands.exec_options` and `commands.exec_env` add.
#[derive(Clone, Debug, Default)]
pub struct ExecRules {
    /// Programs the policy extends: the shipped entry (if any) with the
    /// policy's options added, by canonical name.
    pub programs: HashMap<String, ProgramSpec>,
    /// Variables the policy adds.
    pub env: EnvTable,
}

impl ExecRules {
    /// Adds options to `program`'s entry (created when the table has none).
    pub fn add_options(
        &mut self,
        program: &str,
        options: impl IntoIterator<Item = (String, ValueKind)>,
    ) {
        let table = builtin();
        let name = table.canonical(program).to_string();
        let spec = self
            .programs
            .entry(name)
            .or_insert_with_key(|n| table.programs.get(n).cloned().unwrap_or_default());
        spec.options.extend(options);
    }

    /// The entry `program` is scanned with.
    pub fn program(&self, program: &str) -> Option<&ProgramSpec> {
        if self.programs.is_empty() {
            return builtin().program(program);
        }
        let table = builtin();
        let name = table.canonical(program);
        self.programs.get(name).or_else(|| table.programs.get(name))
    }

    /// What assigning `name` does, if anything.
    pub fn env(&self, name: &str) -> Option<&ValueKind> {
        self.env
            .get(name)
            .or_else(|| builtin().env.get(name))
            .filter(|k| **k != ValueKind::Plain)
    }
}

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
                let none = ProgramSpec::default();
                self.value(
                    &format!("`{name}`"),
                    kind,
                    value,
                    literal,
                    &none,
                    &mut out,
                    0,
                );
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
        let mut path = program.to_string();
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
                            self.value(&what, kind, &value, lit(i), keys, out, nesting);
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
                            out.option_values.push(i + 1);
                            self.value(&what, kind, value, lit(i + 1), keys, out, nesting);
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
                if let Some(kind) = spec.assignments.get(name) {
                    let what = format!("`{path} {name}=`");
                    self.value(&what, kind, value, lit(i), keys, out, nesting);
                    i += 1;
                    continue;
                }
            }
            if operand == 0 {
                if let Some(sub) = spec.subcommands.get(word) {
                    spec = sub;
                    if !sub.config.is_empty() {
                        keys = sub;
                    }
                    path = format!("{path} {word}");
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
                        keys,
                        out,
                        nesting,
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
        keys: &ProgramSpec,
        out: &mut Scan,
        nesting: usize,
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
                self.config(what, kind, value, literal, keys, out, nesting)
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
                let mut words = vec![target.clone()];
                words.extend(value.split_whitespace().map(str::to_string));
                let lit = vec![true; words.len()];
                let mut nested = Scan::default();
                self.words(target, spec, &words, &lit, &mut nested, nesting + 1);
                // Indices of the split value mean nothing in the command.
                out.hatches
                    .extend(nested.hatches.into_iter().filter_map(|h| match h {
                        Hatch::Argv(r) => Some(Hatch::Run {
                            what: what.to_string(),
                            value: words[r].join(" "),
                            literal: true,
                            program: true,
                        }),
                        h => Some(h),
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
        keys: &ProgramSpec,
        out: &mut Scan,
        nesting: usize,
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
        let Some(key_kind) = lookup_key(&keys.config, &key) else {
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
                    self.value(&what, key_kind, unquoted, literal, keys, out, nesting);
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
    if let Some((n, kind)) = spec.options.get_key_value(name) {
        if !(n.len() == 2 && attached.is_some() && spec.grouping) {
            return OptionMatch::Exec(n, kind, attached.map(str::to_string));
        }
    }
    if spec.dispatch.iter().any(|d| d == name) {
        return OptionMatch::Dispatch;
    }
    if let Some(rest) = word.strip_prefix('+') {
        for (n, kind) in &spec.options {
            if n == "+*" {
                return OptionMatch::Exec(n, kind, Some(rest.to_string()));
            }
        }
        return OptionMatch::Other;
    }
    if let Some(long) = name.strip_prefix("--") {
        if spec.abbrev && long.len() >= 2 {
            for (n, kind) in &spec.options {
                if n.strip_prefix("--")
                    .is_some_and(|full| full.starts_with(long))
                {
                    return OptionMatch::Exec(n, kind, attached.map(str::to_string));
                }
            }
        }
        if attached.is_none() && spec.takes_value.iter().any(|t| t == name) {
            return OptionMatch::TakesNext;
        }
        return OptionMatch::Other;
    }
    if !spec.grouping {
        if attached.is_none() && spec.takes_value.iter().any(|t| t == name) {
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
        if let Some((n, kind)) = spec.options.get_key_value(short.as_str()) {
            return OptionMatch::Exec(n, kind, value);
        }
        if spec.takes_value.iter().any(|t| *t == short) {
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
fn lookup_key<'a>(config: &'a BTreeMap<String, ValueKind>, key: &str) -> Option<&'a ValueKind> {
    if let Some(kind) = config.get(key) {
        return Some(kind);
    }
    config
        .iter()
        .find(|(pattern, _)| pattern.contains('*') && glob_match(pattern, key))
        .map(|(_, kind)| kind)
}

/// `*` matches any run of characters (dots included: a subsection such as
/// `target.'cfg(unix)'.runner` may hold them).
fn glob_match(pattern: &str, text: &str) -> bool {
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

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
