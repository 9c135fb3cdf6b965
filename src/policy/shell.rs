//! Shell-command analysis and command-pattern matching.
//!
//! A `bash` tool call is only as safe as our understanding of the script it
//! runs. [`analyze`] splits a script into the simple commands bash would run
//! (looking through `&&`, pipelines, subshells, control flow, wrappers such as
//! `sudo`/`env`/`xargs`, and `bash -c` bodies) and lists, in
//! [`ShellAnalysis::unparsed`], every construct whose effect cannot be known
//! without running it. The policy layer treats anything unparsed with the
//! `commands.unparsed` decision, so the analyzer fails closed: a node kind it
//! does not understand is reported, never skipped.
//!
//! [`CommandPattern`] matches policy entries such as `rm -rf` against the
//! commands found, word by word rather than by substring.

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser};

use crate::policy::Access;

/// Longest script analyzed; anything longer is unparsed, which bounds the
/// parse time and memory a hostile caller can make us spend.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;

/// Deepest nesting of `bash -c` bodies, subshells, groups, control-flow
/// bodies and command substitutions analyzed; deeper input is unparsed, which
/// keeps recursion bounded.
pub const MAX_NESTING: usize = 8;

/// One simple command found in a script, after quote removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `words[0]` is the program as written (e.g. "/bin/rm"); the rest are its
    /// arguments, unquoted.
    pub words: Vec<String>,
    /// Redirection targets naming files (`> f`, `>> f`, `&> f`, `<> f` are
    /// Write; `< f` is Read). File-descriptor duplications such as `2>&1` are
    /// not listed; `/dev/null` is listed like any other file.
    pub redirects: Vec<(String, Access)>,
    /// True for a wrapper (env, timeout, nice, nohup, command, exec, builtin,
    /// xargs, sudo, doas, stdbuf, ionice, time, or a shell running `-c BODY`)
    /// whose wrapped command is reported separately.
    pub is_wrapper: bool,
}

/// Programs that only print their arguments or name shell variables: their
/// words never name files, so checking them as paths would only produce
/// false denials.
const PRINT_ONLY: &[&str] = &[
    "echo", "printf", "true", "false", ":", "export", "declare", "typeset", "local", "readonly",
    "unset",
];

/// Programs whose operands are modified (created, deleted, overwritten or
/// re-permissioned), so their operands are Write.
const WRITES_OPERANDS: &[&str] = &[
    "rm", "rmdir", "unlink", "mv", "cp", "touch", "tee", "truncate", "chmod", "chown", "chgrp",
    "ln", "mkdir", "install", "shred",
];

impl SimpleCommand {
    /// The program's basename: "/usr/bin/rm" -> "rm".
    pub fn program(&self) -> &str {
        basename(self.words.first().map(String::as_str).unwrap_or(""))
    }

    /// Words that may name files, with the access they imply: every non-flag
    /// argument and the value of `--opt=VALUE`. Write for programs that modify
    /// their operands (rm, mv, cp, touch, tee, chmod, ..., `dd of=`, `sed -i`,
    /// `perl -i`, `find -delete`), else Read. Wrappers and print-only programs
    /// (echo, printf) return nothing; redirect targets are in `redirects`.
    pub fn file_operands(&self) -> Vec<(&str, Access)> {
        let mut out = Vec::new();
        if self.is_wrapper || self.words.is_empty() {
            return out;
        }
        let program = self.program();
        if PRINT_ONLY.contains(&program) {
            return out;
        }
        let args = &self.words[1..];
        if program == "dd" {
            for arg in args {
                if let Some(v) = arg.strip_prefix("if=") {
                    out.push((v, Access::Read));
                } else if let Some(v) = arg.strip_prefix("of=") {
                    out.push((v, Access::Write));
                }
            }
            return out;
        }
        let in_place = match program {
            "sed" => args.iter().any(|a| {
                a.starts_with("--in-place") || (is_short_group(a) && a[1..].starts_with('i'))
            }),
            "perl" => args
                .iter()
                .any(|a| is_short_group(a) && a[1..].contains('i')),
            "find" => args.iter().any(|a| a == "-delete"),
            _ => false,
        };
        let access = if in_place || WRITES_OPERANDS.contains(&program) {
            Access::Write
        } else {
            Access::Read
        };
        let mut options_done = false;
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            // The command run by `find -exec` is reported as its own command;
            // its words are not find's operands.
            if program == "find" && FIND_EXEC.contains(&arg) {
                while i < args.len() && args[i] != ";" && args[i] != "+" {
                    i += 1;
                }
                i += 1;
                continue;
            }
            if !options_done && arg == "--" {
                options_done = true;
                continue;
            }
            if !options_done && is_flag(arg) {
                if arg.starts_with("--") {
                    if let Some((_, value)) = arg.split_once('=') {
                        if !value.is_empty() {
                            out.push((value, access));
                        }
                    }
                }
                continue;
            }
            out.push((arg, access));
        }
        out
    }
}

/// Everything found in a script.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellAnalysis {
    /// The simple commands the script would run, in source order (a wrapper
    /// comes before the command it wraps).
    pub commands: Vec<SimpleCommand>,
    /// One human-readable reason per construct the analyzer could not account
    /// for. Empty means every command was accounted for.
    pub unparsed: Vec<String>,
}

/// Splits a shell script into its simple commands with tree-sitter-bash.
pub fn analyze(script: &str) -> ShellAnalysis {
    let mut out = ShellAnalysis::default();
    analyze_into(script, 0, &mut out);
    out
}

fn analyze_into(script: &str, depth: usize, out: &mut ShellAnalysis) {
    if depth > MAX_NESTING {
        out.unparsed
            .push(format!("nesting deeper than {MAX_NESTING}"));
        return;
    }
    if script.len() > MAX_SCRIPT_BYTES {
        out.unparsed
            .push(format!("script longer than {MAX_SCRIPT_BYTES} bytes"));
        return;
    }
    if script.contains('\0') {
        out.unparsed.push("script contains a NUL byte".to_string());
        return;
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        out.unparsed
            .push("the bash grammar could not be loaded".to_string());
        return;
    }
    let Some(tree) = parser.parse(script, None) else {
        out.unparsed
            .push("the script could not be parsed".to_string());
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        let near = first_error(root).map_or(root.start_byte(), |n| n.start_byte());
        let near = floor_char(script, near);
        // A MISSING node sits at the end of the input; show what precedes it.
        let text = if script[near..].trim().is_empty() {
            &script[floor_char(script, near.saturating_sub(40))..]
        } else {
            &script[near..]
        };
        out.unparsed.push(format!(
            "could not parse the script near `{}`",
            snippet(text.trim())
        ));
        return;
    }
    let mut walker = Walker {
        src: script,
        out,
        stack: Vec::new(),
    };
    walker.stack.push(Work::Statement(root, depth));
    walker.run();
}

