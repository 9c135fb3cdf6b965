//! From loaded files to one [`Policy`], with every problem reported
//! at its `FILE:LINE:COL`.
//!
//! Layers combine deny-overrides: lists are unioned (a deny anywhere wins over
//! an allow anywhere, because deciding takes the strictest finding), scalar
//! decisions take the strictest layer's value, limits take the smallest, and
//! each layer's `roots` must all contain a path.

mod auth;
mod exec;
mod limits;
mod manifests;
mod redact;
mod results;
mod sandbox;
mod servers;

use limits::compile_limits;
use manifests::compile_tools;

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::commands::{self, CommandRule, CommandRules, Unless};
use super::paths::{PathRules, RootSet};
use super::rules::{compile_condition_with, expand_placeholders, Regexes, Rule, RuleSet};
use super::shell::CommandPattern;
use super::tools::{ToolInfo, ToolSet};
use super::{Decision, Policy, RuleOrigin, UnknownToolDecision};
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::parse::display_path;
use crate::config::policy_file::{CommandEntry, Mode, UnlessSpec};
use crate::config::{Loaded, PolicyLayer};
use crate::workspace::GlobList;

/// Choices made at compile time rather than in the files.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// Use this profile's tools as the active set (`--profile`).
    pub profile: Option<String>,
    /// Treat audit-only entries (`mode: audit`) as enforced: what the
    /// policy would decide once they are switched on (`replay --enforce-audit`).
    pub enforce_audit: bool,
    /// The tools the running upstream servers listed (`[server]`
    /// manifests); a server without an entry contributes no tools yet.
    pub upstream: Option<std::sync::Arc<crate::config::server::UpstreamCatalog>>,
    /// These exact files were compiled, with every example passing, by
    /// this build before ([`crate::config::proven`]): examples are not
    /// checked again and rule regexes compile on first use. Only for a
    /// process that decides and exits (a hook); never set it from anything
    /// but a stamp found for the files being compiled.
    pub proven: bool,
}

