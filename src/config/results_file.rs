//! The `results:` section of a policy file: after-rules that decide from what
//! a call returned, as serde structs.
//!
//! Their conditions are the argument conditions of `rules:`
//! ([`Condition`]), which include the result tests `output`, `is_error`
//! and `exit_code`; what they mean is decided by [`crate::policy::results`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::Condition;

/// One after-rule: when a call's result matches `when`, `then` applies.
/// Rules are checked in order after redaction; the first match applies.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultRuleSpec {
    /// Unique id, reported in the result's details, the decision log and metrics.
    pub id: String,
    /// Tools the rule applies to; every tool that has the rule's arguments
    /// (and reports what its result tests read) when omitted.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The condition on the call's arguments and result.
    pub when: Condition,
    /// What a matching result gets.
    pub then: ResultActionsSpec,
    /// Calls with results that must (`match`) and must not (`not_match`)
    /// satisfy `when`; checked at load, a failing example fails the file.
    #[serde(default)]
    pub examples: Option<ResultExamples>,
}

/// What a matching result rule does. At least one action must be given.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultActionsSpec {
    /// This result asks the batch to end (it ends only if every result of the
    /// batch asks to, as in Pi).
    #[serde(default)]
    pub terminate: bool,
    /// The result is marked as an error (`true`) or as a success (`false`).
    #[serde(default)]
    pub is_error: Option<bool>,
    /// Text appended to the content the model sees.
    #[serde(default)]
    pub note: Option<String>,
    /// The content is replaced by this text; `details` record that it was.
    #[serde(default)]
    pub replace: Option<String>,
    /// The content becomes `[REDACTED:rule-id]` and `details` only record that.
    #[serde(default)]
    pub redact_all: bool,
}

/// A result rule's examples.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultExamples {
    /// Calls and results the rule must match.
    #[serde(default, rename = "match")]
    pub matching: Vec<ResultExample>,
    /// Calls and results the rule must not match.
    #[serde(default)]
    pub not_match: Vec<ResultExample>,
}

/// One example call with the result it returned.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultExample {
    /// The call's arguments (`"<2 MB>"` placeholders expand to strings of that size).
    #[serde(default)]
    pub args: serde_json::Map<String, serde_json::Value>,
    /// The result's text (`"<30 KB>"` expands to that many bytes).
    #[serde(default)]
    pub output: String,
    /// Whether the result is an error (default: false, or true when
    /// `exit_code` is given and not 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The command's exit code (bash and exec tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}
