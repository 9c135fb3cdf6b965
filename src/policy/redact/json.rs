//! Redaction of JSON values: every string, object keys included, for tool
//! `details`, `structuredContent` and decision-log arguments. One scanner
//! serves a whole walk (taken from the redactor's kept scanners, mod.rs).

use std::borrow::Cow;

use super::scan::Scanner;
use super::Redactor;

impl Redactor {
    /// Ids of the rules that match in any string of `value` (object keys
    /// too, at any depth), each once, in the order first found.
    pub fn matching_rules_in_json(&self, value: &serde_json::Value) -> Vec<String> {
        fn text(r: &Redactor, s: &str, found: &mut Vec<String>) {
            for id in r.matching_rules(s) {
                if !found.iter().any(|f| f == id) {
                    found.push(id.to_string());
                }
            }
        }
        fn walk(r: &Redactor, value: &serde_json::Value, found: &mut Vec<String>) {
            use serde_json::Value;
            match value {
                Value::String(s) => text(r, s, found),
                Value::Array(items) => items.iter().for_each(|v| walk(r, v, found)),
                Value::Object(map) => {
                    for (k, v) in map {
                        text(r, k, found);
                        walk(r, v, found);
                    }
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        let mut found = Vec::new();
        walk(self, value, &mut found);
        found
    }

    /// Redacts every string in `value` in place — object keys too — for tool
    /// `details` and decision-log arguments. Returns whether anything changed.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> bool {
        self.with_scanner(|scanner| self.redact_json_in(scanner, value))
    }

    fn redact_json_in(&self, scanner: &mut Scanner, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        match value {
            Value::String(s) => match self.redact_in(scanner, s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(redacted) => {
                    *s = redacted;
                    true
                }
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, v| {
                self.redact_json_in(scanner, v) | changed
            }),
            Value::Object(map) => {
                let mut changed = false;
                for v in map.values_mut() {
                    changed |= self.redact_json_in(scanner, v);
                }
                if map
                    .keys()
                    .any(|k| matches!(self.redact_in(scanner, k), Cow::Owned(_)))
                {
                    // Rebuilt rather than renamed in place, to keep the key order.
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.redact_in(scanner, &k).into_owned(), v);
                    }
                    changed = true;
                }
                changed
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// `value` with every string redacted as [`Redactor::redact_json`]
    /// does it, borrowed (not copied) when no string — object keys too —
    /// holds a secret, which is nearly always.
    pub fn redacted_json<'a>(&self, value: &'a serde_json::Value) -> Cow<'a, serde_json::Value> {
        fn clean(r: &Redactor, s: &mut Scanner, value: &serde_json::Value) -> bool {
            use serde_json::Value;
            match value {
                Value::String(text) => r.spans_in(s, text).is_empty(),
                Value::Array(items) => items.iter().all(|v| clean(r, s, v)),
                Value::Object(map) => map
                    .iter()
                    .all(|(k, v)| r.spans_in(s, k).is_empty() && clean(r, s, v)),
                Value::Null | Value::Bool(_) | Value::Number(_) => true,
            }
        }
        if self.with_scanner(|s| clean(self, s, value)) {
            return Cow::Borrowed(value);
        }
        let mut owned = value.clone();
        self.redact_json(&mut owned);
        Cow::Owned(owned)
    }
}