/// Finds the first ERROR or MISSING node with an explicit cursor walk, so a
/// deeply nested tree cannot overflow the stack.
fn first_error(root: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A short single-line excerpt for reasons shown to people.
fn snippet(text: &str) -> String {
    let mut s: String = text.chars().take(40).collect();
    if text.chars().count() > 40 {
        s.push('…');
    }
    s.replace('\n', "⏎")
}

/// Pending work. An explicit stack (rather than recursion) keeps long `&&`
/// chains, which tree-sitter nests one level per operator, from exhausting
/// the call stack.
enum Work<'t> {
    Statement(Node<'t>, usize),
    /// Attach redirects of a compound statement to a command its body
    /// reported (commands from `start` on); if it reported none, the redirect
    /// cannot be accounted for.
    Attach(usize, Vec<(String, Access)>),
}

struct Walker<'s, 'o> {
    src: &'s str,
    out: &'o mut ShellAnalysis,
    stack: Vec<Work<'s>>,
}

/// Result of quote removal on one word.
struct Word {
    /// Characters with whether each was quoted or escaped, which decides if
    /// it can act as a glob or brace-expansion metacharacter.
    chars: Vec<(char, bool)>,
    /// False when the word holds an expansion whose value is unknown.
    literal: bool,
    /// True when that expansion is a variable, arithmetic or undecodable
    /// string (substitutions are reported on their own).
    variable: bool,
    /// The word as written, for reasons.
    raw: String,
}

impl Word {
    fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| c).collect()
    }
    fn has_glob(&self) -> bool {
        self.chars
            .iter()
            .any(|&(c, quoted)| !quoted && matches!(c, '*' | '?' | '['))
    }
    /// Unquoted `{a,b}` or `{1..3}`: bash turns one word into several, so
    /// `rm -{r,f}` is `rm -r -f`.
    fn has_brace_expansion(&self) -> bool {
        let mut open = None;
        for (i, &(c, quoted)) in self.chars.iter().enumerate() {
            if quoted {
                continue;
            }
            match c {
                '{' => open = Some(i),
                '}' => {
                    if let Some(start) = open {
                        let inner = &self.chars[start + 1..i];
                        let comma = inner.iter().any(|&(c, q)| !q && c == ',');
                        let range = inner
                            .windows(2)
                            .any(|w| !w[0].1 && !w[1].1 && w[0].0 == '.' && w[1].0 == '.');
                        if comma || range {
                            return true;
                        }
                    }
                }
                _ => {}
            }
        }
        false
    }
}

/// Redirects and stdin data collected for one command.
#[derive(Default)]
struct Redirects {
    files: Vec<(String, Access)>,
    /// Literal here-document or here-string text, analyzed as a script when
    /// it is fed to a shell (`bash <<EOF`).
    stdin_script: Option<String>,
}

