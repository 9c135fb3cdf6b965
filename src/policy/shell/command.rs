//! One simple command: its words are collected and checked, then it is
//! reported along with whatever it runs in turn (the command under a wrapper,
//! a shell's `-c` body or stdin script, and what its options run per the exec
//! table: `find -exec` commands, `rg --pre CMD`, `git -c core.pager=CMD`).

use tree_sitter::Node;

use super::inline::{self, Effect, Lang};
use super::interp::{interpreter, program_words, Program};
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
        let print_only = self.print_only(&name, &words, &redirects);
        for word in &words {
            if word.has_brace_expansion() {
                self.unparsed(format!(
                    "brace expansion `{}` (one word becomes several)",
                    snippet(&word.raw)
                ));
            } else if word.variable && !print_only {
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

    /// True when the command only prints its words (`echo`, `printf`
    /// without `-v`, `true`, `:`) and writes no file: a variable in its
    /// words then cannot change what runs. (Printed into a shell or an
    /// interpreter, the text is not literal, which `emit` reports.)
    fn print_only(&self, name: &str, words: &[Word], redirects: &Redirects) -> bool {
        let program = basename(name);
        if !matches!(program, "echo" | "printf" | "true" | ":") {
            return false;
        }
        if words.iter().any(|w| w.evaluates) {
            return false;
        }
        // `printf -v NAME` assigns; a variable could hold `-v` too.
        // (Only its first argument can be an option.)
        if program == "printf"
            && words
                .get(1)
                .is_some_and(|w| !w.literal || w.text().starts_with("-v"))
        {
            return false;
        }
        let writes = |files: &[(String, Access)]| files.iter().any(|(_, a)| *a == Access::Write);
        // Redirects of an enclosing statement (`{ echo $x; } > f`) are
        // still on the stack.
        let enclosing = self
            .stack
            .iter()
            .any(|w| matches!(w, Work::Attach(_, files) if writes(files)));
        !writes(&redirects.files) && !enclosing
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
        let mut piped = redirects.piped;
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
                    if literal.iter().all(|l| *l) {
                        // `eval WORDS` runs the words joined by spaces, like
                        // `bash -c`.
                        let body = words[1..].join(" ");
                        self.push_command(words, std::mem::take(&mut files), true);
                        let mut nested = ShellAnalysis::default();
                        analyze_into(&body, depth + 1, self.ctx, &mut nested);
                        self.absorb(nested);
                    } else {
                        self.unparsed(format!("eval `{}`", snippet(&words[1..].join(" "))));
                    }
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
                    ShellRun::Stdin if piped => {
                        self.push_command(words, files, true);
                        self.unparsed(format!(
                            "`{program}` reads a script whose text is not a literal string"
                        ));
                    }
                    ShellRun::Stdin | ShellRun::Other => {
                        self.push_command(words, files, false);
                    }
                }
                return;
            }
            match unwrap(&program, &words) {
                Unwrapped::NotWrapper => {
                    if let Some(lang) = interpreter(&program) {
                        let stdin = Stdin {
                            script: stdin_script.take(),
                            piped,
                        };
                        self.interpreter(
                            lang, &program, &words, &literal, &mut files, stdin, depth,
                        );
                    }
                    let delete = (program == "find").then(|| find_delete(&words)).flatten();
                    let scan = self.scan(&program, &words, &literal, words.len());
                    self.push_scanned(words, literal, files, false, scan, depth);
                    if let Some(rm) = delete {
                        // `find … -delete` deletes like `rm -rf` of its
                        // start points: judged as that command too.
                        self.emit(
                            rm.clone(),
                            vec![true; rm.len()],
                            Redirects::default(),
                            depth + 1,
                        );
                    }
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
                    // The wrapped command reads the same stdin, except
                    // under xargs, which reads it itself.
                    if program == "xargs" {
                        stdin_script = None;
                        piped = false;
                    }
                    words = inner;
                    literal = inner_literal;
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
        for reason in nested.inline_code {
            self.inline(reason);
        }
    }
}

/// What an interpreter reads on stdin.
struct Stdin {
    /// Literal text (a here-document, here-string or `echo` piped in).
    script: Option<String>,
    /// Something is fed to it (a pipe, or a here-document that expands).
    piped: bool,
}

impl Walker<'_, '_> {
    /// An interpreter invocation: its code (`-c`/`-e`/`-r` words, or a
    /// literal script on stdin) is read for shell commands and file
    /// operations, which are judged as commands after it; what cannot be
    /// accounted for goes to `inline_code`. File reads and writes join the
    /// interpreter command's own `files`.
    #[allow(clippy::too_many_arguments)]
    fn interpreter(
        &mut self,
        lang: Lang,
        program: &str,
        words: &[String],
        literal: &[bool],
        files: &mut Vec<(String, Access)>,
        stdin: Stdin,
        depth: usize,
    ) {
        let code = match program_words(lang, program, words) {
            Program::Inline(indices) => {
                if indices
                    .iter()
                    .any(|&i| !literal.get(i).copied().unwrap_or(false))
                {
                    // The variable in it was reported as unparsed.
                    return;
                }
                indices
                    .iter()
                    .map(|&i| words[i].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            Program::Stdin => match stdin.script {
                Some(script) => script,
                None if stdin.piped => {
                    self.inline(format!(
                        "`{program}` reads code whose text is not a literal string"
                    ));
                    return;
                }
                None => return,
            },
            Program::Other => return,
        };
        let reading = inline::read(lang, &code);
        for why in reading.unknown {
            self.inline(format!("`{program}` code: {why}"));
        }
        for effect in reading.effects {
            match effect {
                Effect::File(path, access) => files.push((path, access)),
                Effect::Shell(cmd) => {
                    let mut nested = ShellAnalysis::default();
                    analyze_into(&cmd, depth + 1, self.ctx, &mut nested);
                    self.absorb(nested);
                }
                Effect::Argv(argv) => {
                    let lit = vec![true; argv.len()];
                    self.emit(argv, lit, Redirects::default(), depth + 1);
                }
            }
        }
    }

    fn inline(&mut self, reason: String) {
        if !self.out.inline_code.contains(&reason) {
            self.out.inline_code.push(reason);
        }
    }
}

/// `find PATHS … -delete` as `rm -rf -- PATHS` (`.` when none is given);
/// None without `-delete`.
fn find_delete(words: &[String]) -> Option<Vec<String>> {
    if !words.iter().any(|w| w == "-delete") {
        return None;
    }
    let mut i = 1;
    while i < words.len() && matches!(words[i].as_str(), "-H" | "-L" | "-P") {
        i += 1;
    }
    let starts: Vec<String> = words[i..]
        .iter()
        .take_while(|w| !w.starts_with('-') && !matches!(w.as_str(), "(" | "!" | ","))
        .cloned()
        .collect();
    let mut rm = vec!["rm".to_string(), "-rf".to_string(), "--".to_string()];
    if starts.is_empty() {
        rm.push(".".to_string());
    } else {
        rm.extend(starts);
    }
    Some(rm)
}
