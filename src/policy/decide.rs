//! Combining every check into one verdict for one call.
//!
//! Deciding happens in two steps. [`gather`] does the I/O: it resolves path
//! arguments (following symlinks) and splits shell commands into their simple
//! commands. [`decide`] is pure: it judges those facts. The split keeps the
//! decision itself cheap and testable, and lets benches compare it with other
//! engines on the same pre-resolved input.
//!
//! Every check yields [`Finding`]s; the verdict is the strictest one (deny
//! beats ask beats allow), the first found at that level.

use std::borrow::Cow;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

use super::auth::Identity;
use super::finding::{AuditFinding, Finding, RuleId, Strictest, Verdict};
use super::limits::{check_arguments, preview};
use super::paths::{PathFact, PathSource};
use super::shell::{self, ShellAnalysis, ShellLimits};
use super::{Access, Decision, Policy, UnknownToolDecision};
use crate::workspace::{self, expand_shell_glob, glob_key, looks_like_path, Workspace};

/// A tool call as every front-end hands it to the policy.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, Serialize)]
pub struct ToolCall {
    /// The call's id (for logs and results).
    #[serde(default)]
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

impl ToolCall {
    /// A call of tool `name` with `arguments` (a JSON object) and no id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            id: String::new(),
            name: name.into(),
            arguments,
        }
    }

    /// The same call with `id` (for logs and results).
    pub fn with_id(mut self, id: impl Into<String>) -> ToolCall {
        self.id = id.into();
        self
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Whether the called tool exists for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStatus {
    /// Described by a manifest and active.
    Active,
    /// Described by a manifest but not active.
    Inactive,
    /// No manifest describes it.
    Unknown,
}

/// Everything [`decide`] needs, gathered with I/O by [`gather`]. It
/// borrows the call's arguments (`'a`).
#[derive(Clone, Debug)]
pub struct CallFacts<'a> {
    /// The tool's name.
    pub tool: String,
    /// Whether it exists.
    pub status: ToolStatus,
    /// The arguments (`None` when they are not a JSON object), as the call
    /// has them.
    pub args: Option<Cow<'a, Map<String, Value>>>,
    /// Path arguments, resolved.
    pub paths: Vec<PathFact>,
    /// The analyzed shell command, when the tool declares one.
    pub shell: Option<ShellFacts>,
    /// Problems found while gathering (an argument of the wrong type).
    pub problems: Vec<Finding>,
    /// The policy's roots, resolved against the workspace; empty when the
    /// call has no path or command facts (nothing to check against them).
    pub roots: Vec<Vec<PathBuf>>,
    /// Who is calling (`rules[].identities` match it); `None` for calls
    /// without authentication.
    pub identity: Option<String>,
}

/// A command argument, analyzed.
#[derive(Clone, Debug)]
pub struct ShellFacts {
    /// Its simple commands.
    pub analysis: ShellAnalysis,
    /// The file words of each simple command (operands and redirections).
    pub files: Vec<Vec<PathFact>>,
}

/// How many paths one shell glob word may expand to before the rest is ignored.
const MAX_GLOB_EXPANSION: usize = 256;

/// Devices every program may write to or read from.
fn is_harmless_device(word: &str) -> bool {
    matches!(
        word,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/tty" | "/dev/zero"
    ) || word.starts_with("/dev/fd/")
}

/// Resolves paths and analyzes commands of `call` (the I/O half of a decision).
pub fn gather<'a>(policy: &Policy, ws: &Workspace, call: &'a ToolCall) -> CallFacts<'a> {
    gather_in(policy, ws, call, None)
}

/// Like [`gather`], for a call whose command runs in `workdir` rather than
/// the workspace (an agent CLI's `dir_path`): the command's relative words are
/// judged from there, and `workdir` itself is checked like a path it reads.
pub fn gather_in<'a>(
    policy: &Policy,
    ws: &Workspace,
    call: &'a ToolCall,
    workdir: Option<&str>,
) -> CallFacts<'a> {
    gather_as(policy, ws, call, workdir, None)
}