impl<'s> Walker<'s, '_> {
    fn text(&self, node: Node<'_>) -> &'s str {
        &self.src[node.byte_range()]
    }

    fn unparsed(&mut self, reason: String) {
        if !self.out.unparsed.contains(&reason) {
            self.out.unparsed.push(reason);
        }
    }

    fn run(&mut self) {
        while let Some(work) = self.stack.pop() {
            match work {
                Work::Statement(node, depth) => self.statement(node, depth),
                Work::Attach(start, redirects) => {
                    if let Some(cmd) = self.out.commands.get_mut(start) {
                        cmd.redirects.extend(redirects);
                    } else if !redirects.is_empty() {
                        let targets: Vec<_> = redirects.iter().map(|(t, _)| t.as_str()).collect();
                        self.unparsed(format!(
                            "redirection to `{}` of a statement that runs no command",
                            targets.join("`, `")
                        ));
                    }
                }
            }
        }
    }

    /// Pushes statements so they pop in source order.
    fn push_all(&mut self, nodes: Vec<Node<'s>>, depth: usize) {
        for node in nodes.into_iter().rev() {
            self.stack.push(Work::Statement(node, depth));
        }
    }

    fn statement(&mut self, node: Node<'s>, depth: usize) {
        if depth > MAX_NESTING {
            self.unparsed(format!("nesting deeper than {MAX_NESTING}"));
            return;
        }
        match node.kind() {
            "program" | "list" | "pipeline" | "negated_command" | "elif_clause" | "else_clause"
            | "do_group" => self.push_all(named_children(node), depth),
            "comment" => {}
            "subshell" | "compound_statement" | "if_statement" | "while_statement" => {
                self.push_all(named_children(node), depth + 1)
            }
            "command" => self.command(node, depth, Redirects::default()),
            "redirected_statement" => self.redirected(node, depth),
            "for_statement" | "case_statement" | "case_item" => {
                // Loop values and case patterns only expand; they run nothing
                // unless they hold a substitution. The body is statements.
                let mut body = Vec::new();
                for (field, child) in children_with_fields(node) {
                    match (field, child.kind()) {
                        (Some("variable"), _) | (_, "comment") => {}
                        (Some("value"), _) => self.scan_substitutions(child, depth + 1),
                        (None, "case_item") | (Some("body"), _) => body.push(child),
                        (None, _) if node.kind() == "case_item" => body.push(child),
                        _ => self.unparsed(format!(
                            "unsupported `{}` part in `{}`",
                            child.kind(),
                            snippet(self.text(node))
                        )),
                    }
                }
                self.push_all(body, depth + 1);
            }
            "c_style_for_statement" => {
                for (field, child) in children_with_fields(node) {
                    if field == Some("body") {
                        self.stack.push(Work::Statement(child, depth + 1));
                    } else {
                        self.scan_substitutions(child, depth + 1);
                    }
                }
            }
            "test_command" => self.scan_substitutions(node, depth + 1),
            "variable_assignment" | "variable_assignments" => self.assignments(node, depth),
            "declaration_command" | "unset_command" => self.declaration(node, depth),
            "function_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map_or("", |n| self.text(n));
                self.unparsed(format!(
                    "function definition `{name}` (a function can shadow a program name)"
                ));
            }
            kind => self.unparsed(format!(
                "unsupported shell construct `{kind}` in `{}`",
                snippet(self.text(node))
            )),
        }
    }

    fn redirected(&mut self, node: Node<'s>, depth: usize) {
        let mut redirects = Redirects::default();
        let mut body = None;
        for (field, child) in children_with_fields(node) {
            if field == Some("body") {
                body = Some(child);
            } else if child.kind() != "comment" {
                self.redirect(child, depth, &mut redirects);
            }
        }
        match body {
            Some(body) if body.kind() == "command" => self.command(body, depth, redirects),
            Some(body) => {
                self.stack
                    .push(Work::Attach(self.out.commands.len(), redirects.files));
                self.stack.push(Work::Statement(body, depth));
            }
            None => {
                if !redirects.files.is_empty() {
                    self.stack.push(Work::Attach(usize::MAX, redirects.files));
                }
            }
        }
    }

    /// Records one redirect node: a file target, a here-document or
    /// here-string, plus anything tree-sitter nests inside a here-document
    /// (the rest of the pipeline or list on its first line).
    fn redirect(&mut self, node: Node<'s>, depth: usize, acc: &mut Redirects) {
        match node.kind() {
            "file_redirect" => {
                let mut op = String::new();
                let mut dest = Vec::new();
                let mut cursor = node.walk();
                for (i, child) in node.children(&mut cursor).enumerate() {
                    if !child.is_named() {
                        op.push_str(child.kind());
                    } else if node.field_name_for_child(i as u32) == Some("destination") {
                        dest.push(child);
                    } else if child.kind() != "file_descriptor" {
                        self.unparsed(format!(
                            "unsupported redirection `{}`",
                            snippet(self.text(node))
                        ));
                        return;
                    }
                }
                if dest.is_empty() && op.ends_with("&-") {
                    return; // `>&-` closes a descriptor.
                }
                if dest.len() != 1 {
                    self.unparsed(format!(
                        "unsupported redirection `{}`",
                        snippet(self.text(node))
                    ));
                    return;
                }
                let word = self.word(dest[0], depth);
                let target = word.text();
                if !word.literal {
                    self.unparsed(format!(
                        "expansion `{}` in a redirection target",
                        snippet(&word.raw)
                    ));
                    return;
                }
                let dup = op.ends_with('&') && !op.starts_with('&');
                if dup && (target == "-" || target.chars().all(|c| c.is_ascii_digit())) {
                    return; // `2>&1`, `>&-`: a descriptor, not a file.
                }
                let access = if op.starts_with('<') && op != "<>" {
                    Access::Read
                } else {
                    Access::Write
                };
                acc.files.push((target, access));
            }
            "herestring_redirect" => {
                for child in named_children(node) {
                    let word = self.word(child, depth);
                    // Here-string data is stdin, not an argument, so a
                    // variable in it runs nothing; only substitutions do,
                    // and `word` already reported those.
                    if word.literal {
                        acc.stdin_script = Some(word.text());
                    }
                }
            }
            "heredoc_redirect" => self.heredoc(node, depth, acc),
            _ => self.unparsed(format!(
                "unsupported redirection `{}`",
                snippet(self.text(node))
            )),
        }
    }

    fn heredoc(&mut self, node: Node<'s>, depth: usize, acc: &mut Redirects) {
        let mut quoted = false;
        let mut body_text = None;
        let mut rest = Vec::new();
        for (field, child) in children_with_fields(node) {
            match (field, child.kind()) {
                (_, "heredoc_start") => {
                    quoted = self.text(child).contains(['\'', '"', '\\']);
                }
                (_, "heredoc_end") => {}
                (_, "heredoc_body") => body_text = Some(child),
                (Some("redirect"), _) => self.redirect(child, depth, acc),
                _ => rest.push(child),
            }
        }
        if let Some(body) = body_text {
            let text = self.text(body);
            if !quoted && text.contains(['$', '`']) {
                self.unparsed(format!(
                    "expansion in a here-document `{}`",
                    snippet(text.trim_start())
                ));
                self.scan_substitutions(body, depth + 1);
            } else {
                acc.stdin_script = Some(text.to_string());
            }
        } else if !quoted {
            acc.stdin_script = Some(String::new());
        }
        self.push_all(rest, depth);
    }

    /// Bare assignments (`x=1`) run nothing, but persist: a code-loading
    /// variable such as PATH changes what later commands run.
    fn assignments(&mut self, node: Node<'s>, depth: usize) {
        let list = if node.kind() == "variable_assignments" {
            named_children(node)
        } else {
            vec![node]
        };
        for assignment in list {
            self.assignment(assignment, depth);
        }
    }

    fn assignment(&mut self, node: Node<'s>, depth: usize) {
        if node.kind() != "variable_assignment" {
            self.unparsed(format!(
                "unsupported assignment `{}`",
                snippet(self.text(node))
            ));
            return;
        }
        if let Some(name) = node.child_by_field_name("name") {
            self.check_variable_name(self.text(name));
        }
        if let Some(value) = node.child_by_field_name("value") {
            // The value is not split into words, so a plain variable in it is
            // harmless; a substitution runs a command.
            self.scan_substitutions(value, depth + 1);
        }
    }

    fn check_variable_name(&mut self, name: &str) {
        if is_code_loading_variable(name) {
            self.unparsed(format!(
                "assignment to `{name}` can change which code a command runs"
            ));
        }
    }

    fn declaration(&mut self, node: Node<'s>, depth: usize) {
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                words.push(child.kind().to_string());
                continue;
            }
            match child.kind() {
                "variable_assignment" => {
                    self.assignment(child, depth);
                    words.push(self.text(child).to_string());
                }
                "variable_name" => words.push(self.text(child).to_string()),
                _ => {
                    let word = self.word(child, depth);
                    if !word.literal {
                        self.unparsed(format!(
                            "expansion `{}` in `{}`",
                            snippet(&word.raw),
                            words.first().map_or("", String::as_str)
                        ));
                    }
                    words.push(word.text());
                }
            }
        }
        if !words.is_empty() {
            self.out.commands.push(SimpleCommand {
                words,
                redirects: Vec::new(),
                is_wrapper: false,
            });
        }
    }

    fn command(&mut self, node: Node<'s>, depth: usize, mut redirects: Redirects) {
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
    fn emit(&mut self, words: Vec<String>, literal: Vec<bool>, redirects: Redirects, depth: usize) {
        let mut files = redirects.files;
        let mut stdin_script = redirects.stdin_script;
        let mut words = words;
        let mut literal = literal;
        loop {
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
                        analyze_into(&body, depth + 1, &mut nested);
                        self.absorb(nested);
                    }
                    ShellRun::Stdin if stdin_script.is_some() => {
                        self.push_command(words.clone(), std::mem::take(&mut files), true);
                        let body = stdin_script.take().unwrap_or_default();
                        let mut nested = ShellAnalysis::default();
                        analyze_into(&body, depth + 1, &mut nested);
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
                        let inner = find_exec_commands(&words);
                        self.push_command(words, files, false);
                        for (start, end) in inner {
                            let (cmd, lit) = (
                                self.out
                                    .commands
                                    .last()
                                    .map_or(Vec::new(), |c| c.words[start..end].to_vec()),
                                literal[start..end].to_vec(),
                            );
                            self.emit(cmd, lit, Redirects::default(), depth);
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
        for reason in nested.unparsed {
            self.unparsed(reason);
        }
    }

    /// Reports every command or process substitution under `node` (their
    /// bodies are analyzed as statements) without descending into them.
    fn scan_substitutions(&mut self, node: Node<'s>, depth: usize) {
        let mut cursor = node.walk();
        let mut found = Vec::new();
        'walk: loop {
            let current = cursor.node();
            let kind = current.kind();
            let descend = if matches!(kind, "command_substitution" | "process_substitution") {
                found.push(current);
                false
            } else {
                true
            };
            if descend && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.node() == node {
                    break 'walk;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        for sub in found {
            self.substitution(sub, depth);
        }
    }

    fn substitution(&mut self, node: Node<'s>, depth: usize) {
        let what = if node.kind() == "process_substitution" {
            "process substitution"
        } else {
            "command substitution"
        };
        self.unparsed(format!("{what} `{}`", snippet(self.text(node))));
        // The inner commands are reported too, so a deny rule can name them.
        self.push_all(named_children(node), depth);
    }

    /// Quote removal for one word node.
    fn word(&mut self, node: Node<'s>, depth: usize) -> Word {
        let mut word = Word {
            chars: Vec::new(),
            literal: true,
            variable: false,
            raw: self.text(node).to_string(),
        };
        self.word_part(node, depth, &mut word);
        word
    }

    fn word_part(&mut self, node: Node<'s>, depth: usize, word: &mut Word) {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" => unescape_unquoted(text, &mut word.chars),
            "raw_string" => {
                let inner = text.strip_prefix('\'').unwrap_or(text);
                let inner = inner.strip_suffix('\'').unwrap_or(inner);
                word.chars.extend(inner.chars().map(|c| (c, true)));
            }
            "ansi_c_string" => match decode_ansi_c(text) {
                Some(decoded) => word.chars.extend(decoded.chars().map(|c| (c, true))),
                None => {
                    word.literal = false;
                    word.variable = true;
                    word.chars.extend(text.chars().map(|c| (c, true)));
                }
            },
            "string" | "translated_string" => self.double_quoted(node, depth, word),
            "concatenation" => {
                for child in named_children(node) {
                    self.word_part(child, depth, word);
                }
            }
            "command_substitution" | "process_substitution" => {
                self.substitution(node, depth + 1);
                word.literal = false;
                word.chars.extend(text.chars().map(|c| (c, true)));
            }
            "arithmetic_expansion" | "expansion" | "simple_expansion" => {
                self.scan_substitutions(node, depth + 1);
                word.literal = false;
                word.variable = true;
                word.chars.extend(text.chars().map(|c| (c, true)));
            }
            kind => {
                if kind == "brace_expression" {
                    self.unparsed(format!("brace expansion `{}`", snippet(text)));
                } else {
                    self.unparsed(format!("unsupported word `{}` ({kind})", snippet(text)));
                }
                self.scan_substitutions(node, depth + 1);
                word.literal = false;
                word.chars.extend(text.chars().map(|c| (c, false)));
            }
        }
    }

    /// A `"..."` string: literal text between its children follows the
    /// double-quote escape rules; children are expansions.
    fn double_quoted(&mut self, node: Node<'s>, depth: usize, word: &mut Word) {
        let text = self.text(node);
        let open = if text.starts_with("$\"") { 2 } else { 1 };
        let start = node.start_byte() + open;
        let end = node.end_byte().saturating_sub(1).max(start);
        let mut pos = start;
        for child in named_children(node) {
            if child.kind() == "string_content" {
                continue;
            }
            if child.start_byte() > pos {
                unescape_double(&self.src[pos..child.start_byte()], &mut word.chars);
            }
            self.word_part(child, depth, word);
            pos = child.end_byte();
        }
        if end > pos {
            unescape_double(&self.src[pos..end], &mut word.chars);
        }
    }
}

/// Backslash removal outside quotes: `a\ b` is `a b`; a backslash-newline
/// joins lines.
fn unescape_unquoted(text: &str, out: &mut Vec<(char, bool)>) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push((next, true)),
            }
        } else {
            out.push((c, false));
        }
    }
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and
/// newline; elsewhere it stays.
fn unescape_double(text: &str, out: &mut Vec<(char, bool)>) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push((next, true));
                }
                _ => out.push(('\\', true)),
            }
        } else {
            out.push((c, true));
        }
    }
}

