//! The after-hook: what the policy does to a result before anyone sees it.
//!
//! Secrets are redacted from every text block, every string in `details`,
//! error messages and partial updates; a tool the policy lists under
//! `terminate.tools` ends the batch when it succeeds; then the first
//! matching result rule (`results:`) applies its actions to the redacted
//! result.
//!
//! Partial updates need more care than final results. A tool streams its
//! output as it comes, so an update may end in the *first half* of a secret
//! whose second half is still on its way; redacting the update as it stands
//! would show that half (Pi's observers see it). So an update shows only the
//! part of its text that is settled: up to its last newline, and never past
//! the start of an unfinished `-----BEGIN … PRIVATE KEY-----` block. The held
//! back tail appears in a later update or in the final result, redacted
//! whole.

use std::panic::AssertUnwindSafe;
use std::path::Path;

use serde_json::{Map, Value};

use super::events::ToolResult;
use crate::policy::results::ResultRule;
use crate::policy::rules::ResultFacts;
use crate::policy::{Policy, Redactor};
use crate::tools::{Content, ToolOutput};

/// Redacts a final result in place, applies the terminate rule, then the
/// result rules. `args` are the call's (validated) arguments and
/// `workspace` what its paths are relative to.
pub fn finalize(policy: &Policy, workspace: &Path, args: &Value, result: &mut ToolResult) {
    let redactor = policy.redactor.get();
    redact_content(redactor, &mut result.content);
    redact_value(redactor, &mut result.details);
    if !result.is_error && policy.terminate_tools.iter().any(|t| t == &result.name) {
        result.terminate = true;
    }
    // Most policies have no result rules: then the result is not even read.
    if !policy.results.is_empty() {
        apply_result_rules(policy, workspace, args, result);
    }
}

/// What the model reads instead when the result rules could not be checked.
pub const RESULT_RULES_FAILED: &str =
    "toolgate: the policy's result rules could not be checked, so this result is withheld.";

/// Finds the first result rule that matches and applies it. Fails closed: if
/// checking panics, the result becomes an error that shows none of the output.
fn apply_result_rules(policy: &Policy, workspace: &Path, args: &Value, result: &mut ToolResult) {
    let empty = Map::new();
    let args = args.as_object().unwrap_or(&empty);
    let text = result.text();
    let reports_exit_code = policy
        .tools
        .get(&result.name)
        .is_some_and(|t| t.reports_exit_code());
    let facts = ResultFacts {
        text: &text,
        is_error: result.is_error,
        exit_code: reports_exit_code
            .then(|| crate::tools::reported_exit_code(&text, result.is_error))
            .flatten(),
    };
    let found = std::panic::catch_unwind(AssertUnwindSafe(|| {
        policy
            .results
            .first_match(&result.name, args, workspace, &facts)
    }));
    match found {
        Ok(Some(rule)) => apply(rule, text.len(), result),
        Ok(None) => {}
        Err(_) => {
            result.content = vec![Content::text(RESULT_RULES_FAILED)];
            result.details = serde_json::json!({});
            result.is_error = true;
        }
    }
}

/// Applies one rule's actions to a result.
fn apply(rule: &ResultRule, original_bytes: usize, result: &mut ToolResult) {
    let record = rule.record(original_bytes);
    if let Some(replacement) = rule.replacement() {
        result.content = vec![Content::text(replacement)];
        if rule.then.redact_all {
            // Details may carry the output too (a full-output file's path):
            // a result that is hidden keeps only the record.
            result.details = serde_json::json!({});
        }
    }
    if let Some(note) = &rule.then.note {
        result.content.push(Content::text(note.clone()));
    }
    result.is_error = rule.is_error(result.is_error);
    result.terminate |= rule.then.terminate;
    match result.details.as_object_mut() {
        Some(details) => {
            details.insert("resultRule".to_string(), record);
        }
        None => result.details = serde_json::json!({ "resultRule": record }),
    }
    result.result_rule = Some(rule.id.clone());
}

/// A partial update as observers may see it: settled text only, redacted.
pub fn redact_update(policy: &Policy, mut partial: ToolOutput) -> ToolOutput {
    let redactor = policy.redactor.get();
    for block in &mut partial.content {
        if let Content::Text { text } = block {
            let settled = &text[..settled_len(text)];
            *text = redactor.redact(settled).into_owned();
        }
    }
    redact_value(redactor, &mut partial.details);
    partial
}

/// How much of a streamed text can be shown without risking half a secret.
fn settled_len(text: &str) -> usize {
    let mut end = text.rfind('\n').map_or(0, |i| i + 1);
    // A private key block spans lines: hold back from an unterminated BEGIN.
    if let Some(begin) = text[..end].rfind("-----BEGIN") {
        if !text[begin..end].contains("-----END") {
            end = begin;
        }
    }
    end
}

fn redact_content(redactor: &Redactor, content: &mut [Content]) {
    for block in content {
        match block {
            Content::Text { text } => {
                if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                    *text = clean;
                }
            }
            Content::Resource { resource } => redact_value(redactor, resource),
            Content::Image { .. } | Content::Audio { .. } => {}
        }
    }
}

/// Redacts every string (and key) in a JSON value.
pub fn redact_value(redactor: &Redactor, value: &mut Value) {
    redactor.redact_json(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_text_stops_at_the_last_newline() {
        assert_eq!(settled_len("abc"), 0);
        assert_eq!(settled_len("abc\nde"), 4);
        assert_eq!(settled_len("abc\n"), 4);
    }

    #[test]
    fn an_open_private_key_block_is_held_back() {
        let text = "ok\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n";
        assert_eq!(settled_len(text), 3);
        let closed = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nx";
        assert_eq!(settled_len(closed), closed.len() - 1);
    }
}
