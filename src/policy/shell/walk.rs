//! The syntax-tree walk: visits tree-sitter-bash statements with an explicit
//! work stack and records redirections, here-documents, assignments and
//! substitutions. Simple commands are handed to `command`, words to `words`.

use tree_sitter::Node;

use super::scan::{Hatch, Scanner};
use super::{snippet, Context, ShellAnalysis, SimpleCommand};
use crate::policy::Access;

/// Pending work. An explicit stack (rather than recursion) keeps long `&&`
/// chains, which tree-sitter nests one level per operator, from exhausting
/// the call stack.
pub(super) enum Work<'t> {
    Statement(Node<'t>, usize),
    /// Attach redirects of a compound statement to a command its body
    /// reported (commands from `start` on); if it reported none, the redirect
    /// cannot be accounted for.
    Attach(usize, Vec<(String, Access)>),
    /// A pipeline stage after the first: what it reads on stdin, when the
    /// stage before it prints literal text (`echo 'ls' | bash`).
    Piped(Node<'t>, usize, Option<String>),
    /// `for v in a b c`: bind `v` to one literal value for the body that
    /// follows on the stack, then unbind it.
    Bind(String, String),
    Unbind,
}

/// Most literal values a `for` loop is analyzed with, one pass per value;
/// a longer list leaves the loop variable unknown.
const MAX_LOOP_VALUES: usize = 16;

/// Most passes over `for` bodies in one analysis (nested loops multiply):
/// past it, a loop's variable is left unknown.
pub(super) const MAX_LOOP_PASSES: usize = 64;

/// Walk state for one script: the source text the nodes point into, the
/// analysis being filled, and the pending work.
pub(super) struct Walker<'s, 'o> {
    pub(super) src: &'s str,
    pub(super) out: &'o mut ShellAnalysis,
    pub(super) stack: Vec<Work<'s>>,
    /// Limits, deadline and exec table of the whole analysis.
    pub(super) ctx: &'o Context<'o>,
    /// Files an assignment says the next command writes
    /// (`CARGO_TARGET_DIR=dir cargo build`).
    pub(super) pending_writes: Vec<(String, Access)>,
    /// Loop variables bound to a literal value, innermost last.
    pub(super) bindings: Vec<(String, String)>,
}

/// Redirects and stdin data collected for one command.
#[derive(Default)]
pub(super) struct Redirects {
    /// Redirection targets naming files, with their access.
    pub(super) files: Vec<(String, Access)>,
    /// Literal here-document or here-string text, analyzed as a script when
    /// it is fed to a shell (`bash <<EOF`).
    pub(super) stdin_script: Option<String>,
    /// The command reads a pipe (a pipeline stage after the first): a shell
    /// or interpreter reading its program from it needs `stdin_script`.
    pub(super) piped: bool,
}

impl<'s> Walker<'s, '_> {
    /// The source text of `node`.
    pub(super) fn text(&self, node: Node<'_>) -> &'s str {
        &self.src[node.byte_range()]
    }

    /// Records a reason once; the same construct seen twice is one reason.
    pub(super) fn unparsed(&mut self, reason: String) {
        if !self.out.unparsed.contains(&reason) {
            self.out.unparsed.push(reason);
        }
    }

    /// Drains the work stack.
    pub(super) fn run(&mut self) {
        while let Some(work) = self.stack.pop() {
            match work {
                Work::Statement(node, depth) => self.statement(node, depth),
                Work::Piped(node, depth, stdin) => self.piped(node, depth, stdin),
                Work::Bind(name, value) => self.bindings.push((name, value)),
                Work::Unbind => {
                    self.bindings.pop();
                }
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
        if depth > self.ctx.limits.max_nesting {
            self.out.over_nesting(self.ctx.limits);
            return;
        }
        match node.kind() {
            "pipeline" => self.pipeline(node, depth),
            "program" | "list" | "negated_command" | "elif_clause" | "else_clause" | "do_group" => {
                self.push_all(named_children(node), depth)
            }
            "comment" => {}
            "subshell" | "compound_statement" | "if_statement" | "while_statement" => {
                self.push_all(named_children(node), depth + 1)
            }
            "command" => self.command(node, depth, Redirects::default()),
            "redirected_statement" => self.redirected(node, depth),
            "for_statement" if self.bind_loop(node, depth) => {}
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

    /// A pipeline: each stage after the first reads what the one before it
    /// prints; that text is known when the stage is a literal `echo` or
    /// `printf`.
    fn pipeline(&mut self, node: Node<'s>, depth: usize) {
        self.stages(node, depth, false);
    }

    /// The stages of a pipeline; with `fed`, the first stage reads the
    /// output of a command outside it (a pipeline tree-sitter nests in the
    /// here-document of `cat <<EOF | bash`), whose text is not known here.
    fn stages(&mut self, node: Node<'s>, depth: usize, fed: bool) {
        let stages = named_children(node);
        let mut work = Vec::new();
        let mut before: Option<Node<'s>> = None;
        for stage in stages {
            if stage.kind() == "comment" {
                continue;
            }
            match before {
                None if fed => work.push(Work::Piped(stage, depth, None)),
                None => work.push(Work::Statement(stage, depth)),
                Some(prev) => {
                    let stdin = super::literal::printed_text(prev, self.src);
                    work.push(Work::Piped(stage, depth, stdin));
                }
            }
            before = Some(stage);
        }
        for w in work.into_iter().rev() {
            self.stack.push(w);
        }
    }

    fn piped(&mut self, node: Node<'s>, depth: usize, stdin: Option<String>) {
        let redirects = Redirects {
            files: Vec::new(),
            stdin_script: stdin,
            piped: true,
        };
        match node.kind() {
            "command" => self.command(node, depth, redirects),
            "redirected_statement" => self.redirected_with(node, depth, redirects),
            _ => self.statement(node, depth),
        }
    }

    /// `for v in a b c; do BODY; done` with literal values: the body is
    /// analyzed once per value with `$v` bound to it. False (nothing done)
    /// when a value is not a plain literal word or there are too many.
    fn bind_loop(&mut self, node: Node<'s>, depth: usize) -> bool {
        let mut name = None;
        let mut values = Vec::new();
        let mut body = None;
        for (field, child) in children_with_fields(node) {
            match (field, child.kind()) {
                (Some("variable"), _) => name = Some(self.text(child).to_string()),
                (Some("value"), _) => match super::literal::literal_word(child, self.src) {
                    Some(v) if super::literal::safe_value(&v) => values.push(v),
                    _ => return false,
                },
                (Some("body"), _) => body = Some(child),
                (_, "comment") => {}
                _ => return false,
            }
        }
        let (Some(name), Some(body)) = (name, body) else {
            return false;
        };
        let passes = self.ctx.loop_passes.get() + values.len();
        if values.is_empty() || values.len() > MAX_LOOP_VALUES || passes > MAX_LOOP_PASSES {
            return false;
        }
        self.ctx.loop_passes.set(passes);
        for value in values.into_iter().rev() {
            self.stack.push(Work::Unbind);
            self.stack.push(Work::Statement(body, depth + 1));
            self.stack.push(Work::Bind(name.clone(), value));
        }
        true
    }

    fn redirected(&mut self, node: Node<'s>, depth: usize) {
        self.redirected_with(node, depth, Redirects::default());
    }

    fn redirected_with(&mut self, node: Node<'s>, depth: usize, mut redirects: Redirects) {
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
    pub(super) fn redirect(&mut self, node: Node<'s>, depth: usize, acc: &mut Redirects) {
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
                    } else {
                        // A shell or interpreter reading it runs text we
                        // do not know.
                        acc.stdin_script = None;
                        acc.piped = true;
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
                acc.stdin_script = None;
                acc.piped = true;
            } else {
                acc.stdin_script = Some(text.to_string());
            }
        } else if !quoted {
            acc.stdin_script = Some(String::new());
        }
        // `cat <<EOF | bash`: the rest of the first line is a pipeline fed
        // by this command.
        for node in rest.into_iter().rev() {
            if node.kind() == "pipeline" {
                // (Its stages are pushed to pop in source order.)
                self.stages(node, depth, true);
            } else {
                self.stack.push(Work::Statement(node, depth));
            }
        }
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

    /// One `NAME=value`: judges the value when the variable is an escape
    /// hatch (`PAGER=CMD`, `LD_PRELOAD=…`), else scans it for substitutions.
    pub(super) fn assignment(&mut self, node: Node<'s>, depth: usize) {
        if node.kind() != "variable_assignment" {
            self.unparsed(format!(
                "unsupported assignment `{}`",
                snippet(self.text(node))
            ));
            return;
        }
        let name = node
            .child_by_field_name("name")
            .map_or("", |n| self.text(n));
        let value = node.child_by_field_name("value");
        if self.ctx.exec.env(name).is_none() {
            // The value is not split into words, so a plain variable in it is
            // harmless; a substitution runs a command.
            if let Some(value) = value {
                self.scan_substitutions(value, depth + 1);
            }
            return;
        }
        match value {
            // `PAGER=` sets it empty: nothing runs.
            None => {}
            Some(value) if value.kind() == "array" => {
                self.scan_substitutions(value, depth + 1);
                self.variable(name, Some(("", false)), depth);
            }
            Some(value) => {
                // `word` reports substitutions in it itself.
                let word = self.word(value, depth);
                let text = word.text();
                self.variable(name, Some((&text, word.literal)), depth);
            }
        }
    }

    /// Judges assigning `value` (None: unknown) to the variable `name`.
    pub(super) fn variable(&mut self, name: &str, value: Option<(&str, bool)>, depth: usize) {
        let scanner = Scanner {
            rules: self.ctx.exec,
        };
        let hatches = scanner.variable(name, value);
        for hatch in hatches {
            match hatch {
                Hatch::Opaque(_) => self.unparsed(format!(
                    "assignment to `{name}` can change which code a command runs"
                )),
                Hatch::Write {
                    value,
                    literal: true,
                } => self.pending_writes.push((value, Access::Write)),
                Hatch::Write { literal: false, .. } => self.unparsed(format!(
                    "`{name}` names a directory written to, and its value is not a literal string"
                )),
                hatch => self.hatch(hatch, depth),
            }
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
            let mut cmd = SimpleCommand::new(words);
            cmd.redirects = std::mem::take(&mut self.pending_writes);
            self.out.commands.push(cmd);
        }
    }

    /// Reports every command or process substitution under `node` (their
    /// bodies are analyzed as statements) without descending into them.
    pub(super) fn scan_substitutions(&mut self, node: Node<'s>, depth: usize) {
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

    /// Reports a command or process substitution and walks its body.
    pub(super) fn substitution(&mut self, node: Node<'s>, depth: usize) {
        let what = if node.kind() == "process_substitution" {
            "process substitution"
        } else {
            "command substitution"
        };
        self.unparsed(format!("{what} `{}`", snippet(self.text(node))));
        // The inner commands are reported too, so a deny rule can name them.
        self.push_all(named_children(node), depth);
    }
}

/// The named children of `node` (punctuation and keywords dropped).
pub(super) fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The named children of `node` with their grammar field names, which
/// tell a command's name from its arguments and redirects.
pub(super) fn children_with_fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
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
