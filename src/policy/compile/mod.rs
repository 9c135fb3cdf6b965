//! From loaded files to one [`Policy`], with every problem reported
//! at its `FILE:LINE:COL`.
//!
//! Layers combine deny-overrides: lists are unioned (a deny anywhere wins over
//! an allow anywhere, because deciding takes the strictest finding), scalar
//! decisions take the strictest layer's value, limits take the smallest, and
//! each layer's `roots` must all contain a path.

mod exec;
mod limits;
mod manifests;
mod redact;
mod results;
mod sandbox;

use limits::compile_limits;
use manifests::compile_tools;

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::commands::{CommandRule, CommandRules};
use super::paths::{PathRules, RootSet};
use super::rules::{compile_condition, expand_placeholders, Rule, RuleSet};
use super::shell::CommandPattern;
use super::tools::{ToolInfo, ToolSet};
use super::{Decision, Policy, UnknownToolDecision};
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::parse::display_path;
use crate::config::policy_file::CommandEntry;
use crate::config::{Loaded, PolicyLayer};
use crate::workspace::GlobList;

/// Choices made at compile time rather than in the files.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Use this profile's tools as the active set (`--profile`).
    pub profile: Option<String>,
}

/// Compiles loaded files into one policy, or reports every problem.
pub fn compile(loaded: &Loaded, options: &CompileOptions) -> Result<Policy, Diagnostics> {
    let mut diags = Diagnostics::default();
    let tools = compile_tools(&loaded.manifests, &mut diags);
    let mut c = Compiler { diags, tools };
    let active = c.active_set(&loaded.layers, options);
    let paths = c.paths(&loaded.layers);
    let commands = c.commands(&loaded.layers);
    let rules = c.rules(&loaded.layers);
    let results = c.results(&loaded.layers);
    let redaction = redact::compile(&loaded.layers, &mut c.diags);
    let terminate_tools = c.terminate(&loaded.layers);
    let limits = compile_limits(&loaded.layers, &mut c.diags);
    let sandbox = sandbox::compile_sandbox(&loaded.layers, &mut c.diags);
    let unknown_tools = loaded
        .layers
        .iter()
        .filter_map(|l| l.policy.tools.as_ref().and_then(|t| t.unknown))
        .max_by_key(|u| unknown_strictness(*u))
        .unwrap_or(UnknownToolDecision::Ask);
    let Compiler { diags, mut tools } = c;
    // A redactor is missing only when its rules failed, which was reported.
    let (true, Some(redactor)) = (diags.is_empty(), redaction.redactor) else {
        return Err(diags);
    };
    tools.active = active;
    Ok(Policy {
        version: version_hash(loaded, &redaction.sources),
        files: loaded
            .file_names()
            .into_iter()
            .chain(redaction.files.iter().cloned())
            .collect(),
        tools,
        paths,
        commands,
        rules,
        results,
        unknown_tools,
        terminate_tools,
        redactor,
        limits,
        sandbox,
        warnings: Diagnostics(redaction.warnings),
    })
}

fn unknown_strictness(u: UnknownToolDecision) -> u8 {
    match u {
        UnknownToolDecision::Allow => 0,
        UnknownToolDecision::Defer => 1,
        UnknownToolDecision::Ask => 2,
        UnknownToolDecision::Deny => 3,
    }
}

/// FNV-1a over every file's name and text: stable, dependency-free, and
/// enough to tell policy versions apart in logs.
fn version_hash(loaded: &Loaded, imported: &[String]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    for l in &loaded.layers {
        feed(l.file.name.as_bytes());
        feed(l.file.text.as_bytes());
    }
    for m in &loaded.manifests {
        feed(m.file.name.as_bytes());
        feed(m.file.text.as_bytes());
    }
    // Imported gitleaks files change what the policy does too.
    for text in imported {
        feed(text.as_bytes());
    }
    format!("{h:016x}")
}

struct Compiler {
    diags: Diagnostics,
    tools: ToolSet,
}

impl Compiler {
    fn err(
        &mut self,
        layer: &PolicyLayer,
        path: &str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        err_at(&mut self.diags, layer, path, message, help);
    }

