//! `rules:` compiled: each argument rule's condition type-checked against
//! its tools' schemas, its regexes compiled (now, or on first use for a
//! proven policy), its identity globs, and its own examples checked.

use std::collections::HashSet;

use serde_json::Value;

use super::examples::check_examples;
use super::{arg_types_of, err_at, lexical_relative, Compiler};
use crate::config::PolicyLayer;
use crate::policy::rules::{expand_placeholders, Rule, RuleSet};
use crate::policy::rules_compile::compile_condition_with;
use crate::policy::tools::ToolInfo;

impl Compiler {
    pub(super) fn rules(&mut self, layers: &[PolicyLayer]) -> RuleSet {
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
                if let Some(ex) = spec
                    .examples
                    .as_ref()
                    .filter(|_| !self.examples_trusted(layer))
                {
                    check_examples(
                        &mut self.diags,
                        layer,
                        &at,
                        &format!("rule `{}`", spec.id),
                        (&ex.matching, &ex.not_match),
                        |example| {
                            expand_placeholders(&Value::Object(example.clone()))
                                .as_object()
                                .is_some_and(|a| cond.eval(a, &lexical_key))
                        },
                    );
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
    pub(super) fn identity_globs(
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
}