/// Decodes `$'...'` with its simple escapes. Numeric and control escapes
/// (`\x72`, `\162`, `\u0072`, `\cX`) return None: they exist mainly to hide
/// text, so the word is treated as an unknown expansion.
fn decode_ansi_c(text: &str) -> Option<String> {
    let inner = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'v' => '\x0b',
            c @ ('\\' | '\'' | '"' | '?') => c,
            _ => return None,
        });
    }
    Some(out)
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn children_with_fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            if child.is_named() {
                out.push((cursor.field_name(), child));
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A flag is a word starting with `-`, other than a lone `-` (stdin).
fn is_flag(word: &str) -> bool {
    word.starts_with('-') && word != "-"
}

fn is_short_group(word: &str) -> bool {
    is_flag(word) && !word.starts_with("--")
}

/// Variables that make programs load code, find a different program, or run
/// a command on their own (git's pager, diff and ssh hooks). Setting one
/// before an allowed command could turn it into anything, so it is unparsed.
fn is_code_loading_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "PERL5OPT",
        "PERL5LIB",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "NODE_OPTIONS",
        "RUSTC_WRAPPER",
        "RUSTC",
        "CARGO_HOME",
    ];
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "GIT_", "CARGO_TARGET_", "BASH_FUNC_"];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "ksh"];

enum ShellRun {
    /// `bash -c BODY`: the index of BODY among the words.
    Body(usize),
    /// `bash` with no script operand: reads its script from stdin.
    Stdin,
    /// `bash script.sh` and the like: runs a file we cannot see.
    Other,
}

fn shell_invocation(program: &str, words: &[String]) -> Option<ShellRun> {
    if !SHELLS.contains(&program) {
        return None;
    }
    let mut run_body = false;
    let mut i = 1;
    while i < words.len() {
        let word = words[i].as_str();
        if word == "--" || word == "-" {
            i += 1;
            break;
        }
        if matches!(word, "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if word.starts_with("--") {
            i += 1;
            continue;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            let letters = &word[1..];
            if word.starts_with('-') && letters.contains('c') {
                run_body = true;
            }
            // `-o NAME` / `-O NAME` take the next word.
            i += if letters.contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    Some(match words.get(i) {
        Some(_) if run_body => ShellRun::Body(i),
        None if !run_body => ShellRun::Stdin,
        _ => ShellRun::Other,
    })
}

enum Unwrapped {
    NotWrapper,
    /// The wrapped command starts at `words[start]`; `assignments` are the
    /// variable names the wrapper sets for it.
    Inner {
        start: usize,
        assignments: Vec<String>,
    },
    /// A wrapper used in a way whose wrapped command we cannot find.
    Unknown(String),
}

/// Option syntax of one wrapper: which short letters and long options take a
/// value, and how many operands precede the wrapped command.
struct WrapperSpec {
    name: &'static str,
    short_with_value: &'static str,
    long_with_value: &'static [&'static str],
    /// `env` takes `VAR=value` words before the command.
    assignments: bool,
    /// `timeout` takes a DURATION before the command.
    leading_operands: usize,
    /// Options that make the wrapper run something we cannot see.
    opaque: &'static [&'static str],
}

