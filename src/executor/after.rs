//! The after-hook: what the policy does to a result before anyone sees it.
//!
//! Secrets are redacted from every text block, every string in `details`,
//! error messages and partial updates; a tool the policy lists under
//! `terminate.tools` ends the batch when it succeeds.
//!
//! Partial updates need more care than final results. A tool streams its
//! output as it comes, so an update may end in the *first half* of a secret
//! whose second half is still on its way; redacting the update as it stands
//! would show that half (Pi's observers see it). So an update shows only the
//! part of its text that is settled: up to its last newline, and never past
//! the start of an unfinished `-----BEGIN … PRIVATE KEY-----` block. The held
//! back tail appears in a later update or in the final result, redacted
//! whole.

use serde_json::Value;

use super::events::ToolResult;
use crate::policy::{Policy, Redactor};
use crate::tools::{Content, ToolOutput};

/// Redacts a final result in place and applies the terminate rule.
pub fn finalize(policy: &Policy, result: &mut ToolResult) {
    let redactor = policy.redactor.get();
    redact_content(redactor, &mut result.content);
    redact_value(redactor, &mut result.details);
    if !result.is_error && policy.terminate_tools.iter().any(|t| t == &result.name) {
        result.terminate = true;
    }
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