    fn check_tool_names(
        &mut self,
        layer: &PolicyLayer,
        names: &[String],
        path: &str,
    ) -> Vec<String> {
        let mut out = Vec::new();
        for (i, n) in names.iter().enumerate() {
            if self.tools.get(n).is_some() {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            } else {
                let known: Vec<&str> = self.tools.tools.keys().map(String::as_str).collect();
                let help = match crate::config::diagnostics::did_you_mean(n, &known) {
                    Some(s) => format!("did you mean `{s}`? Known tools: {}", known.join(", ")),
                    None if known.is_empty() => {
                        format!("add a manifest `{n}.toml` to the manifests folder")
                    }
                    None => format!(
                        "add a manifest `{n}.toml`, or use one of: {}",
                        known.join(", ")
                    ),
                };
                self.err(
                    layer,
                    &format!("{path}.{i}"),
                    format!(
                        "unknown tool `{n}` in `{}`: no manifest defines it",
                        display_path(path)
                    ),
                    help,
                );
            }
        }
        out
    }

    fn active_set(&mut self, layers: &[PolicyLayer], options: &CompileOptions) -> Vec<String> {
        let mut active: Vec<String> = Vec::new();
        let mut any_active = false;
        let mut profiles: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for layer in layers {
            let Some(t) = &layer.policy.tools else {
                continue;
            };
            if let Some(list) = &t.active {
                any_active = true;
                for n in self.check_tool_names(layer, list, "tools.active") {
                    if !active.contains(&n) {
                        active.push(n);
                    }
                }
            }
            for (name, list) in &t.profiles {
                let checked = self.check_tool_names(layer, list, &format!("tools.profiles.{name}"));
                profiles.insert(name.clone(), checked);
            }
        }
        if let Some(p) = &options.profile {
            return match profiles.get(p) {
                Some(list) => list.clone(),
                None => {
                    let file = layers
                        .last()
                        .map(|l| l.file.name.clone())
                        .unwrap_or_default();
                    let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
                    self.diags.push(
                        Diagnostic::new(
                            &file,
                            Position::default(),
                            format!("unknown profile `{p}`"),
                        )
                        .with_help(if known.is_empty() {
                            "define it under `tools.profiles`".to_string()
                        } else {
                            format!("use one of: {}", known.join(", "))
                        }),
                    );
                    Vec::new()
                }
            };
        }
        if any_active {
            active
        } else {
            self.tools.tools.keys().cloned().collect()
        }
    }

    fn globs(&mut self, layer: &PolicyLayer, list: &[String], path: &str, into: &mut Vec<String>) {
        for (i, g) in list.iter().enumerate() {
            match crate::workspace::compile_glob(g) {
                Ok(_) => into.push(g.clone()),
                Err(e) => self.err(
                    layer,
                    &format!("{path}.{i}"),
                    format!("invalid glob `{g}`: {e}"),
                    "fix the glob; `*` matches within one path segment, `**` across segments",
                ),
            }
        }
    }

    fn paths(&mut self, layers: &[PolicyLayer]) -> PathRules {
        let mut root_sets = Vec::new();
        let (mut deny, mut read_only) = (Vec::new(), Vec::new());
        for layer in layers {
            let Some(p) = &layer.policy.paths else {
                continue;
            };
            if let Some(roots) = &p.roots {
                if roots.is_empty() {
                    self.err(
                        layer,
                        "paths.roots",
                        "`paths.roots` is empty, which would deny every path",
                        "list at least one root, e.g. `[\".\"]` for the workspace",
                    );
                }
                for (i, r) in roots.iter().enumerate() {
                    if r.contains('\0') || r.contains(['*', '?', '[']) {
                        self.err(
                            layer,
                            &format!("paths.roots.{i}"),
                            format!("root `{r}` must be a plain directory path, not a glob"),
                            "write a directory such as `.` or `src`",
                        );
                    }
                }
                root_sets.push(RootSet {
                    roots: roots.clone(),
                });
            }
            self.globs(layer, &p.deny, "paths.deny", &mut deny);
            self.globs(layer, &p.read_only, "paths.read_only", &mut read_only);
        }
        if root_sets.is_empty() {
            root_sets.push(RootSet {
                roots: vec![".".to_string()],
            });
        }
        PathRules {
            root_sets,
            deny: std::sync::Arc::new(GlobList::new(&deny).unwrap_or_default()),
            read_only: GlobList::new(&read_only).unwrap_or_default(),
        }
    }

