//! The built-in rule set that `defaults: true` turns on: well-known
//! credential formats, written from each provider's published token shape.
//!
//! Conventions, which the tests in `tests/builtin*.rs` hold every rule to:
//! - every repetition has an upper bound that fits the format (no `+`), so
//!   a rule's window and a stream's hold-back stay small;
//! - keywords are literal parts of every match, three bytes or more where the
//!   format has one, so the prefilter can skip text without them;
//! - specific formats come before generic rules (an assignment, a URL
//!   password), so where both find a secret the specific id labels it.

use super::rules::{AllowlistSpec, Continuation, RedactRuleSpec, SecretGroup};

mod cloud;
mod services;
mod structural;
mod vcs_chat;

/// A rule of the built-in set.
pub(crate) fn spec(
    id: &str,
    regex: &str,
    keywords: &[&str],
    secret_group: usize,
) -> RedactRuleSpec {
    RedactRuleSpec {
        id: id.to_string(),
        regex: regex.to_string(),
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
        secret_group: SecretGroup::from(secret_group),
        ..RedactRuleSpec::default()
    }
}

/// An allowlist of regexes matched against the secret.
fn allow<S: AsRef<str>>(regexes: &[S]) -> AllowlistSpec {
    AllowlistSpec {
        regexes: regexes.iter().map(|r| r.as_ref().to_string()).collect(),
        ..AllowlistSpec::default()
    }
}

/// A block rule: `regex` opens the block, which then goes on as `continuation` says.
fn block(id: &str, regex: &str, keywords: &[&str], continuation: Continuation) -> RedactRuleSpec {
    RedactRuleSpec {
        continuation: Some(continuation),
        ..spec(id, regex, keywords, 0)
    }
}

/// The built-in rules that `defaults: true` turns on, in the order they are tried.
pub fn default_rules() -> Vec<RedactRuleSpec> {
    let mut rules = Vec::new();
    rules.extend(cloud::rules());
    rules.extend(vcs_chat::rules());
    rules.extend(services::rules());
    rules.extend(structural::rules());
    rules
}
