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
//!
//! Layout: this file holds the public types and the parse entry point;
//! `walk` visits the syntax tree, `command` handles one simple command and
//! what it runs in turn, `words` does quote removal, `wrappers` knows how
//! `sudo`/`env`/`xargs`/`bash -c`… hand their arguments on, `exec` reads the
//! escape-hatch table (options and variables that make a program run
//! another: `rg --pre`, `git -c core.pager`, `PAGER`, `find -exec`), and
//! `pattern` matches policy command patterns.

mod command;
mod exec;
mod inline;
#[cfg(test)]
mod inline_tests;
mod interp;
#[cfg(test)]
mod limit_tests;
mod literal;
mod pattern;
mod scan;
#[cfg(test)]
mod tests;
mod walk;
mod words;
mod wrappers;

use std::ops::Range;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser};

use crate::policy::limits::{LimitExceeded, Limits};
use crate::policy::Access;

pub use self::exec::{ExecRules, ProgramSpec, ValueKind};
pub use self::pattern::{CommandPattern, CommandSplits, MatchMode};
use self::walk::{Walker, Work};

/// What the analyzer may spend on one script: its length, and how deeply
/// its constructs may nest. Over either, the analysis records
/// [`ShellAnalysis::over_limit`], which the policy denies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShellLimits {
    /// Longest script analyzed, in bytes (bounds parse time and memory).
    pub max_bytes: usize,
    /// Deepest nesting of subshells, groups, control-flow bodies, `bash -c`
    /// bodies, command substitutions, wrappers and `find -exec` (bounds
    /// recursion and the copies each wrapper level makes).
    pub max_nesting: usize,
    /// How long parsing one command (with its `bash -c` bodies) may take.
    /// tree-sitter's error recovery is far from linear on some inputs
    /// (60 KB of `$[` took 50 s), so parsing stops here and the command is
    /// denied as too complex.
    pub max_parse_time: Duration,
}

/// The default [`ShellLimits::max_parse_time`]: every real script parses in
/// milliseconds, even at the length limit.
pub const MAX_PARSE_TIME: Duration = Duration::from_secs(1);

impl ShellLimits {
    /// The shell limits of a policy's [`Limits`].
    pub fn of(limits: &Limits) -> ShellLimits {
        ShellLimits {
            max_bytes: usize::try_from(limits.max_command_bytes).unwrap_or(usize::MAX),
            max_nesting: limits.max_command_nesting as usize,
            max_parse_time: MAX_PARSE_TIME,
        }
    }
}

impl Default for ShellLimits {
    fn default() -> Self {
        ShellLimits::of(&Limits::default())
    }
}

/// One simple command found in a script, after quote removal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `words[0]` is the program as written (e.g. "/bin/rm"); the rest are its
    /// arguments, unquoted.
    pub words: Vec<String>,
    /// Redirection targets naming files (`> f`, `>> f`, `&> f`, `<> f` are
    /// Write; `< f` is Read), and files an option or variable makes the
    /// program write (`sort -o f`, `find -fprint f`; see the exec table).
    /// File-descriptor duplications such as `2>&1` are not listed;
    /// `/dev/null` is listed like any other file.
    pub redirects: Vec<(String, Access)>,
    /// True for a wrapper (env, timeout, nice, nohup, command, exec, builtin,
    /// xargs, sudo, doas, stdbuf, ionice, time, or a shell running `-c BODY`)
    /// whose wrapped command is reported separately.
    pub is_wrapper: bool,
    /// Indices of words that are the value of an option before them
    /// (`git -C DIR`, `git -c KEY=VALUE`), per the exec table: command
    /// patterns skip them, so `git -c color.ui=always log` is `git log`.
    pub option_values: Vec<usize>,
    /// Word ranges that form a command the program runs (`find -exec CMD ;`),
    /// reported as a command of its own; they are not file operands.
    pub run_words: Vec<Range<usize>>,
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

    /// A command of `words`, with nothing else known about it.
    pub fn new(words: Vec<String>) -> SimpleCommand {
        SimpleCommand {
            words,
            redirects: Vec::new(),
            is_wrapper: false,
            option_values: Vec::new(),
            run_words: Vec::new(),
        }
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
            // A command the program runs (`find -exec CMD ;`) is reported as
            // its own command; its words are not this program's operands.
            // (`i` is now the word's index in `self.words`.)
            if let Some(run) = self.run_words.iter().find(|r| r.contains(&i)) {
                // Skip the command and the `;` or `+` that ends it: the next
                // argument looked at is `self.words[run.end + 1]`.
                i = run.end;
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
    /// Set when the script is longer or nests deeper than [`ShellLimits`]
    /// allow; what lies past the limit was not analyzed.
    pub over_limit: Option<LimitExceeded>,
    /// One reason per piece of interpreter code (`python -c`, `node -e`, a
    /// heredoc into `perl`) that could not be fully accounted for: judged
    /// with `commands.inline_code`. Shell commands and file operations found
    /// in the code are in `commands` either way.
    pub inline_code: Vec<String>,
}

/// Variables whose values the analyzer may use (`commands.variables`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KnownVariables {
    /// Names set in toolgate's environment, with their values.
    pub values: std::collections::BTreeMap<String, String>,
    /// Names listed but unset: `${NAME:-default}` takes the default.
    pub unset: Vec<String>,
}

impl ShellAnalysis {
    /// Records that the script nests deeper than `limits` allow.
    fn over_nesting(&mut self, limits: ShellLimits) {
        self.over_limit = Some(LimitExceeded::CommandNesting {
            max: u32::try_from(limits.max_nesting).unwrap_or(u32::MAX),
        });
    }
}