/// Like [`gather_in`], for a call made by `identity`: its profile decides
/// which tools are active, and its id which `rules[].identities` apply.
pub fn gather_as<'a>(
    policy: &Policy,
    ws: &Workspace,
    call: &'a ToolCall,
    workdir: Option<&str>,
    identity: Option<&Identity>,
) -> CallFacts<'a> {
    let profile = identity.and_then(|i| i.profile.as_deref());
    let status = match policy.tools.get(&call.name) {
        None => ToolStatus::Unknown,
        Some(_) if policy.tools.active_tool_for(profile, &call.name).is_ok() => ToolStatus::Active,
        Some(_) => ToolStatus::Inactive,
    };
    let identity = identity.map(|i| i.id.clone());
    // Before anything walks (or clones) the arguments: what is over a limit
    // is denied unread — the same check the executor makes before coercion.
    if let Err(over) = check_arguments(&policy.limits, &call.name, &call.arguments) {
        return CallFacts {
            tool: call.name.clone(),
            status,
            args: Some(Cow::Owned(Map::new())),
            paths: Vec::new(),
            shell: None,
            problems: vec![Finding::new(
                Decision::Deny,
                RuleId::Limit(over.rule()),
                over.message(),
            )],
            roots: Vec::new(),
            identity,
        };
    }
    let mut facts = CallFacts {
        tool: call.name.clone(),
        status,
        args: call.arguments.as_object().map(Cow::Borrowed),
        paths: Vec::new(),
        shell: None,
        problems: Vec::new(),
        roots: Vec::new(),
        identity,
    };
    let (Some(tool), Some(args)) = (policy.tools.get(&call.name), call.arguments.as_object())
    else {
        return facts;
    };
    if status != ToolStatus::Active {
        return facts;
    }
    for (arg, access) in &tool.path_args {
        match args.get(arg) {
            None | Some(Value::Null) => {}
            Some(Value::String(raw)) => facts.paths.push(PathFact {
                source: PathSource::Argument(arg.clone()),
                raw: raw.clone(),
                access: *access,
                resolved: workspace::resolve(ws, raw),
                check_roots: true,
            }),
            // An array-of-paths argument (the compiler allows it only for
            // `type: array` of strings): each element is one path.
            Some(Value::Array(items))
                if items.iter().all(Value::is_string)
                    && tool.schema().pointer(&format!("/properties/{arg}/type"))
                        == Some(&Value::from("array")) =>
            {
                for raw in items.iter().filter_map(Value::as_str) {
                    facts.paths.push(PathFact {
                        source: PathSource::Argument(arg.clone()),
                        raw: raw.to_string(),
                        access: *access,
                        resolved: workspace::resolve(ws, raw),
                        check_roots: true,
                    });
                }
            }
            Some(other) => facts.problems.push(Finding::new(
                Decision::Deny,
                RuleId::PathsResolve,
                format!(
                    "argument `{arg}` must be a string path, got {}",
                    preview(other)
                ),
            )),
        }
    }
    if let Some(arg) = &tool.command_arg {
        match args.get(arg) {
            None | Some(Value::Null) => {}
            Some(Value::String(script)) => {
                if let Some(dir) = workdir {
                    facts.paths.push(PathFact {
                        source: PathSource::WorkingDirectory,
                        raw: dir.to_string(),
                        access: Access::Read,
                        resolved: workspace::resolve(ws, dir),
                        check_roots: true,
                    });
                }
                facts.shell = Some(gather_shell(
                    ws,
                    script,
                    workdir.unwrap_or(""),
                    ShellLimits::of(&policy.limits),
                    &policy.commands,
                ));
            }
            Some(other) => facts.problems.push(Finding::new(
                Decision::Deny,
                RuleId::CommandsUnparsed,
                format!(
                    "argument `{arg}` must be a string command, got {}",
                    preview(other)
                ),
            )),
        }
    }
    // The roots are read only to check path facts: a call with none (a tool
    // without path or command arguments, such as most upstream tools) does
    // not resolve them. Decided on the facts gathered, not on the tool's
    // shape, because empty roots check nothing (fail open) for a path fact.
    if !facts.paths.is_empty() || facts.shell.is_some() {
        facts.roots = policy.paths.resolved_roots(ws);
    }
    facts
}

