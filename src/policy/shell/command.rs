//! One simple command: its words are collected and checked, then it is
//! reported along with whatever it runs in turn (the command under a wrapper,
//! a shell's `-c` body or stdin script, and what its options run per the exec
//! table: `find -exec` commands, `rg --pre CMD`, `git -c core.pager=CMD`).

use tree_sitter::Node;

use super::scan::{Hatch, Scan, Scanner};
use super::walk::{children_with_fields, named_children, Redirects, Walker, Work};
use super::words::Word;
use super::wrappers::{shell_invocation, unwrap, ShellRun, Unwrapped};
use super::{analyze_into, basename, snippet, ShellAnalysis, SimpleCommand};
use crate::policy::Access;

impl<'s> Walker<'s, '_> {
    /// Collects a `command` node's words, assignments and redirects, then
    /// reports it.
    pub(super) fn command(&mut self, node: Node<'s>, depth: usize, mut redirects: Redirects) {
        let mut words: Vec<Word> = Vec::new();
        for (field, child) in children_with_fields(node) {
            match (field, child.kind()) {
                (Some("redirect"), _) => self.redirect(child, depth, &mut redirects),
                (_, "variable_assignment") => self.assignment(child, depth),
                (Some("name"), "command_name") => {
                    let inner = named_children(child);
                    if inner.len() == 1 {
                        words.push(self.word(inner[0], depth));
                    } else {
                        self.unparsed(format!(
                            "unsupported program name `{}`",
                            snippet(self.text(child))
                        ));
                        return;
                    }
                }
                (Some("argument"), _) => words.push(self.word(child, depth)),
                (_, "comment") => {}
                _ => {
                    self.unparsed(format!(
                        "unsupported `{}` in command `{}`",
                        child.kind(),
                        snippet(self.text(node))
                    ));
                    return;
                }
            }
        }
        let Some(program) = words.first() else {
            if !redirects.files.is_empty() {
                self.stack.push(Work::Attach(usize::MAX, redirects.files));
            }
            return;
        };
        if !program.literal {
            self.unparsed(format!(
                "expansion `{}` in program name",
                snippet(&program.raw)
            ));
            return;
        }
        if program.has_glob() {
            self.unparsed(format!("glob `{}` in program name", snippet(&program.raw)));
            return;
        }
        let name = program.text();
        for word in &words {
            if word.has_brace_expansion() {
                self.unparsed(format!(
                    "brace expansion `{}` (one word becomes several)",
                    snippet(&word.raw)
                ));
            } else if word.variable {
                self.unparsed(format!(
                    "variable expansion `{}` in an argument of `{}` (it could hold flags such as -rf)",
                    snippet(&word.raw),
                    basename(&name)
                ));
            }
        }
        let texts: Vec<String> = words.iter().map(Word::text).collect();
        let literal: Vec<bool> = words.iter().map(|w| w.literal).collect();
        self.emit(texts, literal, redirects, depth);
    }

    /// Reports a command, then whatever it runs in turn: the command under a
    /// wrapper, a shell's `-c` body, `find -exec` commands.
    /// `literal[i]` says whether `words[i]` was free of expansions: only a
    /// literal `-c` body can be analyzed.
    ///
    /// Each command it runs in turn is one level deeper: a chain of wrappers
    /// copies the remaining words at every level, and `find -exec` recurses,
    /// so both must stop at the nesting limit.
    fn emit(&mut self, words: Vec<String>, literal: Vec<bool>, redirects: Redirects, depth: usize) {
        let mut files = redirects.files;
        let mut stdin_script = redirects.stdin_script;
        let mut words = words;
        let mut literal = literal;
        let mut depth = depth;
        loop {
            if depth > self.ctx.limits.max_nesting {
                self.out.over_nesting(self.ctx.limits);
                return;
            }
            let Some(first) = words.first() else {
                if !files.is_empty() {
                    self.stack.push(Work::Attach(usize::MAX, files));
                }
                return;
            };
            let program = basename(first).to_string();
            match program.as_str() {
                "eval" => {
                    self.unparsed(format!("eval `{}`", snippet(&words[1..].join(" "))));
                    return;
                }
                "alias" | "unalias" => {
                    self.unparsed(format!("{program} (an alias can shadow a program name)"));
                    return;
                }
                _ => {}
            }
            if let Some(shell) = shell_invocation(&program, &words) {
                match shell {
                    ShellRun::Body(index) if !literal.get(index).copied().unwrap_or(false) => {
                        self.push_command(words.clone(), std::mem::take(&mut files), true);
                        self.unparsed(format!(
                            "`{program} -c` with a body that is not a literal string"
                        ));
                    }
                    ShellRun::Body(index) => {
                        let body = words[index].clone();
                        self.push_command(words.clone(), std::mem::take(&mut files), true);
                        let mut nested = ShellAnalysis::default();
                        analyze_into(&body, depth + 1, self.ctx, &mut nested);
                        self.absorb(nested);
                    }
                    ShellRun::Stdin if stdin_script.is_some() => {
                        self.push_command(words.clone(), std::mem::take(&mut files), true);
                        let body = stdin_script.take().unwrap_or_default();
                        let mut nested = ShellAnalysis::default();
                        analyze_into(&body, depth + 1, self.ctx, &mut nested);
                        self.absorb(nested);
                    }
                    ShellRun::Stdin | ShellRun::Other => {
                        self.push_command(words, files, false);
                    }
                }
                return;
            }
            match unwrap(&program, &words) {
                Unwrapped::NotWrapper => {
                    let scan = self.scan(&program, &words, &literal, words.len());
                    self.push_scanned(words, literal, files, false, scan, depth);
                    return;
                }
                Unwrapped::Unknown(reason) => {
                    self.push_command(words.clone(), files, true);
                    self.unparsed(reason);
                    return;
                }
                Unwrapped::Inner { start, assignments } => {
                    // The wrapper's own options (`time -o FILE`) only.
                    let scan = self.scan(&program, &words, &literal, start);
                    for index in assignments {
                        if let Some((name, value)) = words[index].split_once('=') {
                            let literal = literal.get(index).copied().unwrap_or(false);
                            self.variable(name, Some((value, literal)), depth);
                        }
                    }
                    let inner = words[start..].to_vec();
                    let inner_literal = literal[start.min(literal.len())..].to_vec();
                    self.push_scanned(
                        words,
                        literal,
                        std::mem::take(&mut files),
                        true,
                        scan,
                        depth,
                    );
                    words = inner;
                    literal = inner_literal;
                    stdin_script = None;
                    depth += 1;
                }
            }
        }
    }

    /// Scans `words[..end]` against the exec table (one lookup when the
    /// program has no entry).
    fn scan(&self, program: &str, words: &[String], literal: &[bool], end: usize) -> Option<Scan> {
        Scanner {
            rules: self.ctx.exec,
        }
        .scan(program, words, literal, end)
    }

    /// Reports a command with what scanning it found: files it writes join
    /// its redirects, option values are marked, and what it runs is
    /// analyzed after it (one level deeper).
    fn push_scanned(
        &mut self,
        words: Vec<String>,
        literal: Vec<bool>,
        mut files: Vec<(String, Access)>,
        wrapper: bool,
        scan: Option<Scan>,
        depth: usize,
    ) {
        let Some(scan) = scan else {
            self.push_command(words, files, wrapper);
            return;
        };
        // Commands it runs are cut from its words now, so the words can be
        // moved into the report rather than copied.
        let mut argv = Vec::new();
        let mut later = Vec::new();
        for hatch in scan.hatches {
            match hatch {
                Hatch::Write {
                    value,
                    literal: true,
                } => files.push((value, Access::Write)),
                // An expansion in it was reported with the command's words.
                Hatch::Write { literal: false, .. } => {}
                Hatch::Argv(range) => {
                    let cut = words
                        .get(range.clone())
                        .map_or(Vec::new(), <[String]>::to_vec);
                    let lit = literal.get(range).map_or(Vec::new(), <[bool]>::to_vec);
                    argv.push((cut, lit));
                }
                hatch => later.push(hatch),
            }
        }
        let index = self.out.commands.len();
        self.push_command(words, files, wrapper);
        if let Some(cmd) = self.out.commands.get_mut(index) {
            cmd.option_values = scan.option_values;
            cmd.run_words = scan.run_words;
        }
        for (cut, lit) in argv {
            self.emit(cut, lit, Redirects::default(), depth + 1);
        }
        for hatch in later {
            self.hatch(hatch, depth);
        }
    }

    /// Acts on one escape hatch found in a command or an assignment.
    pub(super) fn hatch(&mut self, hatch: Hatch, depth: usize) {
        match hatch {
            Hatch::Run {
                what,
                literal: false,
                ..
            } => self.unparsed(format!(
                "{what} is given a value that is not a literal string"
            )),
            Hatch::Run {
                what,
                value,
                literal: true,
                program,
            } => {
                if program {
                    self.unparsed(format!(
                        "{what} runs `{}` on input it chooses",
                        snippet(&value)
                    ));
                }
                let mut nested = ShellAnalysis::default();
                analyze_into(&value, depth + 1, self.ctx, &mut nested);
                self.absorb(nested);
            }
            Hatch::Opaque(reason) => self.unparsed(reason),
            Hatch::Write { value, literal } => {
                if literal {
                    self.pending_writes.push((value, Access::Write));
                }
            }
            // Only a command's own words hold a command to cut out
            // (`push_scanned`); a variable's value never does.
            Hatch::Argv(_) => self.unparsed("a command inside a value".to_string()),
            Hatch::Variable(name) => self.variable(&name, None, depth),
        }
    }

    fn push_command(
        &mut self,
        words: Vec<String>,
        redirects: Vec<(String, Access)>,
        wrapper: bool,
    ) {
        let mut cmd = SimpleCommand::new(words);
        cmd.redirects = redirects;
        cmd.redirects.append(&mut self.pending_writes);
        cmd.is_wrapper = wrapper;
        self.out.commands.push(cmd);
    }

    fn absorb(&mut self, nested: ShellAnalysis) {
        self.out.commands.extend(nested.commands);
        if nested.over_limit.is_some() {
            self.out.over_limit = nested.over_limit;
        }
        for reason in nested.unparsed {
            self.unparsed(reason);
        }
    }
}