/// Splits a shell script into its simple commands with tree-sitter-bash,
/// within the default [`ShellLimits`].
pub fn analyze(script: &str) -> ShellAnalysis {
    analyze_with(script, ShellLimits::default())
}

/// [`analyze`] within a policy's limits, with the shipped exec table.
pub fn analyze_with(script: &str, limits: ShellLimits) -> ShellAnalysis {
    analyze_in(script, limits, &ExecRules::default())
}

/// [`analyze`] within a policy's limits and with its exec table (the
/// shipped one plus `commands.exec_options` / `commands.exec_env`).
pub fn analyze_in(script: &str, limits: ShellLimits, exec: &ExecRules) -> ShellAnalysis {
    analyze_vars(script, limits, exec, &KnownVariables::default())
}

/// [`analyze_in`] with the values of the policy's `commands.variables`.
pub fn analyze_vars(
    script: &str,
    limits: ShellLimits,
    exec: &ExecRules,
    vars: &KnownVariables,
) -> ShellAnalysis {
    let mut out = ShellAnalysis::default();
    let deadline = Instant::now() + limits.max_parse_time;
    let ctx = Context {
        limits,
        deadline,
        exec,
        vars,
        loop_passes: std::cell::Cell::new(0),
    };
    analyze_into(script, 0, &ctx, &mut out);
    out
}

/// What stays the same for every nested body of one analysis.
struct Context<'e> {
    limits: ShellLimits,
    /// When parsing nested bodies must stop.
    deadline: Instant,
    /// Escape hatches of the policy.
    exec: &'e ExecRules,
    /// Variables whose values are known.
    vars: &'e KnownVariables,
    /// `for` bodies analyzed once per literal value so far, in this script
    /// and every body nested in it (bounded by `walk::MAX_LOOP_PASSES`).
    loop_passes: std::cell::Cell<usize>,
}

/// [`analyze`] at a given nesting depth, appending to `out`; `bash -c`
/// bodies re-enter here one level deeper, with the same context.
fn analyze_into(script: &str, depth: usize, ctx: &Context<'_>, out: &mut ShellAnalysis) {
    let (limits, deadline) = (ctx.limits, ctx.deadline);
    if depth > limits.max_nesting {
        out.over_nesting(limits);
        return;
    }
    if script.len() > limits.max_bytes {
        out.over_limit = Some(LimitExceeded::CommandBytes {
            bytes: script.len(),
            max: limits.max_bytes as u64,
        });
        return;
    }
    if script.contains('\0') {
        out.unparsed.push("script contains a NUL byte".to_string());
        return;
    }
    let Some(parsed) = parse(script, deadline) else {
        out.unparsed
            .push("the bash grammar could not be loaded".to_string());
        return;
    };
    let Some(tree) = parsed else {
        if Instant::now() > deadline {
            out.over_limit = Some(LimitExceeded::CommandTooComplex {
                max_ms: u64::try_from(limits.max_parse_time.as_millis()).unwrap_or(u64::MAX),
            });
        } else {
            out.unparsed
                .push("the script could not be parsed".to_string());
        }
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
        ctx,
        pending_writes: Vec::new(),
        bindings: Vec::new(),
    };
    walker.stack.push(Work::Statement(root, depth));
    walker.run();
}

thread_local! {
    /// This thread's bash parser, made once: building a parser and loading
    /// the grammar cost as much as parsing a short command. Each parse
    /// starts from a reset parser, so nothing carries over between scripts.
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// Parses `script` with this thread's parser, stopping at `deadline`:
/// `None` when the grammar cannot be loaded, `Some(None)` when the parse
/// stopped (out of time) or failed. The parser is only borrowed for the
/// parse itself, so nested bodies (`bash -c`) parse with it again while the
/// outer tree is walked.
fn parse(script: &str, deadline: Instant) -> Option<Option<tree_sitter::Tree>> {
    let parse_with = |parser: &mut Parser| {
        // A parse stopped by the deadline would resume where it stopped.
        parser.reset();
        let bytes = script.as_bytes();
        let mut out_of_time = |_: &ParseState| Instant::now() > deadline;
        let options = ParseOptions::new().progress_callback(&mut out_of_time);
        let tree = parser.parse_with_options(
            &mut |at, _| bytes.get(at..).unwrap_or_default(),
            None,
            Some(options),
        );
        parser.reset();
        tree
    };
    let new_parser = || {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()
            .map(|()| parser)
    };
    PARSER
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => {
                if slot.is_none() {
                    *slot = Some(new_parser()?);
                }
                slot.as_mut().map(parse_with)
            }
            // Already parsing on this thread (cannot happen: the borrow
            // ends with the parse): a parser of its own.
            Err(_) => new_parser().map(|mut p| parse_with(&mut p)),
        })
        // The thread is exiting: a parser of its own.
        .unwrap_or_else(|_| new_parser().map(|mut p| parse_with(&mut p)))
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

/// The largest char boundary of `s` at or below `i`, so excerpts of a
/// script never split a UTF-8 character.
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

/// The last path component: `/usr/bin/rm` -> `rm`.
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A flag is a word starting with `-`, other than a lone `-` (stdin).
fn is_flag(word: &str) -> bool {
    word.starts_with('-') && word != "-"
}

/// A group of short flags such as `-rf` (not a `--long` option).
fn is_short_group(word: &str) -> bool {
    is_flag(word) && !word.starts_with("--")
}
