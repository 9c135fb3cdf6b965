//! After-rules on results (`results:`): conditions on what a call returned,
//! with the actions a matching rule applies — end the batch, mark the result
//! as an error (or not), add a note for the model, replace the content, or
//! redact it all.
//!
//! The conditions are [`super::rules::Cond`], the same evaluator as the
//! before-rules, with the result tests `output`, `is_error` and `exit_code`.
//! The executor's after-hook and the hooks' after-event both ask
//! [`ResultRules::first_match`] and apply the rule's [`ResultActions`]; no
//! front-end re-implements a rule. Rules are checked in file order (layers in
//! `extends` order) and the first match applies: a result is rewritten once,
//! so two rules never fight over its content.

use std::path::Path;

use serde_json::{Map, Value};

use super::rules::{Cond, ResultFacts};

/// What a matching result rule does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultActions {
    /// The result asks the batch to end (Pi's vote: the batch ends only when
    /// every result asks to).
    pub terminate: bool,
    /// The result's error state is set to this.
    pub is_error: Option<bool>,
    /// Text appended to the content the model sees.
    pub note: Option<String>,
    /// The content is replaced by this text.
    pub replace: Option<String>,
    /// The content becomes `[REDACTED:rule-id]`.
    pub redact_all: bool,
}

/// One compiled result rule.
#[derive(Clone, Debug)]
pub struct ResultRule {
    /// Its id.
    pub id: String,
    /// The tools it applies to.
    pub tools: Vec<String>,
    /// When it applies.
    pub cond: Cond,
    /// What it does.
    pub then: ResultActions,
}

/// Every layer's result rules, in order. Empty for most policies, and then
/// the after-hook does no work for them at all.
#[derive(Clone, Debug, Default)]
pub struct ResultRules {
    /// The rules.
    pub rules: Vec<ResultRule>,
}

impl ResultRules {
    /// Whether there are no result rules (the after-hook skips them).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule for `tool` whose condition holds for `args` and the
    /// result. `glob` tests on path arguments see the path relative to
    /// `workspace`, folded lexically (the call has run: what it named is
    /// what it touched, so nothing is resolved again).
    pub fn first_match(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        workspace: &Path,
        result: &ResultFacts<'_>,
    ) -> Option<&ResultRule> {
        if self.rules.is_empty() {
            return None;
        }
        let path_key = |_: &str, raw: &str| Some(workspace_relative(workspace, raw));
        self.rules
            .iter()
            .filter(|r| r.tools.iter().any(|t| t == tool))
            .find(|r| r.cond.eval_result(args, &path_key, result))
    }
}

impl ResultRule {
    /// The text the content is replaced by, when the rule replaces it:
    /// `redact_all` wins over `replace`, since hiding everything is the
    /// stricter of the two.
    pub fn replacement(&self) -> Option<String> {
        if self.then.redact_all {
            Some(format!("[REDACTED:{}]", self.id))
        } else {
            self.then.replace.clone()
        }
    }

    /// The result's error state once the rule applied.
    pub fn is_error(&self, was: bool) -> bool {
        self.then.is_error.unwrap_or(was)
    }

    /// The record kept in the result's `details` (under `resultRule`): which
    /// rule fired, what it did, and how big the content it replaced was.
    pub fn record(&self, original_bytes: usize) -> Value {
        let mut actions = Vec::new();
        let t = &self.then;
        for (on, name) in [
            (t.terminate, "terminate"),
            (t.is_error.is_some(), "is_error"),
            (t.note.is_some(), "note"),
            (t.replace.is_some() && !t.redact_all, "replace"),
            (t.redact_all, "redact_all"),
        ] {
            if on {
                actions.push(Value::from(name));
            }
        }
        let mut record = serde_json::json!({ "id": self.id, "actions": actions });
        if self.replacement().is_some() {
            record["replaced"] = Value::Bool(true);
            record["originalBytes"] = Value::from(original_bytes as u64);
        }
        record
    }
}

/// A path argument made workspace-relative and folded lexically
/// (`/ws/a/../b` and `./b` are both `b`), so `glob` tests match however the
/// path was written.
fn workspace_relative(workspace: &Path, raw: &str) -> String {
    let raw = raw.strip_prefix('@').unwrap_or(raw);
    let folded = crate::workspace::fold(&workspace.join(raw));
    match folded.strip_prefix(crate::workspace::fold(workspace)) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => folded.to_string_lossy().into_owned(),
    }
}
