//! One simple command: its words are collected and checked, then it is
//! reported along with whatever it runs in turn (the command under a wrapper,
//! a shell's `-c` body or stdin script, `find -exec` commands).

use tree_sitter::Node;

use super::walk::{children_with_fields, named_children, Redirects, Walker, Work};
use super::words::Word;
use super::wrappers::{find_exec_commands, shell_invocation, unwrap, ShellRun, Unwrapped};
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
            if depth > self.limits.max_nesting {
                self.out.over_nesting(self.limits);
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
                        analyze_into(&body, depth + 1, self.limits, self.deadline, &mut nested);
                        self.absorb(nested);
                    }
                    ShellRun::Stdin if stdin_script.is_some() => {
                        self.push_command(words.clone(), std::mem::take(&mut files), true);
                        let body = stdin_script.take().unwrap_or_default();
                        let mut nested = ShellAnalysis::default();
                        analyze_into(&body, depth + 1, self.limits, self.deadline, &mut nested);
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
                    if program == "find" {
                        // Each `-exec` command is cut from find's own words:
                        // after the first is emitted, the last command
                        // reported is no longer find (cutting from it
                        // panicked; found by the shell_analyzer fuzz target).
                        let inner: Vec<(Vec<String>, Vec<bool>)> = find_exec_commands(&words)
                            .into_iter()
                            .map(|(start, end)| {
                                let lit =
                                    literal.get(start..end).map_or(Vec::new(), <[bool]>::to_vec);
                                (words[start..end].to_vec(), lit)
                            })
                            .collect();
                        self.push_command(words, files, false);
                        for (cmd, lit) in inner {
                            self.emit(cmd, lit, Redirects::default(), depth + 1);
                        }
                    } else {
                        self.push_command(words, files, false);
                    }
                    return;
                }
                Unwrapped::Unknown(reason) => {
                    self.push_command(words.clone(), files, true);
                    self.unparsed(reason);
                    return;
                }
                Unwrapped::Inner { start, assignments } => {
                    for name in assignments {
                        self.check_variable_name(&name);
                    }
                    let inner = words[start..].to_vec();
                    literal = literal[start.min(literal.len())..].to_vec();
                    self.push_command(words, std::mem::take(&mut files), true);
                    words = inner;
                    stdin_script = None;
                    depth += 1;
                }
            }
        }
    }

    fn push_command(
        &mut self,
        words: Vec<String>,
        redirects: Vec<(String, Access)>,
        wrapper: bool,
    ) {
        self.out.commands.push(SimpleCommand {
            words,
            redirects,
            is_wrapper: wrapper,
        });
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
