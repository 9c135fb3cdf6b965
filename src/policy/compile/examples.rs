//! A rule's own `examples:` (match / not_match), checked when the policy
//! loads: the same loop for call rules (rules.rs) and result rules
//! (results.rs), which differ only in what an example is and how it is
//! matched.

use serde::Serialize;

use super::{err_at, Compiler};
use crate::config::diagnostics::Diagnostics;
use crate::config::PolicyLayer;

impl Compiler {
    /// Whether `layer`'s examples can be skipped: a proven policy, or the
    /// embedded default, whose examples this crate's tests run (re-running
    /// them, one builds a 2 MB string, would only slow a cold start).
    pub(super) fn examples_trusted(&self, layer: &PolicyLayer) -> bool {
        self.proven || layer.file.text == crate::config::embedded_default_policy()
    }
}

/// Records an error at `{at}.examples.match.{j}` for each example in
/// `matching` that `matches` rejects, and at `{at}.examples.not_match.{j}`
/// for each in `not_match` it accepts. `what` names the rule in messages.
/// (Takes the diagnostics, not the compiler: callers still hold its tools.)
pub(super) fn check_examples<E: Serialize>(
    diags: &mut Diagnostics,
    layer: &PolicyLayer,
    at: &str,
    what: &str,
    (matching, not_match): (&[E], &[E]),
    matches: impl Fn(&E) -> bool,
) {
    for (kind, list, want) in [("match", matching, true), ("not_match", not_match, false)] {
        for (j, example) in list.iter().enumerate() {
            if matches(example) != want {
                let shown = serde_json::to_string(example).unwrap_or_default();
                let (msg, help) = example_failure(what, &shown, want);
                err_at(
                    diags,
                    layer,
                    &format!("{at}.examples.{kind}.{j}"),
                    msg,
                    help,
                );
            }
        }
    }
}

/// The error for an example that came out the wrong way, and its help.
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