/// Compiles loaded files into one policy, or reports every problem.
pub fn compile(loaded: &Loaded, options: &CompileOptions) -> Result<Policy, Diagnostics> {
    let mut diags = Diagnostics::default();
    let upstream = servers::upstream_manifests(loaded, options, &mut diags);
    let tools = if upstream.manifests.is_empty() {
        compile_tools(&loaded.manifests, &mut diags)
    } else {
        let mut all = loaded.manifests.clone();
        all.extend(upstream.manifests);
        compile_tools(&all, &mut diags)
    };
    let mut c = Compiler {
        diags,
        tools,
        warnings: Vec::new(),
        enforce_audit: options.enforce_audit,
        proven: options.proven,
        origins: Vec::new(),
        pending_prefixes: upstream.pending_prefixes,
        profiles: BTreeMap::new(),
    };
    c.audit_layers(&loaded.layers);
    let active = c.active_set(&loaded.layers, options);
    let (auth, auth_sources) = auth::compile(&loaded.layers, &c.profiles, &mut c.diags);
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
    let Compiler {
        diags,
        mut tools,
        warnings,
        origins,
        profiles,
        ..
    } = c;
    // A redactor is missing only when its rules failed, which was reported.
    let (true, Some(redactor)) = (diags.is_empty(), redaction.redactor) else {
        return Err(diags);
    };
    tools.active = active;
    tools.profiles = profiles;
    let hashed: Vec<String> = redaction
        .sources
        .iter()
        .chain(&auth_sources)
        .cloned()
        .collect();
    Ok(Policy {
        version: version_hash(loaded, &hashed, options),
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
        warnings: Diagnostics(redaction.warnings.into_iter().chain(warnings).collect()),
        origins,
        auth: auth.map(std::sync::Arc::new),
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
fn version_hash(loaded: &Loaded, imported: &[String], options: &CompileOptions) -> String {
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
    for s in &loaded.servers {
        feed(s.file.name.as_bytes());
        feed(s.file.text.as_bytes());
    }
    // Imported gitleaks files change what the policy does too.
    for text in imported {
        feed(text.as_bytes());
    }
    // So do the tools upstream servers listed.
    if let Some(catalog) = &options.upstream {
        feed(
            serde_json::to_string(catalog.as_ref())
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    format!("{h:016x}")
}

struct Compiler {
    diags: Diagnostics,
    tools: ToolSet,
    /// Problems that do not stop the load (`toolgate check` shows them).
    warnings: Vec<Diagnostic>,
    /// [`CompileOptions::enforce_audit`].
    enforce_audit: bool,
    /// [`CompileOptions::proven`].
    proven: bool,
    /// Where each rule id is written (see [`RuleOrigin`]).
    origins: Vec<(String, RuleOrigin)>,
    /// Prefixes of upstream servers whose tools are not listed yet.
    pending_prefixes: Vec<String>,
    /// Every layer's `tools.profiles`, checked.
    profiles: BTreeMap<String, Vec<String>>,
}

impl Compiler {
    /// An audit layer (`mode: audit` at the top of a file) may hold only
    /// command lists and rules: what else it could say (paths, tools,
    /// limits, redaction) has no audit-only meaning.
    fn audit_layers(&mut self, layers: &[PolicyLayer]) {
        for layer in layers {
            let p = &layer.policy;
            if p.mode != Some(Mode::Audit) {
                continue;
            }
            let mut others: Vec<&str> = [
                ("tools", p.tools.is_some()),
                ("paths", p.paths.is_some()),
                ("results", !p.results.is_empty()),
                ("redact", p.redact.is_some()),
                ("terminate", p.terminate.is_some()),
                ("limits", p.limits.is_some()),
            ]
            .into_iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| name)
            .collect();
            if let Some(c) = &p.commands {
                for (name, set) in [
                    ("commands.unparsed", c.unparsed.is_some()),
                    ("commands.default", c.default.is_some()),
                    ("commands.inline_code", c.inline_code.is_some()),
                    ("commands.variables", !c.variables.is_empty()),
                    ("commands.exec_options", !c.exec_options.is_empty()),
                    ("commands.exec_env", c.exec_env.is_some()),
                ] {
                    if set {
                        others.push(name);
                    }
                }
            }
            if !others.is_empty() {
                self.err(
                    layer,
                    "mode",
                    format!(
                        "this file is `mode: audit`, which applies to command entries and rules only, but it also sets {}",
                        others.join(", ")
                    ),
                    "move those keys to an enforcing policy file, or put `mode: audit` on single entries instead",
                );
            }
        }
    }

    /// Records that rule `id` is written at `at` in `layer`; the first
    /// place wins (the same id in two layers names the first).
    fn origin(&mut self, id: &str, layer: &PolicyLayer, at: &str) {
        // Appended, not searched (a hook start records ~100 of these): the
        // first entry for an id is the one `Policy::rule_origin` finds.
        self.origins.push((
            id.to_string(),
            RuleOrigin {
                file: layer.file.name.clone(),
                at: at.to_string(),
            },
        ));
    }

    /// When rule regexes compile: on first use for proven files.
    fn regexes(&self) -> Regexes {
        if self.proven {
            Regexes::OnFirstUse
        } else {
            Regexes::Now
        }
    }

    /// Whether an entry with `mode` in `layer` is audit-only.
    fn is_audit(&self, layer: &PolicyLayer, mode: Option<Mode>) -> bool {
        !self.enforce_audit
            && (mode == Some(Mode::Audit)
                || (layer.policy.mode == Some(Mode::Audit) && mode != Some(Mode::Enforce)))
    }

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
                continue;
            }
            // A glob (`everything__*`) names every tool it matches.
            if n.contains(['*', '?', '[']) {
                match globset::Glob::new(n) {
                    Ok(glob) => {
                        let m = glob.compile_matcher();
                        let matched: Vec<String> = self
                            .tools
                            .tools
                            .keys()
                            .filter(|t| m.is_match(t.as_str()))
                            .cloned()
                            .collect();
                        let may_match_later = self
                            .pending_prefixes
                            .iter()
                            .any(|p| m.is_match(format!("{p}__x")) || n.starts_with(p.as_str()));
                        if matched.is_empty() && !may_match_later {
                            self.err(
                                layer,
                                &format!("{path}.{i}"),
                                format!("`{n}` in `{}` matches no tool", display_path(path)),
                                "check the pattern against the tool names (`toolgate tools`)",
                            );
                        }
                        for t in matched {
                            if !out.contains(&t) {
                                out.push(t);
                            }
                        }
                    }
                    Err(e) => self.err(
                        layer,
                        &format!("{path}.{i}"),
                        format!("invalid tool pattern `{n}`: {e}"),
                        "use `*` and `?` wildcards, e.g. `everything__*`",
                    ),
                }
                continue;
            }
            // A tool of an upstream server that has not listed its tools
            // (yet): it does not exist until it has.
            if self
                .pending_prefixes
                .iter()
                .any(|p| crate::config::server::unprefixed(p, n).is_some())
            {
                continue;
            }
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
        self.profiles = profiles.clone();
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
                Ok(_) => {
                    self.origin(&format!("{path}[{g}]"), layer, &format!("{path}.{i}"));
                    into.push(g.clone())
                }
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
                self.origin("paths.roots", layer, "paths.roots");
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
        let mut inline_code = None::<Decision>;
        let mut listed = Vec::new();
        for layer in layers {
            if let Some(c) = &layer.policy.commands {
                listed.extend(c.variables.iter().cloned());
            }
        }
        let (variables, unset) = commands::known_variables(&listed);
        for layer in layers {
            let Some(c) = &layer.policy.commands else {
                continue;
            };
            for (i, name) in c.variables.iter().enumerate() {
                if !commands::is_variable_name(name) {
                    self.err(
                        layer,
                        &format!("commands.variables.{i}"),
                        format!("`{name}` is not a variable name"),
                        "write the name without `$`, e.g. `TMPDIR`",
                    );
                }
            }
            for (list, entries, into) in [
                ("allow", &c.allow, &mut rules.allow),
                ("ask", &c.ask, &mut rules.ask),
                ("deny", &c.deny, &mut rules.deny),
            ] {
                for (i, entry) in entries.iter().enumerate() {
                    let at = format!("commands.{list}.{i}");
                    let exact = matches!(entry, CommandEntry::Detailed(d) if d.exact);
                    match CommandPattern::parse_with(entry.pattern(), exact) {
                        Ok(pattern) => {
                            // The object form is taken as written for the new
                            // reading; a plain string may predate it.
                            if pattern.has_double_dash()
                                && matches!(entry, CommandEntry::Pattern(_))
                            {
                                let pos = layer.map.value(&at);
                                self.warnings.push(Diagnostic::new(&layer.file.name, pos, format!("command pattern `{}` in `commands.{list}` contains `--`, which is now a word the command must contain (before, it was dropped and the pattern matched without it)", entry.pattern()))
                                    .with_help("to match only commands that have `--` (e.g. `git checkout -- FILE`), write the entry as `{ pattern: \"…\" }`, which silences this warning; remove the `--` to match the program with any arguments"));
                            }
                            let (id, reason) = match entry {
                                CommandEntry::Pattern(p) => (format!("commands.{list}[{p}]"), None),
                                CommandEntry::Detailed(d) => (
                                    d.id.clone().unwrap_or_else(|| {
                                        format!("commands.{list}[{}]", d.pattern)
                                    }),
                                    d.reason.clone(),
                                ),
                            };
                            let unless = match entry {
                                CommandEntry::Detailed(d) => match &d.unless {
                                    Some(u) => {
                                        self.unless(layer, &at, &pattern, u, &listed, &variables)
                                    }
                                    None => Unless::default(),
                                },
                                CommandEntry::Pattern(_) => Unless::default(),
                            };
                            let mode = match entry {
                                CommandEntry::Detailed(d) => d.mode,
                                CommandEntry::Pattern(_) => None,
                            };
                            self.origin(&id, layer, &at);
                            into.push(CommandRule {
                                pattern,
                                id,
                                reason,
                                unless,
                                audit: self.is_audit(layer, mode),
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
            // The strictest setting decides; name the first layer that has it.
            for (key, set, so_far) in [
                ("commands.unparsed", c.unparsed, unparsed),
                ("commands.default", c.default, default),
                ("commands.inline_code", c.inline_code, inline_code),
            ] {
                if set.is_some() && set > so_far {
                    self.origins.retain(|(id, _)| id != key);
                    self.origin(key, layer, key);
                }
            }
            unparsed = unparsed.max(c.unparsed);
            default = default.max(c.default);
            inline_code = inline_code.max(c.inline_code);
        }
        rules.unparsed = unparsed.unwrap_or(Decision::Deny);
        rules.default = default.unwrap_or(Decision::Ask);
        rules.inline_code = inline_code;
        rules.variables = crate::policy::shell::KnownVariables {
            values: variables,
            unset,
        };
        rules.exec = exec::compile_exec(layers, &mut self.diags);
        rules
    }

    /// Compiles one entry's `unless:`; problems are reported at `at.unless`.
    fn unless(
        &mut self,
        layer: &PolicyLayer,
        at: &str,
        pattern: &CommandPattern,
        spec: &UnlessSpec,
        listed: &[String],
        variables: &std::collections::BTreeMap<String, String>,
    ) -> Unless {
        let mut out = Unless::default();
        for (i, flag) in spec.flags.iter().enumerate() {
            match pattern.fold_policy_flag(flag) {
                Some(folded) => out.flags.push(folded),
                None => self.err(
                    layer,
                    &format!("{at}.unless.flags.{i}"),
                    format!("`{flag}` is not a single flag"),
                    "write one flag per item, as the command spells it: `-n`, `--dry-run`",
                ),
            }
        }
        for (i, dir) in spec.operands_under.iter().enumerate() {
            match commands::substitute_dir(dir, listed, variables) {
                Ok(Some(resolved)) => out.operands_under.push(resolved),
                // A listed variable that is unset: nothing is under it.
                Ok(None) => {}
                Err(e) => self.err(
                    layer,
                    &format!("{at}.unless.operands_under.{i}"),
                    e,
                    "list the variable in `commands.variables`, or write the directory itself",
                ),
            }
        }
        out
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
                self.origin(&spec.id, layer, &at);
                let identities = match &spec.identities {
                    None => None,
                    Some(globs) => {
                        match self.identity_globs(layer, globs, &format!("{at}.identities")) {
                            Some(set) => Some(set),
                            None => continue, // reported
                        }
                    }
                };
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
                let cond = compile_condition_with(
                    &spec.when,
                    &format!("{at}.when"),
                    &arg_types,
                    None,
                    self.regexes(),
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
                let trusted =
                    self.proven || layer.file.text == crate::config::embedded_default_policy();
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
                    identities,
                    tools,
                    cond,
                    decision: spec.decision,
                    reason: spec.reason.clone(),
                    terminate: spec.terminate,
                    audit: self.is_audit(layer, spec.mode),
                });
            }
        }
        out
    }

    /// `rules[].identities`: globs over identity names (`*` matches any
    /// characters). `None` when one is invalid (reported).
    fn identity_globs(
        &mut self,
        layer: &PolicyLayer,
        globs: &[String],
        at: &str,
    ) -> Option<globset::GlobSet> {
        if globs.is_empty() {
            self.err(layer, at, "`identities` is empty, so the rule would apply to nobody", "list identities (token ids or JWT identities, globs allowed), or remove `identities` to apply the rule to every caller");
            return None;
        }
        let mut set = globset::GlobSetBuilder::new();
        for (i, g) in globs.iter().enumerate() {
            match globset::GlobBuilder::new(g)
                .literal_separator(false)
                .build()
            {
                Ok(glob) => {
                    set.add(glob);
                }
                Err(e) => {
                    self.err(
                        layer,
                        &format!("{at}.{i}"),
                        format!("invalid identity glob `{g}`: {e}"),
                        "write an identity such as `ci-bot`, or a glob such as `ci-*`",
                    );
                    return None;
                }
            }
        }
        match set.build() {
            Ok(s) => Some(s),
            Err(e) => {
                self.err(
                    layer,
                    at,
                    format!("invalid identity globs: {e}"),
                    "simplify the globs",
                );
                None
            }
        }
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
/// [`super::rules::compile_condition`]: `None` when no tool has it, or, when the rule names
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
