//! Escape hatches: the options, operands and environment variables that make
//! a program run another program (`sort --compress-program=sh`,
//! `rg --pre CMD`, `git -c core.pager=CMD`, `PAGER=CMD`, `find -exec`), load
//! code we cannot see, or write a file it was not asked to.
//!
//! They are data, not code: `exec_table.yaml` next to this file lists them
//! per program (build.rs converts it to JSON, which loads faster), and a
//! policy adds its own with `commands.exec_options` / `commands.exec_env`
//! ([`ExecRules`]). This file holds the table; `scan` reads one command's
//! words against a program's entry. Only programs with an entry are
//! scanned, so an ordinary command costs one hash lookup.

use std::collections::{BTreeMap, HashMap};
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
                self.prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
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

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
