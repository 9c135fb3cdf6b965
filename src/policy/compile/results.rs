//! Compiling `results:` (after-rules on results): ids, tools, the condition
//! through the same [`crate::policy::rules_compile::compile_condition_with`] as `rules:`, the actions, and the
//! examples checked at load.

use std::collections::HashSet;

use serde_json::Value;

use super::examples::check_examples;
use super::{arg_types_of, err_at, lexical_relative, Compiler};
use crate::config::results_file::{ResultActionsSpec, ResultExample, ResultRuleSpec};
use crate::config::PolicyLayer;
use crate::policy::results::{ResultActions, ResultRule, ResultRules};
use crate::policy::rules::{expand_placeholders, Cond, ResultFacts, ResultScope};
use crate::policy::rules_compile::compile_condition_with;
use crate::policy::tools::ToolInfo;

impl Compiler {
    pub(super) fn results(&mut self, layers: &[PolicyLayer]) -> ResultRules {
        let mut out = ResultRules::default();
        for layer in layers {
            let mut ids = HashSet::new();
            for (i, spec) in layer.policy.results.iter().enumerate() {
                if let Some(rule) = self.result_rule(layer, &format!("results.{i}"), spec, &mut ids)
                {
                    out.rules.push(rule);
                }
            }
        }
        out
    }

    fn result_rule(
        &mut self,
        layer: &PolicyLayer,
        at: &str,
        spec: &ResultRuleSpec,
        ids: &mut HashSet<String>,
    ) -> Option<ResultRule> {
        if spec.id.trim().is_empty() {
            self.err(
                layer,
                &format!("{at}.id"),
                "result rule id is empty",
                "give the rule a short unique id such as `stop-on-failed-tests`",
            );
            return None;
        }
        if !ids.insert(spec.id.clone()) {
            self.err(
                layer,
                &format!("{at}.id"),
                format!("duplicate result rule id `{}`", spec.id),
                "give every result rule in a file its own id",
            );
        }
        let then = self.actions(layer, at, spec);
        let named = spec
            .tools
            .as_ref()
            .map(|list| self.check_tool_names(layer, list, &format!("{at}.tools")));
        if named.as_ref().is_some_and(Vec::is_empty) {
            return None; // every name was unknown: already reported
        }
        let candidates: Vec<&ToolInfo> = match &named {
            Some(list) => list.iter().filter_map(|n| self.tools.get(n)).collect(),
            None => self.tools.tools.values().collect(),
        };
        // Named tools must all report an exit code for `exit_code` to mean
        // anything; without `tools:` the rule just applies to those that do.
        let without_exit_code: Vec<String> = match &named {
            Some(_) => candidates
                .iter()
                .filter(|t| !t.reports_exit_code())
                .map(|t| t.name().to_string())
                .collect(),
            None => Vec::new(),
        };
        let arg_types = arg_types_of(&candidates, named.is_some());
        let scope = ResultScope {
            without_exit_code: &without_exit_code,
        };
        let mut errors = Vec::new();
        let cond = compile_condition_with(
            &spec.when,
            &format!("{at}.when"),
            &arg_types,
            Some(scope),
            self.regexes(),
            &mut errors,
        );
        for (path, message, help) in errors {
            let message = format!("result rule `{}`: {message}", spec.id);
            err_at(&mut self.diags, layer, &path, message, help);
        }
        let cond = cond?;
        let args = cond.args();
        let exit = cond.reads_exit_code();
        let tools: Vec<String> = candidates
            .iter()
            .filter(|t| args.iter().all(|a| t.arg_types(a).is_some()))
            .filter(|t| !exit || t.reports_exit_code())
            .map(|t| t.name().to_string())
            .collect();
        if tools.is_empty() {
            let what = if exit {
                "no bash or exec tool has all of its arguments".to_string()
            } else {
                format!("no manifest has all of its arguments ({})", args.join(", "))
            };
            err_at(
                &mut self.diags,
                layer,
                &format!("{at}.when"),
                format!("result rule `{}` applies to no tool: {what}", spec.id),
                "add `tools:` or use arguments the tools have",
            );
            return None;
        }
        if let Some(ex) = spec
            .examples
            .as_ref()
            .filter(|_| !self.examples_trusted(layer))
        {
            check_examples(
                &mut self.diags,
                layer,
                at,
                &format!("result rule `{}`", spec.id),
                (&ex.matching, &ex.not_match),
                |example| example_matches(&cond, example),
            );
        }
        Some(ResultRule {
            id: spec.id.clone(),
            tools,
            cond,
            then: then?,
        })
    }

    fn actions(
        &mut self,
        layer: &PolicyLayer,
        at: &str,
        spec: &ResultRuleSpec,
    ) -> Option<ResultActions> {
        let ResultActionsSpec {
            terminate,
            is_error,
            note,
            replace,
            redact_all,
        } = &spec.then;
        let at = format!("{at}.then");
        let id = &spec.id;
        if !terminate && is_error.is_none() && note.is_none() && replace.is_none() && !redact_all {
            self.err(
                layer,
                &at,
                format!("result rule `{id}` does nothing: `then` has no action"),
                "give at least one of `terminate: true`, `is_error: true`, `note: TEXT`, `replace: TEXT`, `redact_all: true`",
            );
            return None;
        }
        if replace.is_some() && *redact_all {
            self.err(
                layer,
                &format!("{at}.replace"),
                format!("result rule `{id}` both replaces and redacts the content"),
                "keep one: `redact_all: true` shows `[REDACTED:id]`, `replace: TEXT` shows TEXT",
            );
            return None;
        }
        for (key, text) in [("note", note), ("replace", replace)] {
            if text.as_deref().is_some_and(|t| t.trim().is_empty()) {
                self.err(
                    layer,
                    &format!("{at}.{key}"),
                    format!("result rule `{id}`: `{key}` is empty"),
                    format!("write the text the model should read, or remove `{key}`"),
                );
                return None;
            }
        }
        Some(ResultActions {
            terminate: *terminate,
            is_error: *is_error,
            note: note.clone(),
            replace: replace.clone(),
            redact_all: *redact_all,
        })
    }
}

/// Whether an example call and its result satisfy `cond`. An example's
/// result is an error when it says so, or when it gives a non-zero exit code.
fn example_matches(cond: &Cond, example: &ResultExample) -> bool {
    let args = expand_placeholders(&Value::Object(example.args.clone()));
    let output = expand_placeholders(&Value::String(example.output.clone()));
    let facts = ResultFacts::written(
        output.as_str().unwrap_or_default(),
        example.is_error,
        example.exit_code,
    );
    let key = |_: &str, raw: &str| Some(lexical_relative(raw));
    args.as_object()
        .is_some_and(|a| cond.eval_result(a, &key, &facts))
}
