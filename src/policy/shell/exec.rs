//! Escape hatches: the options, operands and environment variables that make
//! a program run another program (`sort --compress-program=sh`,
//! `rg --pre CMD`, `git -c core.pager=CMD`, `PAGER=CMD`, `find -exec`), load
//! code we cannot see, or write a file it was not asked to.
//!
//! They are data, not code: `exec_table.yaml` next to this file lists them
//! per program, build.rs turns it into static Rust data (checking it), and a
//! policy adds its own with `commands.exec_options` / `commands.exec_env`
//! ([`ExecRules`]). This file holds the table; `scan` reads one command's
//! words against a program's entry. Looking a program up is a binary search
//! over static slices: nothing is parsed or built at run time.

use std::borrow::Cow;
use std::collections::HashMap;

/// What the value of an option, operand or variable does.
#[derive(Clone, Debug, PartialEq, Eq)]
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
    Flags(Cow<'static, str>),
    /// Harmless (an exemption from a prefix entry).
    Plain,
}

/// One program's entry (or a subcommand's). The shipped ones are static
/// data made by build.rs; a policy's additions own their options.
#[derive(Clone, Debug)]
pub struct ProgramSpec {
    /// Options whose value runs, loads or writes something, by name.
    pub options: Cow<'static, [(Cow<'static, str>, ValueKind)]>,
    /// Other options that consume the next word (so it is not an operand).
    pub takes_value: &'static [&'static str],
    /// Long options may be abbreviated to a unique prefix (GNU getopt_long).
    pub abbrev: bool,
    /// Short options group (`-abc`); false for Go and find.
    pub grouping: bool,
    /// What a `config`-kind value's keys do (lowercase; `*` matches anything).
    pub config: &'static [(&'static str, ValueKind)],
    /// What `NAME=VALUE` operands do (make).
    pub assignments: &'static [(&'static str, ValueKind)],
    /// What the operands are: `command` (joined), `argv`, `opaque` or
    /// `variable`.
    pub operands: Option<ValueKind>,
    /// Operand positions (0-based) the program writes.
    pub write_operands: &'static [usize],
    /// Options whose value names the program the remaining words are for.
    pub dispatch: &'static [&'static str],
    /// Entries of subcommands, by name (the first operand).
    pub subcommands: &'static [(&'static str, ProgramSpec)],
}

impl Default for ProgramSpec {
    /// An empty entry; short options group, as most programs' do.
    fn default() -> Self {
        ProgramSpec {
            options: Cow::Borrowed(&[]),
            takes_value: &[],
            abbrev: false,
            grouping: true,
            config: &[],
            assignments: &[],
            operands: None,
            write_operands: &[],
            dispatch: &[],
            subcommands: &[],
        }
    }
}

impl ProgramSpec {
    /// The kind of option `name`, if it is one.
    pub fn option(&self, name: &str) -> Option<(&str, &ValueKind)> {
        self.options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(n, k)| (n.as_ref(), k))
    }

    /// The entry of subcommand `name`, if it has one.
    pub fn subcommand(&self, name: &str) -> Option<&'static ProgramSpec> {
        self.subcommands
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| s)
    }
}

/// The shipped table, as build.rs lays it out: sorted static slices.
mod shipped {
    use super::{Cow, ProgramSpec, ValueKind};
    include!(concat!(env!("OUT_DIR"), "/exec_table.rs"));
}

/// The entry name `program` goes by (`nvim` is `vim`).
pub fn canonical(program: &str) -> &str {
    match shipped::ALIASES.binary_search_by_key(&program, |(alias, _)| alias) {
        Ok(i) => shipped::ALIASES[i].1,
        Err(_) => program,
    }
}

/// The shipped entry of `program` (by canonical name).
pub fn shipped_program(program: &str) -> Option<&'static ProgramSpec> {
    let i = shipped::PROGRAMS
        .binary_search_by_key(&program, |(name, _)| name)
        .ok()?;
    Some(&shipped::PROGRAMS[i].1)
}

/// What the shipped table says assigning `name` does.
fn shipped_env(name: &str) -> Option<&'static ValueKind> {
    match shipped::ENV_EXACT.binary_search_by_key(&name, |(n, _)| n) {
        Ok(i) => Some(&shipped::ENV_EXACT[i].1),
        Err(_) => shipped::ENV_PREFIXES
            .iter()
            .find(|(prefix, _)| name.starts_with(prefix))
            .map(|(_, kind)| kind),
    }
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
        let list = spec.options.to_mut();
        for (name, kind) in options {
            match list.iter_mut().find(|(n, _)| *n == name) {
                Some((_, old)) => *old = kind,
                None => list.push((Cow::Owned(name), kind)),
            }
        }
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
    pub fn env(&self, name: &str) -> Option<&ValueKind> {
        self.env
            .get(name)
            .or_else(|| shipped_env(name))
            .filter(|k| **k != ValueKind::Plain)
    }
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