    fn commands(&mut self, layers: &[PolicyLayer]) -> CommandRules {
        let mut rules = CommandRules::default();
        let (mut unparsed, mut default) = (None::<Decision>, None::<Decision>);
        for layer in layers {
            let Some(c) = &layer.policy.commands else {
                continue;
            };
            for (list, entries, into) in [
                ("allow", &c.allow, &mut rules.allow),
                ("ask", &c.ask, &mut rules.ask),
                ("deny", &c.deny, &mut rules.deny),
            ] {
                for (i, entry) in entries.iter().enumerate() {
                    let at = format!("commands.{list}.{i}");
                    match CommandPattern::parse(entry.pattern()) {
                        Ok(pattern) => {
                            let (id, reason) = match entry {
                                CommandEntry::Pattern(p) => (format!("commands.{list}[{p}]"), None),
                                CommandEntry::Detailed(d) => (
                                    d.id.clone().unwrap_or_else(|| {
                                        format!("commands.{list}[{}]", d.pattern)
                                    }),
                                    d.reason.clone(),
                                ),
                            };
                            into.push(CommandRule {
                                pattern,
                                id,
                                reason,
                            });
                        }
                        Err(e) => {
                            let pos = layer.map.value(&at);
                            self.diags.push(Diagnostic::new(&layer.file.name, pos, format!("invalid command pattern `{}` in `commands.{list}`: {e}", entry.pattern()))
                                .with_help("write one simple command per entry, as words: e.g. `git push --force`"));
                        }
                    }
                }
            }
            unparsed = unparsed.max(c.unparsed);
            default = default.max(c.default);
        }
        rules.unparsed = unparsed.unwrap_or(Decision::Deny);
        rules.default = default.unwrap_or(Decision::Ask);
        rules.exec = exec::compile_exec(layers, &mut self.diags);
        rules
    }

    fn rules(&mut self, layers: &[PolicyLayer]) -> RuleSet {
        let mut out = RuleSet::default();
        for layer in layers {
            let mut ids = HashSet::new();
            for (i, spec) in layer.policy.rules.iter().enumerate() {
                let at = format!("rules.{i}");
                if spec.id.trim().is_empty() {
                    self.err(
                        layer,
                        &format!("{at}.id"),
                        "rule id is empty",
                        "give the rule a short unique id such as `no-large-writes`",
                    );
                    continue;
                }
                if !ids.insert(spec.id.clone()) {
                    self.err(
                        layer,
                        &format!("{at}.id"),
                        format!("duplicate rule id `{}`", spec.id),
                        "give every rule in a file its own id",
                    );
                }
                // Which tools: the named ones, or every tool that has the arguments.
                let named = spec
                    .tools
                    .as_ref()
                    .map(|list| self.check_tool_names(layer, list, &format!("{at}.tools")));
                if named.as_ref().is_some_and(Vec::is_empty) {
                    continue; // every name was unknown: already reported
                }
                let candidates: Vec<&ToolInfo> = match &named {
                    Some(list) => list.iter().filter_map(|n| self.tools.get(n)).collect(),
                    None => self.tools.tools.values().collect(),
                };
                let arg_types = arg_types_of(&candidates, named.is_some());
                let mut errors = Vec::new();
                let cond = compile_condition(
                    &spec.when,
                    &format!("{at}.when"),
                    &arg_types,
                    None,
                    &mut errors,
                );
                for (path, message, help) in errors {
                    let message = format!("rule `{}`: {message}", spec.id);
                    err_at(&mut self.diags, layer, &path, message, help);
                }
                let Some(cond) = cond else { continue };
                let args = cond.args();
                let tools: Vec<String> = candidates
                    .iter()
                    .filter(|t| args.iter().all(|a| t.arg_types(a).is_some()))
                    .map(|t| t.name().to_string())
                    .collect();
                if tools.is_empty() {
                    err_at(&mut self.diags, layer, &format!("{at}.when"), format!("rule `{}` applies to no tool: no manifest has all of its arguments ({})", spec.id, args.join(", ")), "add `tools:` or use arguments the tools have");
                    continue;
                }
                let path_args: Vec<String> = tools
                    .iter()
                    .filter_map(|t| self.tools.get(t))
                    .flat_map(|t| t.path_args.iter().map(|(a, _)| a.clone()))
                    .collect();
                let lexical_key = |arg: &str, raw: &str| -> Option<String> {
                    path_args
                        .iter()
                        .any(|a| a == arg)
                        .then(|| lexical_relative(raw))
                };
                // The embedded default's examples are run by this crate's tests;
                // re-running them (one builds a 2 MB string) would only slow a cold start.
                let trusted = layer.file.text == crate::config::embedded_default_policy();
                if let Some(ex) = spec.examples.as_ref().filter(|_| !trusted) {
                    for (kind, list, want) in [
                        ("match", &ex.matching, true),
                        ("not_match", &ex.not_match, false),
                    ] {
                        for (j, example) in list.iter().enumerate() {
                            let expanded = expand_placeholders(&Value::Object(example.clone()));
                            let got = expanded
                                .as_object()
                                .is_some_and(|a| cond.eval(a, &lexical_key));
                            if got != want {
                                let shown = serde_json::to_string(example).unwrap_or_default();
                                let (msg, help) =
                                    example_failure(&format!("rule `{}`", spec.id), &shown, want);
                                err_at(
                                    &mut self.diags,
                                    layer,
                                    &format!("{at}.examples.{kind}.{j}"),
                                    msg,
                                    help,
                                );
                            }
                        }
                    }
                }
                out.rules.push(Rule {
                    id: spec.id.clone(),
                    tools,
                    cond,
                    decision: spec.decision,
                    reason: spec.reason.clone(),
                    terminate: spec.terminate,
                });
            }
        }
        out
    }