fn gather_shell(
    ws: &Workspace,
    script: &str,
    start: &str,
    limits: ShellLimits,
    commands: &super::commands::CommandRules,
) -> ShellFacts {
    let analysis = shell::analyze_vars(script, limits, &commands.exec, &commands.variables);
    // `cd dir && cat x` reads dir/x: track the directory through the script in
    // source order (control flow ignored; a cd we cannot follow makes later
    // relative words relative to where it points, which is the strict side).
    let mut base = start.to_string();
    let mut files = Vec::with_capacity(analysis.commands.len());
    for cmd in &analysis.commands {
        let mut facts = Vec::new();
        let program = cmd.program().to_string();
        let mut add = |word: &str, access: Access, source: PathSource, base: &str| {
            if is_harmless_device(word) {
                return;
            }
            let joined = join_base(base, word);
            let paths = if joined.contains(['*', '?', '[']) {
                expand_shell_glob(ws, &joined, MAX_GLOB_EXPANSION)
            } else {
                vec![joined]
            };
            for path in paths {
                let resolved = workspace::resolve(ws, &path);
                // A plain word is held to the roots when it looks like a path,
                // or when it leads somewhere else through a symlink: `cat link`
                // must not read what `link` points to outside the workspace.
                let through_symlink = resolved.as_ref().is_ok_and(|r| r.real != r.lexical);
                facts.push(PathFact {
                    check_roots: looks_like_path(&path) || through_symlink,
                    resolved,
                    raw: path,
                    access,
                    source: source.clone(),
                });
            }
        };
        for (word, access) in cmd.file_operands() {
            add(word, access, PathSource::Operand(program.clone()), &base);
        }
        for (target, access) in &cmd.redirects {
            add(target, *access, PathSource::Redirection, &base);
        }
        if matches!(program.as_str(), "cd" | "pushd") {
            let target = cmd.words.iter().skip(1).find(|w| !w.starts_with('-'));
            base = match target {
                Some(t) => join_base(&base, t),
                None => "~".to_string(),
            };
        }
        files.push(facts);
    }
    ShellFacts { analysis, files }
}

fn join_base(base: &str, word: &str) -> String {
    if base.is_empty()
        || word.starts_with('/')
        || word.starts_with('~')
        || word.starts_with("file://")
    {
        word.to_string()
    } else {
        format!("{base}/{word}")
    }
}

/// Judges gathered facts (the pure half of a decision).
pub fn decide(policy: &Policy, ws: &Workspace, facts: &CallFacts) -> Verdict {
    let mut best = Strictest::new();
    let mut audit = Vec::new();
    if let Some(early) = examine(policy, ws, facts, &mut |_, f| best.offer(f), &mut audit) {
        return early;
    }
    conclude(policy, facts, best.into_inner(), audit)
}

/// Which check of a call a finding comes from (`explain` shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FindingSource {
    /// The arguments themselves (types, sizes).
    Arguments,
    /// The path argument `facts.paths[i]`.
    Path(usize),
    /// A limit on the command's length or nesting.
    CommandLimit,
    /// What the shell analyzer could not account for.
    Unparsed,
    /// Interpreter code it could not account for.
    InlineCode,
    /// The command lists, on simple command `i`.
    Command(usize),
    /// Path word `j` of simple command `i`.
    CommandPath(usize, usize),
    /// An argument rule (`rules:`).
    Rule,
}

/// Offers every finding about `facts` to `offer`, in the order that makes
/// the reported finding the most telling at its level, and collects the
/// audit-only ones. `Some` when the call is decided before any check (an
/// unknown or inactive tool, arguments that are not an object).
pub(crate) fn examine(
    policy: &Policy,
    ws: &Workspace,
    facts: &CallFacts,
    offer: &mut dyn FnMut(FindingSource, Finding),
    audit: &mut Vec<AuditFinding>,
) -> Option<Verdict> {
    match facts.status {
        ToolStatus::Unknown => return Some(unknown_tool(policy, &facts.tool)),
        ToolStatus::Inactive => {
            let not_found = super::tools::ToolNotFound(facts.tool.clone());
            return Some(Verdict::deny(
                Some(RuleId::ToolsActive),
                not_found.to_string(),
            ));
        }
        ToolStatus::Active => {}
    }
    let Some(args) = &facts.args else {
        return Some(Verdict {
            decision: Decision::Deny,
            reason: format!("Arguments of tool {} must be a JSON object", facts.tool),
            rule: None,
            terminate: false,
            audit: Vec::new(),
        });
    };
    for p in &facts.problems {
        offer(FindingSource::Arguments, p.clone());
    }
    for (i, fact) in facts.paths.iter().enumerate() {
        if let Some(f) = policy.paths.check(ws, &facts.roots, fact) {
            offer(FindingSource::Path(i), f);
        }
    }
    if let Some(shell) = &facts.shell {
        if let Some(over) = &shell.analysis.over_limit {
            offer(
                FindingSource::CommandLimit,
                Finding::new(Decision::Deny, RuleId::Limit(over.rule()), over.message()),
            );
        }
        if !shell.analysis.unparsed.is_empty() {
            offer(
                FindingSource::Unparsed,
                policy.commands.judge_unparsed(&shell.analysis.unparsed),
            );
        }
        if !shell.analysis.inline_code.is_empty() {
            offer(
                FindingSource::InlineCode,
                policy.commands.judge_inline(&shell.analysis.inline_code),
            );
        }
        for (i, (cmd, files)) in shell.analysis.commands.iter().zip(&shell.files).enumerate() {
            // The command's own rule first: at equal strictness, the first
            // finding is the one reported, and "rm -rf is denied" says more
            // than "/ is outside the roots".
            if let Some(f) = policy.commands.judge(cmd, ws, files) {
                offer(FindingSource::Command(i), f);
            }
            audit.extend(
                policy
                    .commands
                    .audit(cmd, ws, files)
                    .into_iter()
                    .map(AuditFinding::from),
            );
            for (j, fact) in files.iter().enumerate() {
                if let Some(f) = policy.paths.check(ws, &facts.roots, fact) {
                    offer(FindingSource::CommandPath(i, j), f);
                }
            }
        }
    }
    let path_key = |arg: &str, raw: &str| -> Option<String> {
        facts
            .paths
            .iter()
            .find(|p| p.raw == raw && matches!(&p.source, PathSource::Argument(a) if a == arg))
            .and_then(|p| p.resolved.as_ref().ok())
            .map(|r| glob_key(ws, &r.lexical))
    };
    for rule in &policy.rules.rules {
        if rule.tools.contains(&facts.tool)
            && applies_to(rule.identities.as_ref(), facts.identity.as_deref())
            && rule.cond.eval(args, &path_key)
        {
            let reason = rule
                .reason
                .clone()
                .unwrap_or_else(|| format!("Policy rule {} matched this call", rule.id));
            let finding = Finding {
                decision: rule.decision,
                rule: RuleId::Named(rule.id.clone()),
                reason,
                terminate: rule.terminate,
            };
            if rule.audit {
                audit.push(finding.into());
            } else {
                offer(FindingSource::Rule, finding);
            }
        }
    }
    None
}