const WRAPPERS: &[WrapperSpec] = &[
    WrapperSpec {
        name: "env",
        short_with_value: "uCS",
        long_with_value: &["--unset", "--chdir", "--split-string"],
        assignments: true,
        leading_operands: 0,
        opaque: &["-S", "--split-string"],
    },
    WrapperSpec {
        name: "timeout",
        short_with_value: "sk",
        long_with_value: &["--signal", "--kill-after"],
        assignments: false,
        leading_operands: 1,
        opaque: &[],
    },
    WrapperSpec {
        name: "nice",
        short_with_value: "n",
        long_with_value: &["--adjustment"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "nohup",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "command",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "builtin",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "exec",
        short_with_value: "a",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "xargs",
        short_with_value: "nIdPLsaE",
        long_with_value: &[
            "--max-args",
            "--replace",
            "--delimiter",
            "--max-procs",
            "--max-lines",
            "--max-chars",
            "--arg-file",
            "--eof",
            "--process-slot-var",
        ],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "sudo",
        short_with_value: "ugCDhprtUTR",
        long_with_value: &[
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--chroot",
        ],
        assignments: true,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "doas",
        short_with_value: "uC",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "stdbuf",
        short_with_value: "ioe",
        long_with_value: &["--input", "--output", "--error"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "ionice",
        short_with_value: "cnp",
        long_with_value: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "time",
        short_with_value: "fo",
        long_with_value: &["--format", "--output"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
];

fn unwrap(program: &str, words: &[String]) -> Unwrapped {
    let Some(spec) = WRAPPERS.iter().find(|w| w.name == program) else {
        return Unwrapped::NotWrapper;
    };
    let mut assignments = Vec::new();
    let mut i = 1;
    let mut options_done = false;
    while i < words.len() {
        let word = words[i].as_str();
        if !options_done && is_flag(word) {
            let (name, has_value) = match word.split_once('=') {
                Some((name, _)) => (name, true),
                None => (word, false),
            };
            if spec.opaque.contains(&name) || (name.starts_with("-S") && spec.name == "env") {
                return Unwrapped::Unknown(format!(
                    "`{} {word}` splits a string into a command",
                    spec.name
                ));
            }
            if word == "--" {
                options_done = true;
                i += 1;
                continue;
            }
            if word.starts_with("--") {
                i += if !has_value && spec.long_with_value.contains(&name) {
                    2
                } else {
                    1
                };
                continue;
            }
            // A short group: the first letter taking a value ends it; the
            // value is the rest of the group or else the next word. (`nice
            // -10` has no such letter, so it is skipped as one word.)
            let letters: Vec<char> = word[1..].chars().collect();
            let mut skip = 1;
            for (k, c) in letters.iter().enumerate() {
                if spec.short_with_value.contains(*c) {
                    if k + 1 == letters.len() {
                        skip = 2;
                    }
                    break;
                }
            }
            i += skip;
            continue;
        }
        if spec.assignments && is_assignment(word) {
            if let Some((name, _)) = word.split_once('=') {
                assignments.push(name.to_string());
            }
            i += 1;
            continue;
        }
        break;
    }
    i += spec.leading_operands;
    if i >= words.len() {
        // No wrapped command: the wrapper alone (e.g. `env`, `sudo -v`).
        return Unwrapped::Inner {
            start: words.len(),
            assignments,
        };
    }
    Unwrapped::Inner {
        start: i,
        assignments,
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// The commands `find -exec CMD ... ;` runs, each reported like a command of
/// its own because `find` is a wrapper for them.
fn find_exec_commands(words: &[String]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if FIND_EXEC.contains(&words[i].as_str()) {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && words[end] != ";" && words[end] != "+" {
                end += 1;
            }
            if end > start {
                out.push((start, end));
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

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

/// A command pattern from a policy list such as "rm -rf" or
/// "git push --force".
#[derive(Clone, Debug)]
pub struct CommandPattern {
    text: String,
    program: String,
    positional: Vec<String>,
    flags: BTreeSet<Flag>,
}

/// The flag spellings that mean the same thing, so a deny entry cannot be
/// sidestepped by a synonym. Kept deliberately small:
/// - `rm`: `-R` and `--recursive` are `-r`; `--force` is `-f`.
/// - `git ... push`: `-f` and `--force-with-lease` are `--force`, and a
///   `+refspec` operand (a forced update) also counts as `--force`.
fn fold_flag(program: &str, git_push: bool, flag: Flag) -> Flag {
    match (program, flag) {
        ("rm", Flag::Short('R')) => Flag::Short('r'),
        ("rm", Flag::Long(l)) if l == "recursive" => Flag::Short('r'),
        ("rm", Flag::Long(l)) if l == "force" => Flag::Short('f'),
        ("git", Flag::Short('f')) if git_push => Flag::Long("force".into()),
        ("git", Flag::Long(l)) if git_push && l == "force-with-lease" => Flag::Long("force".into()),
        (_, flag) => flag,
    }
}

/// `mkfs.ext4` and friends are `mkfs`: the front end only dispatches to them.
fn program_matches(pattern: &str, program: &str) -> bool {
    program == pattern || (pattern == "mkfs" && program.starts_with("mkfs.") && program.len() > 5)
}

/// Splits words into positional words and folded flags.
fn split_words<'a>(
    program: &str,
    git_push: bool,
    args: impl Iterator<Item = &'a str>,
) -> (Vec<&'a str>, BTreeSet<Flag>) {
    let mut positional = Vec::new();
    let mut flags = BTreeSet::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
        } else if !options_done && is_flag(arg) {
            if let Some(long) = arg.strip_prefix("--") {
                let name = long.split_once('=').map_or(long, |(n, _)| n);
                flags.insert(fold_flag(program, git_push, Flag::Long(name.to_string())));
            } else {
                for c in arg[1..].chars() {
                    flags.insert(fold_flag(program, git_push, Flag::Short(c)));
                }
            }
        } else {
            if program == "git" && git_push && arg.starts_with('+') && arg.len() > 1 {
                flags.insert(Flag::Long("force".into()));
            }
            positional.push(arg);
        }
    }
    (positional, flags)
}

impl CommandPattern {
    /// Parses a pattern; errors say what is wrong and what to write instead.
    pub fn parse(pattern: &str) -> Result<Self, String> {
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
        let git_push = program == "git" && words[1..].iter().any(|w| w == "push");
        let (positional, flags) =
            split_words(&program, git_push, words[1..].iter().map(String::as_str));
        Ok(CommandPattern {
            text: pattern.to_string(),
            positional: positional.into_iter().map(str::to_string).collect(),
            program,
            flags,
        })
    }

    /// The pattern text as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when `cmd` runs this pattern: same program basename, every flag
    /// of the pattern present (short flags in any grouping and order, after
    /// alias folding), and the positional words lined up as `mode` says.
    pub fn matches(&self, cmd: &SimpleCommand, mode: MatchMode) -> bool {
        if !program_matches(&self.program, cmd.program()) {
            return false;
        }
        let git_push = self.program == "git" && self.positional.iter().any(|w| w == "push");
        let (positional, flags) = split_words(
            &self.program,
            git_push,
            cmd.words.iter().skip(1).map(String::as_str),
        );
        if !self.flags.is_subset(&flags) {
            return false;
        }
        match mode {
            MatchMode::Prefix => {
                positional.len() >= self.positional.len()
                    && self.positional.iter().zip(&positional).all(|(p, c)| p == c)
            }
            MatchMode::Anywhere => {
                let mut rest = positional.iter();
                self.positional.iter().all(|p| rest.any(|c| c == p))
            }
        }
    }
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

    fn programs(script: &str) -> Vec<String> {
        analyze(script)
            .commands
            .iter()
            .map(|c| c.program().to_string())
            .collect()
    }

    fn clean(script: &str) -> ShellAnalysis {
        let a = analyze(script);
        assert!(a.unparsed.is_empty(), "{script}: {:?}", a.unparsed);
        a
    }

    fn unparsed(script: &str) -> ShellAnalysis {
        let a = analyze(script);
        assert!(!a.unparsed.is_empty(), "{script} should be unparsed: {a:?}");
        a
    }

    fn cmd(words: &[&str]) -> SimpleCommand {
        SimpleCommand {
            words: words.iter().map(|w| w.to_string()).collect(),
            redirects: Vec::new(),
            is_wrapper: false,
        }
    }

    fn pat(p: &str) -> CommandPattern {
        CommandPattern::parse(p).unwrap()
    }

    /// True when some command of the script matches in the mode.
    fn hits(pattern: &str, script: &str, mode: MatchMode) -> bool {
        let p = pat(pattern);
        analyze(script).commands.iter().any(|c| p.matches(c, mode))
    }

    #[test]
    fn reordered_short_flags_match_in_both_modes() {
        for mode in [MatchMode::Prefix, MatchMode::Anywhere] {
            for c in [
                "rm -fr x",
                "rm -r -f x",
                "rm -rfv x",
                "rm -Rf x",
                "rm -f -R x",
            ] {
                assert!(hits("rm -rf", c, mode), "{c} {mode:?}");
            }
        }
    }

    #[test]
    fn long_flag_aliases_of_rm() {
        assert!(hits(
            "rm -rf",
            "rm --recursive --force x",
            MatchMode::Anywhere
        ));
        assert!(hits("rm -rf", "rm --force -r x", MatchMode::Anywhere));
        assert!(!hits("rm -rf", "rm -r x", MatchMode::Anywhere));
    }

    #[test]
    fn quoted_text_is_one_argument() {
        let a = clean("echo \"rm -rf /\"");
        assert_eq!(a.commands.len(), 1);
        assert_eq!(a.commands[0].words, ["echo", "rm -rf /"]);
        assert!(!hits("rm -rf", "echo \"rm -rf /\"", MatchMode::Anywhere));
    }

    #[test]
    fn commit_message_is_not_a_command() {
        assert!(!hits(
            "rm -rf",
            "git commit -m \"rm -rf\"",
            MatchMode::Anywhere
        ));
        assert_eq!(programs("git commit -m \"rm -rf\""), ["git"]);
    }

    #[test]
    fn wrappers_and_assignments_are_looked_through() {
        let a = clean("FOO=1 sudo -u root env X=2 rm -rf /");
        let p: Vec<_> = a.commands.iter().map(|c| c.program()).collect();
        assert_eq!(p, ["sudo", "env", "rm"]);
        assert!(a.commands[0].is_wrapper && a.commands[1].is_wrapper);
        assert!(!a.commands[2].is_wrapper);
        assert_eq!(a.commands[2].words, ["rm", "-rf", "/"]);
    }

    #[test]
    fn each_wrapper_reports_the_wrapped_command() {
        for script in [
            "env -i -u HOME rm -rf x",
            "timeout -s KILL 10 rm -rf x",
            "timeout --kill-after=5 10s rm -rf x",
            "nice -n 5 rm -rf x",
            "nohup rm -rf x",
            "command -p rm -rf x",
            "exec rm -rf x",
            "xargs -n 1 -I {} -P 4 rm -rf",
            "sudo -u root -g wheel -D /tmp rm -rf x",
            "sudo -Eu root rm -rf x",
            "doas -u root rm -rf x",
            "stdbuf -oL rm -rf x",
            "stdbuf -o L rm -rf x",
            "time rm -rf x",
            "ionice -c 3 rm -rf x",
        ] {
            let a = clean(script);
            assert!(a.commands[0].is_wrapper, "{script}");
            assert!(a.commands[0].file_operands().is_empty(), "{script}");
            let last = a.commands.last().unwrap();
            assert_eq!(last.program(), "rm", "{script}");
            assert!(pat("rm -rf").matches(last, MatchMode::Prefix), "{script}");
        }
    }

    #[test]
    fn shell_c_bodies_are_analyzed() {
        assert!(hits(
            "rm -rf",
            "bash -lc 'ls && rm -rf /'",
            MatchMode::Anywhere
        ));
        assert!(hits("rm -rf", "sh -c \"rm -rf /\"", MatchMode::Anywhere));
        assert!(hits("rm -rf", "bash -e -c 'rm -rf /'", MatchMode::Anywhere));
        assert!(hits(
            "rm -rf",
            "zsh -o errexit -c 'rm -rf /'",
            MatchMode::Anywhere
        ));
        let a = clean("dash -c 'ls'");
        assert!(a.commands[0].is_wrapper);
        assert_eq!(a.commands[1].words, ["ls"]);
    }

    #[test]
    fn shell_without_c_runs_a_script_file() {
        let a = clean("bash script.sh");
        assert_eq!(a.commands.len(), 1);
        assert!(!a.commands[0].is_wrapper);
    }

    #[test]
    fn non_literal_shell_body_is_unparsed() {
        let a = unparsed("bash -c \"$X\"");
        assert!(a.unparsed.iter().any(|r| r.contains("not a literal")));
    }

    #[test]
    fn shell_reading_a_here_string_or_heredoc_is_analyzed() {
        assert!(hits("rm -rf", "bash <<< 'rm -rf /'", MatchMode::Anywhere));
        assert!(hits(
            "rm -rf",
            "sh <<'EOF'\nrm -rf /\nEOF",
            MatchMode::Anywhere
        ));
    }

    #[test]
    fn substitution_in_program_name_is_unparsed() {
        let a = unparsed("$(echo rm) -rf /");
        assert!(a.commands.iter().all(|c| c.program() != "rm"));
        unparsed("`echo rm` -rf /");
        unparsed("$CMD -rf /");
        unparsed("${CMD} -rf /");
    }

    #[test]
    fn substitution_in_assignment_is_unparsed_and_inner_reported() {
        let a = unparsed("x=$(whoami)");
        assert_eq!(a.commands[0].program(), "whoami");
    }

    #[test]
    fn substitution_inside_double_quotes_is_unparsed() {
        let a = unparsed("echo \"today: $(rm -rf /)\"");
        assert!(a
            .commands
            .iter()
            .any(|c| pat("rm -rf").matches(c, MatchMode::Anywhere)));
    }

    #[test]
    fn process_substitution_is_unparsed() {
        let a = unparsed("diff <(ls) <(rm -rf x)");
        assert!(a
            .unparsed
            .iter()
            .any(|r| r.contains("process substitution")));
        assert!(a.commands.iter().any(|c| c.program() == "rm"));
    }

    #[test]
    fn heredoc_with_substitution_is_unparsed() {
        unparsed("cat <<EOF\n$(id)\nEOF");
        unparsed("cat <<EOF\n`id`\nEOF");
        unparsed("cat <<-EOF\n\t$HOME\n\tEOF");
    }

    #[test]
    fn quoted_heredoc_is_data() {
        let a = clean("cat <<'EOF'\n$(rm -rf /)\nEOF");
        assert_eq!(programs("cat <<'EOF'\n$(rm -rf /)\nEOF"), ["cat"]);
        assert_eq!(a.commands.len(), 1);
    }

    #[test]
    fn heredoc_keeps_the_rest_of_its_line() {
        let a = clean("cat <<EOF | rm -rf x\nhello\nEOF");
        assert_eq!(
            a.commands.iter().map(|c| c.program()).collect::<Vec<_>>(),
            ["cat", "rm"]
        );
    }

    #[test]
    fn pipe_into_xargs_reports_wrapped_command() {
        assert_eq!(programs("ls | xargs rm -rf"), ["ls", "xargs", "rm"]);
        assert!(hits("rm -rf", "ls | xargs rm -rf", MatchMode::Anywhere));
    }

    #[test]
    fn absolute_program_path_uses_basename() {
        let a = clean("/bin/rm -rf x");
        assert_eq!(a.commands[0].program(), "rm");
        assert!(hits("rm -rf", "/usr/bin/rm -rf x", MatchMode::Prefix));
    }

    #[test]
    fn quoted_or_escaped_program_name_is_unquoted() {
        for s in ["\\rm -rf x", "r\\m -rf x", "\"rm\" -rf x", "'r'm -rf x"] {
            assert!(hits("rm -rf", s, MatchMode::Anywhere), "{s}");
        }
    }

    #[test]
    fn prefix_and_anywhere_modes_differ_on_git_dash_c() {
        let c = cmd(&["git", "-C", "dir", "push"]);
        assert!(pat("git push").matches(&c, MatchMode::Anywhere));
        assert!(!pat("git push").matches(&c, MatchMode::Prefix));
        let s = cmd(&["git", "status", "--short"]);
        assert!(pat("git status").matches(&s, MatchMode::Prefix));
        assert!(!pat("git status").matches(&cmd(&["git", "log", "status"]), MatchMode::Prefix));
    }

    #[test]
    fn git_push_force_aliases() {
        let p = pat("git push --force");
        for words in [
            &["git", "push", "--force"][..],
            &["git", "push", "-f", "origin"],
            &["git", "push", "--force-with-lease"],
            &["git", "push", "--force=origin"],
            &["git", "push", "origin", "+main"],
        ] {
            assert!(p.matches(&cmd(words), MatchMode::Anywhere), "{words:?}");
        }
        assert!(!p.matches(&cmd(&["git", "push", "origin"]), MatchMode::Anywhere));
        // -f means something else outside push.
        assert!(!p.matches(&cmd(&["git", "fetch", "-f"]), MatchMode::Anywhere));
    }

    #[test]
    fn words_after_double_dash_are_positional() {
        assert!(!pat("rm -rf").matches(&cmd(&["rm", "--", "-rf"]), MatchMode::Anywhere));
        let a = clean("rm -- -rf");
        assert_eq!(a.commands[0].file_operands(), [("-rf", Access::Write)]);
    }

    #[test]
    fn lone_dash_is_not_a_flag() {
        let c = cmd(&["cat", "-"]);
        assert!(pat("cat -").matches(&c, MatchMode::Prefix));
        assert_eq!(c.file_operands(), [("-", Access::Read)]);
    }

    #[test]
    fn extra_flags_do_not_prevent_a_match_but_missing_ones_do() {
        assert!(pat("git push").matches(&cmd(&["git", "push", "-u", "origin"]), MatchMode::Prefix));
        assert!(!pat("ls -la").matches(&cmd(&["ls", "-l"]), MatchMode::Prefix));
    }

    #[test]
    fn program_must_match_exactly() {
        assert!(!pat("rm").matches(&cmd(&["rmdir", "x"]), MatchMode::Anywhere));
        assert!(!pat("git push").matches(&cmd(&["gitk", "push"]), MatchMode::Anywhere));
        assert!(pat("mkfs").matches(&cmd(&["mkfs.ext4", "/dev/sda"]), MatchMode::Anywhere));
    }

    #[test]
    fn redirect_to_file_is_write_and_fd_dup_is_not_a_file() {
        let a = clean("echo x > out.txt 2>&1");
        assert_eq!(
            a.commands[0].redirects,
            [("out.txt".to_string(), Access::Write)]
        );
        let a = clean("cat < in.txt >> log &> all >& both 1>&2 >&-");
        assert_eq!(
            a.commands[0].redirects,
            [
                ("in.txt".to_string(), Access::Read),
                ("log".to_string(), Access::Write),
                ("all".to_string(), Access::Write),
                ("both".to_string(), Access::Write),
            ]
        );
        assert!(a.commands[0].file_operands().is_empty());
    }

    #[test]
    fn redirect_of_a_group_is_kept() {
        let a = clean("{ ls; } > .env");
        assert_eq!(
            a.commands[0].redirects,
            [(".env".to_string(), Access::Write)]
        );
    }

    #[test]
    fn redirect_target_with_variable_is_unparsed() {
        unparsed("echo hi > \"$OUT\"");
    }

    #[test]
    fn dev_null_is_reported() {
        let a = clean("ls 2>/dev/null");
        assert_eq!(
            a.commands[0].redirects,
            [("/dev/null".to_string(), Access::Write)]
        );
    }

    #[test]
    fn deep_shell_nesting_is_unparsed_without_panic() {
        // Quoting grows exponentially with depth, so 20 levels of `bash -c`
        // nest through here-documents instead, whose size grows linearly.
        let mut script = "rm -rf /".to_string();
        for level in 0..20 {
            script = format!("bash <<'E{level}'\n{script}\nE{level}");
        }
        let a = unparsed(&script);
        assert!(a.unparsed.iter().any(|r| r.contains("nesting")), "{a:?}");
        let mut script = "rm -rf /".to_string();
        for _ in 0..12 {
            let quoted = script.replace('\\', "\\\\").replace('"', "\\\"");
            script = format!("bash -c \"{quoted}\"");
        }
        let a = unparsed(&script);
        assert!(a.unparsed.iter().any(|r| r.contains("nesting")), "{a:?}");
        let mut script = "rm -rf /".to_string();
        for _ in 0..5 {
            let quoted = script.replace('\\', "\\\\").replace('"', "\\\"");
            script = format!("bash -c \"{quoted}\"");
        }
        assert!(hits("rm -rf", &script, MatchMode::Anywhere));
    }

    #[test]
    fn deep_syntax_nesting_is_unparsed_without_panic() {
        let script = format!("{}ls{}", "( ".repeat(50), " )".repeat(50));
        let a = unparsed(&script);
        assert!(a.unparsed.iter().any(|r| r.contains("nesting")));
        // A long && chain is flat for the user but deep in the tree.
        let chain = vec!["true"; 5000].join(" && ");
        assert_eq!(clean(&chain).commands.len(), 5000);
    }

    #[test]
    fn oversized_or_nul_script_is_unparsed() {
        let a = unparsed(&"x".repeat(200_000));
        assert!(a.commands.is_empty());
        assert!(a.unparsed[0].contains("longer than"));
        unparsed("ls\0rm -rf /");
    }

    #[test]
    fn parse_errors_are_unparsed() {
        let a = unparsed("echo \"unterminated");
        assert!(a.unparsed[0].contains("could not parse"));
        unparsed("{rm,-rf,/}");
        unparsed("ls &&");
    }

    #[test]
    fn control_flow_bodies_and_conditions_are_split() {
        assert_eq!(
            programs("if rm -rf a; then ls; elif true; then :; else rm b; fi"),
            ["rm", "ls", "true", ":", "rm"]
        );
        assert_eq!(programs("while rm x; do ls; done"), ["rm", "ls"]);
        assert_eq!(programs("until rm x; do ls; done"), ["rm", "ls"]);
        assert_eq!(programs("for f in a b; do rm -rf x; done"), ["rm"]);
        assert_eq!(programs("case x in a) ls;; b|c) rm y;; esac"), ["ls", "rm"]);
        assert_eq!(programs("! rm x"), ["rm"]);
        assert_eq!(programs("(cd x && rm y) & { ls; }"), ["cd", "rm", "ls"]);
    }

    #[test]
    fn all_list_operators_split() {
        assert_eq!(
            programs("a && b || c; d & e | f\ng"),
            ["a", "b", "c", "d", "e", "f", "g"]
        );
    }

    #[test]
    fn test_commands_run_nothing_unless_substituting() {
        assert!(clean("[[ -f $x ]] && ls").commands.len() == 1);
        assert!(clean("[ -f x ]").commands.is_empty());
        let a = unparsed("[[ -f $(rm -rf /) ]]");
        assert!(a.commands.iter().any(|c| c.program() == "rm"));
    }

    #[test]
    fn variable_in_argument_is_unparsed_with_reason() {
        let a = unparsed("rm $FLAGS x");
        assert!(a.unparsed[0].contains("$FLAGS"));
        assert!(a.unparsed[0].contains("-rf"));
        unparsed("echo \"$HOME\"");
        unparsed("echo $((1 + 2))");
    }

    #[test]
    fn eval_alias_function_are_unparsed() {
        let a = unparsed("eval 'rm -rf /'");
        assert!(a.unparsed[0].starts_with("eval"));
        unparsed("alias ls='rm -rf'");
        unparsed("ls() { rm -rf /; }; ls");
        unparsed("sudo eval ls");
    }

    #[test]
    fn brace_expansion_is_unparsed_but_find_braces_are_not() {
        unparsed("rm -{r,f} x");
        unparsed("touch a{1..3}");
        let a = clean("find . -name '*.o' -exec rm {} \\;");
        assert_eq!(
            a.commands.iter().map(|c| c.program()).collect::<Vec<_>>(),
            ["find", "rm"]
        );
        assert_eq!(a.commands[1].words, ["rm", "{}"]);
        clean("echo '{a,b}'");
    }

    #[test]
    fn quote_removal_concatenates() {
        let a = clean("echo ab\"c\"d 'e f' g\\ h \"a\\\"b\\\\c\\$x\" \"\\n\"");
        assert_eq!(
            a.commands[0].words,
            ["echo", "abcd", "e f", "g h", "a\"b\\c$x", "\\n"]
        );
    }

    #[test]
    fn ansi_c_strings_decode_simple_escapes_only() {
        let a = clean("printf $'a\\tb\\n'");
        assert_eq!(a.commands[0].words, ["printf", "a\tb\n"]);
        unparsed("$'\\x72m' -rf /");
        unparsed("$'\\162m' -rf /");
    }

    #[test]
    fn globs_stay_literal_in_arguments_but_not_in_program() {
        let a = clean("ls *.rs src/?.rs");
        assert_eq!(a.commands[0].words, ["ls", "*.rs", "src/?.rs"]);
        unparsed("/bin/r? -rf x");
        clean("\"r*\" x");
    }

    #[test]
    fn bare_assignment_yields_no_command() {
        assert!(clean("FOO=1").commands.is_empty());
        assert!(clean("A=1 B=2").commands.is_empty());
    }

    #[test]
    fn code_loading_assignments_are_unparsed() {
        unparsed("GIT_EXTERNAL_DIFF='rm -rf /' git diff");
        unparsed("PATH=/tmp/evil ls");
        unparsed("env LD_PRELOAD=./x.so ls");
        unparsed("export PAGER='rm -rf /'");
        clean("RUST_LOG=debug cargo test");
    }

    #[test]
    fn declaration_is_reported_without_file_operands() {
        let a = clean("export A=b");
        assert_eq!(a.commands[0].words, ["export", "A=b"]);
        assert!(a.commands[0].file_operands().is_empty());
        unparsed("local d=$(id)");
    }

    #[test]
    fn file_operands_access() {
        let c = cmd(&["cat", "-n", "--file=a.txt", "b.txt"]);
        assert_eq!(
            c.file_operands(),
            [("a.txt", Access::Read), ("b.txt", Access::Read)]
        );
        let c = cmd(&["cp", "a", "b"]);
        assert_eq!(
            c.file_operands(),
            [("a", Access::Write), ("b", Access::Write)]
        );
        let c = cmd(&["sed", "-i.bak", "s/a/b/", "f"]);
        assert!(c.file_operands().contains(&("f", Access::Write)));
        let c = cmd(&["sed", "-n", "p", "f"]);
        assert!(c.file_operands().contains(&("f", Access::Read)));
        let c = cmd(&["dd", "if=a", "of=b", "bs=1M"]);
        assert_eq!(
            c.file_operands(),
            [("a", Access::Read), ("b", Access::Write)]
        );
        assert!(cmd(&["echo", "/etc/passwd"]).file_operands().is_empty());
        let c = cmd(&["tee", "-a", "log"]);
        assert_eq!(c.file_operands(), [("log", Access::Write)]);
    }

    #[test]
    fn env_split_string_is_unparsed() {
        unparsed("env -S 'rm -rf /'");
    }

    #[test]
    fn pattern_parse_errors_explain() {
        assert!(CommandPattern::parse("").unwrap_err().contains("empty"));
        assert!(CommandPattern::parse("   ").unwrap_err().contains("empty"));
        let e = CommandPattern::parse("ls && rm").unwrap_err();
        assert!(e.contains("one simple command per entry"), "{e}");
        assert!(CommandPattern::parse("ls | wc").is_err());
        assert!(CommandPattern::parse("ls; rm").is_err());
        assert!(CommandPattern::parse("echo 'oops")
            .unwrap_err()
            .contains("close"));
        assert!(CommandPattern::parse("rm $X").is_err());
        assert!(CommandPattern::parse("-rf").is_err());
    }

    #[test]
    fn pattern_quotes_and_text() {
        let p = pat("git commit -m 'wip now'");
        assert_eq!(p.as_str(), "git commit -m 'wip now'");
        assert!(p.matches(&cmd(&["git", "commit", "-m", "wip now"]), MatchMode::Prefix));
        assert!(!p.matches(&cmd(&["git", "commit", "-m", "wip"]), MatchMode::Prefix));
        let p = pat("/bin/rm -rf");
        assert!(p.matches(&cmd(&["rm", "-rf", "x"]), MatchMode::Anywhere));
    }

    #[test]
    fn anywhere_keeps_order() {
        let p = pat("git push origin");
        assert!(p.matches(
            &cmd(&["git", "-C", "d", "push", "x", "origin"]),
            MatchMode::Anywhere
        ));
        assert!(!p.matches(&cmd(&["git", "origin", "push"]), MatchMode::Anywhere));
    }

    #[test]
    fn printf_and_grep_arguments_are_not_commands() {
        assert_eq!(programs("printf '%s\\n' 'curl x'"), ["printf"]);
        assert_eq!(programs("grep -r \"sudo\" src"), ["grep"]);
        assert!(!hits("sudo", "echo sudo", MatchMode::Anywhere));
    }

    #[test]
    fn arithmetic_command_is_unparsed_not_dropped() {
        unparsed("((x++))");
        unparsed("for ((i=$(id);i<3;i++)); do ls; done");
        assert_eq!(programs("for ((i=0;i<3;i++)); do rm x; done"), ["rm"]);
    }
}
