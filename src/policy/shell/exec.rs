//! Escape hatches: the options, operands and environment variables that make
//! a program run another program (`sort --compress-program=sh`,
//! `rg --pre CMD`, `git -c core.pager=CMD`, `PAGER=CMD`, `find -exec`), load
//! code we cannot see, or write a file it was not asked to.
//!
//! They are data, not code: `exec_table.yaml` next to this file lists them
//! per program (build.rs lays it out as static slices of JSON), and a
//! policy adds its own with `commands.exec_options` / `commands.exec_env`
//! ([`ExecRules`]). This file holds the table; `scan` reads one command's
//! words against a program's entry. Looking a program up is a binary search
//! over a static list build.rs makes, and only the entries of programs a
//! process meets are ever parsed, so the table costs nothing up front.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

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

/// The shipped table, as build.rs lays it out: sorted `(name, text)`
/// slices, each program's entry as JSON parsed on first use.
mod shipped {
    include!(concat!(env!("OUT_DIR"), "/exec_table.rs"));
}

/// Entries parsed so far, one slot per program of the shipped table.
static PARSED: [OnceLock<ProgramSpec>; shipped::PROGRAMS.len()] =
    [const { OnceLock::new() }; shipped::PROGRAMS.len()];

/// The entry name `program` goes by (`nvim` is `vim`).
pub fn canonical(program: &str) -> &str {
    match shipped::ALIASES.binary_search_by_key(&program, |(alias, _)| alias) {
        Ok(i) => shipped::ALIASES[i].1,
        Err(_) => program,
    }
}

/// The shipped entry of `program` (by canonical name), parsed on first use.
pub fn shipped_program(program: &str) -> Option<&'static ProgramSpec> {
    let i = shipped::PROGRAMS
        .binary_search_by_key(&program, |(name, _)| name)
        .ok()?;
    Some(PARSED[i].get_or_init(|| {
        // The unit tests parse every entry, so this cannot fail in a build
        // that passed them; if it did, the entry fails closed: whatever the
        // program is given is unparsed.
        serde_json::from_str(shipped::PROGRAMS[i].1).unwrap_or_else(|_| ProgramSpec {
            operands: Some(ValueKind::Opaque),
            ..ProgramSpec::default()
        })
    }))
}

/// What the shipped table says assigning `name` does.
fn shipped_env(name: &str) -> Option<ValueKind> {
    let text = match shipped::ENV_EXACT.binary_search_by_key(&name, |(n, _)| n) {
        Ok(i) => shipped::ENV_EXACT[i].1,
        Err(_) => {
            shipped::ENV_PREFIXES
                .iter()
                .find(|(prefix, _)| name.starts_with(prefix))?
                .1
        }
    };
    // A kind the tests did not see fails closed.
    Some(ValueKind::try_from(text.to_string()).unwrap_or(ValueKind::Opaque))
}

/// Environment variables a policy adds, by exact name and by prefix
/// (`MYTOOL_*`).
#[derive(Clone, Debug, Default)]
pub struct EnvTable {
    exact: HashMap<String, ValueKind>,
    /// Longest prefix first, so the most specific entry wins.
    prefixes: Vec<(String, ValueKind)>,
}

impl EnvTable {
    /// Adds `NAME` or `PREFIX*`.
    pub fn insert(&mut self, name: &str, kind: ValueKind) {
        match name.strip_suffix('*') {
            Some(prefix) => {
                self.prefixes.retain(|(p, _)| p != prefix);
                self.prefixes.push((prefix.to_string(), kind));
                self.prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
            }
            None => {
                self.exact.insert(name.to_string(), kind);
            }
        }
    }

    fn get(&self, name: &str) -> Option<&ValueKind> {
        if self.exact.is_empty() && self.prefixes.is_empty() {
            return None;
        }
        self.exact.get(name).or_else(|| {
            self.prefixes
                .iter()
                .find(|(p, _)| name.starts_with(p.as_str()))
                .map(|(_, k)| k)
        })
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
        let name = canonical(program).to_string();
        let spec = self
            .programs
            .entry(name)
            .or_insert_with_key(|n| shipped_program(n).cloned().unwrap_or_default());
        spec.options.extend(options);
    }

    /// The entry `program` is scanned with.
    pub fn program(&self, program: &str) -> Option<&ProgramSpec> {
        let name = canonical(program);
        if !self.programs.is_empty() {
            if let Some(spec) = self.programs.get(name) {
                return Some(spec);
            }
        }
        shipped_program(name)
    }

    /// What assigning `name` does, if anything.
    pub fn env(&self, name: &str) -> Option<ValueKind> {
        self.env
            .get(name)
            .cloned()
            .or_else(|| shipped_env(name))
            .filter(|k| *k != ValueKind::Plain)
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
