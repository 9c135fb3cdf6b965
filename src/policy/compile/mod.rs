//! From loaded files to one [`Policy`], with every problem reported
//! at its `FILE:LINE:COL`.
//!
//! Layers combine deny-overrides: lists are unioned (a deny anywhere wins over
//! an allow anywhere, because deciding takes the strictest finding), scalar
//! decisions take the strictest layer's value, limits take the smallest, and
//! each layer's `roots` must all contain a path.

mod auth;
mod command_lists;
mod examples;
mod exec;
mod limits;
mod manifests;
mod redact;
mod results;
mod rules;
mod sandbox;
mod servers;

use limits::compile_limits;
use manifests::compile_tools;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::paths::{PathRules, RootSet};
use super::rules_compile::Regexes;
use super::tools::{ToolInfo, ToolSet};
use super::{Policy, RuleOrigin, UnknownToolDecision};
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::parse::display_path;
use crate::config::policy_file::Mode;
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
    /// Do not record where each rule is written
    /// ([`Policy::rule_origin`](crate::policy::Policy::rule_origin), read by
    /// `explain` only): for a process that decides and exits (a hook).
    /// Decisions and reasons do not depend on it.
    pub skip_origins: bool,
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
        skip_origins: options.skip_origins,
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
    /// [`CompileOptions::skip_origins`].
    skip_origins: bool,
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
        if self.skip_origins {
            return;
        }
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
            // A plain glob cannot fail to compile (`is_plain_glob`), so it is
            // not compiled just to be checked; the others are.
            let checked = match crate::workspace::is_plain_glob(g) {
                true => Ok(()),
                false => crate::workspace::compile_glob(g).map(drop),
            };
            match checked {
                Ok(()) => {
                    if !self.skip_origins {
                        self.origin(&[path, "[", g, "]"].concat(), layer, &format!("{path}.{i}"));
                    }
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
/// [`super::rules_compile::compile_condition_with`]: `None` when no tool has it, or, when the rule names
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

    fn compile_text(text: &str, options: &CompileOptions) -> Result<Policy, Diagnostics> {
        let loaded = crate::config::load_text("p.yaml", text, std::path::Path::new("."), None)?;
        compile(&loaded, options)
    }

    #[test]
    fn skipping_origins_changes_nothing_else() {
        let text = format!(
            "{}\nrules:\n  - {{ id: big, tools: [write], when: {{ arg: content, larger_than: 1MB }}, decision: ask, reason: r }}\n",
            "version: 1\nextends: [\"builtin:default\"]\npaths:\n  deny: [\"**/*.{pem,crt}\"]\ncommands:\n  deny: [\"git push -f\", { pattern: \"rm -r\", unless: { flags: [\"-i\"] } }]"
        );
        let full = compile_text(&text, &CompileOptions::default()).unwrap();
        let skip = CompileOptions {
            skip_origins: true,
            ..CompileOptions::default()
        };
        let mut lean = compile_text(&text, &skip).unwrap();
        assert!(full.rule_origin("commands.deny[git push -f]").is_some());
        assert!(full.rule_origin("paths.deny[**/*.{pem,crt}]").is_some());
        assert!(full.rule_origin("big").is_some());
        assert!(lean.origins.is_empty());
        lean.origins = full.origins.clone();
        // Field by field (the tool set holds hash maps, printed in no fixed
        // order).
        for (a, b) in [
            (
                format!("{:?}", lean.commands),
                format!("{:?}", full.commands),
            ),
            (format!("{:?}", lean.paths), format!("{:?}", full.paths)),
            (format!("{:?}", lean.rules), format!("{:?}", full.rules)),
            (format!("{:?}", lean.results), format!("{:?}", full.results)),
            (format!("{:?}", lean.limits), format!("{:?}", full.limits)),
            (format!("{:?}", lean.sandbox), format!("{:?}", full.sandbox)),
            (
                format!("{:?}", lean.warnings),
                format!("{:?}", full.warnings),
            ),
            (lean.version.clone(), full.version.clone()),
        ] {
            assert_eq!(a, b);
        }
    }

    #[test]
    fn every_glob_that_is_not_plain_is_still_checked() {
        for (glob, ok) in [
            ("**/*.pem", true),
            ("src/**", true),
            ("**/*.{pem,key}", true),
            ("[a-z]*.rs", true),
            ("[unclosed", false),
            ("{a,b", false),
            ("a[", false),
        ] {
            for list in ["deny", "read_only"] {
                let text = format!("version: 1\npaths:\n  {list}: [\"x/**\", {glob:?}]\n");
                for skip_origins in [false, true] {
                    let options = CompileOptions {
                        skip_origins,
                        ..CompileOptions::default()
                    };
                    match compile_text(&text, &options) {
                        Ok(_) => assert!(ok, "{glob} in {list} compiled"),
                        Err(d) => {
                            assert!(!ok, "{glob} in {list}: {}", d.to_human());
                            let shown = d.to_human();
                            assert!(shown.contains(&format!("invalid glob `{glob}`")), "{shown}");
                            assert!(shown.contains("p.yaml:3:"), "{shown}");
                        }
                    }
                }
            }
        }
    }
}