    fn terminate(&mut self, layers: &[PolicyLayer]) -> Vec<String> {
        let mut out = Vec::new();
        for layer in layers {
            if let Some(t) = &layer.policy.terminate {
                for n in self.check_tool_names(layer, &t.tools, "terminate.tools") {
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
            }
        }
        out
    }
}

/// The JSON types of an argument across a rule's candidate tools, for
/// [`compile_condition`]: `None` when no tool has it, or, when the rule names
/// its tools (`every`), when one of them lacks it.
fn arg_types_of<'a>(
    candidates: &'a [&'a ToolInfo],
    every: bool,
) -> impl Fn(&str) -> Option<Vec<String>> + 'a {
    move |arg: &str| {
        let found: Vec<Vec<String>> = candidates.iter().filter_map(|t| t.arg_types(arg)).collect();
        if found.is_empty() || (every && found.len() != candidates.len()) {
            return None;
        }
        let mut all: Vec<String> = found.into_iter().flatten().collect();
        all.sort();
        all.dedup();
        Some(all)
    }
}

fn err_at(
    diags: &mut Diagnostics,
    layer: &PolicyLayer,
    path: &str,
    message: impl Into<String>,
    help: impl Into<String>,
) {
    let pos = layer.map.value(path);
    diags.push(Diagnostic::new(&layer.file.name, pos, message).with_help(help));
}

/// A path argument as written, made workspace-relative without a workspace
/// (for examples checked at load): `./src/../src/x` -> `src/x`.
fn lexical_relative(raw: &str) -> String {
    let raw = raw.strip_prefix('@').unwrap_or(raw);
    let folded = crate::workspace::fold(&Path::new("/").join(raw));
    let mut out = PathBuf::new();
    for c in folded.components() {
        if let Component::Normal(s) = c {
            out.push(s);
        }
    }
    let s = out.to_string_lossy().into_owned();
    if s.is_empty() {
        ".".to_string()
    } else {
        s
    }
}

/// The diagnostic for an example that does not come out as the rule says:
/// `what` names the rule ("rule `x`", "result rule `x`").
fn example_failure(what: &str, shown: &str, should_match: bool) -> (String, &'static str) {
    if should_match {
        (
            format!("{what}: example {shown} should match `when`, but does not"),
            "fix the rule's `when`, or the example",
        )
    } else {
        (
            format!("{what}: example {shown} should not match `when`, but does"),
            "narrow the rule's `when`, or fix the example",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_examples_hold() {
        // compile() trusts the embedded default's examples; prove them here by
        // compiling the same text under another name.
        let file = crate::config::SourceFile {
            name: "copy.yaml".into(),
            path: None,
            text: format!("{}\n", crate::config::embedded_default_policy()),
        };
        let (policy, map) = crate::config::parse::policy(&file).unwrap();
        assert!(policy.rules.iter().any(|r| r.examples.is_some()));
        let mut loaded = crate::config::load(&crate::config::ConfigPaths::default()).unwrap();
        loaded.layers = vec![crate::config::PolicyLayer { file, map, policy }];
        compile(&loaded, &CompileOptions::default()).unwrap();
    }
}