/// The verdict from the strictest finding (`None`: nothing objected).
pub(crate) fn conclude(
    policy: &Policy,
    facts: &CallFacts,
    best: Option<Finding>,
    audit: Vec<AuditFinding>,
) -> Verdict {
    let terminate_tool = policy.terminate_tools.contains(&facts.tool);
    match best {
        Some(f) => Verdict {
            terminate: f.terminate || (f.decision == Decision::Allow && terminate_tool),
            audit,
            ..Verdict::from(f)
        },
        None => Verdict {
            decision: Decision::Allow,
            reason: ["Tool ", &facts.tool, " is allowed"].concat(),
            rule: None,
            terminate: terminate_tool,
            audit,
        },
    }
}

/// Whether a rule scoped to `identities` applies to a call by `identity`:
/// unscoped rules apply to everyone; scoped ones only to a matching caller.
fn applies_to(identities: Option<&globset::GlobSet>, identity: Option<&str>) -> bool {
    match identities {
        None => true,
        Some(set) => identity.is_some_and(|id| set.is_match(id)),
    }
}

fn unknown_tool(policy: &Policy, name: &str) -> Verdict {
    let (decision, reason) = match policy.unknown_tools {
        UnknownToolDecision::Allow => (Decision::Allow, format!("No manifest describes tool {name}; the policy allows unknown tools")),
        UnknownToolDecision::Defer => (Decision::Ask, format!("No manifest describes tool {name}; the policy defers to the agent's own permission check")),
        UnknownToolDecision::Ask => (Decision::Ask, format!("No manifest describes tool {name}, so it needs a person's approval")),
        UnknownToolDecision::Deny => (Decision::Deny, format!("Tool {name} not found: no manifest describes it and the policy denies unknown tools")),
    };
    Verdict {
        decision,
        reason,
        rule: Some(RuleId::ToolsUnknown.into_string()),
        terminate: false,
        audit: Vec::new(),
    }
}

impl Policy {
    /// Decides one call: [`gather`] then [`decide`].
    pub fn evaluate(&self, ws: &Workspace, call: &ToolCall) -> Verdict {
        let facts = gather(self, ws, call);
        decide(self, ws, &facts)
    }

    /// The verdict for a call to a tool no manifest describes (an agent
    /// CLI's own tool): the policy's `tools.unknown`.
    pub fn unknown_tool_verdict(&self, name: &str) -> Verdict {
        unknown_tool(self, name)
    }

    /// Decides one call made by `identity` ([`gather_as`]): its profile's
    /// tools are the active ones, and rules scoped to it apply.
    pub fn evaluate_as(
        &self,
        ws: &Workspace,
        call: &ToolCall,
        identity: Option<&Identity>,
    ) -> Verdict {
        let facts = gather_as(self, ws, call, None, identity);
        decide(self, ws, &facts)
    }

    /// Decides one call whose command runs in `workdir` ([`gather_in`]).
    pub fn evaluate_in(&self, ws: &Workspace, call: &ToolCall, workdir: Option<&str>) -> Verdict {
        let facts = gather_in(self, ws, call, workdir);
        decide(self, ws, &facts)
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
