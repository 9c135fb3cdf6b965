//! Secrets anywhere in a JSON value: what an agent CLI's tool output is.

use super::*;

#[test]
fn rules_matching_in_json_are_found_in_keys_and_values_at_any_depth_once_each() {
    let key = format!("ghp_{}", "a1B2".repeat(9));
    let aws = format!("AKIA{}", "Q7R2".repeat(4));
    let value = serde_json::json!({
        "stdout": ["clean", {"nested": format!("token={key}")}],
        (aws.clone()): 1,
        "again": key,
        "n": null
    });
    let found = defaults().matching_rules_in_json(&value);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().any(|id| id.starts_with("github")), "{found:?}");
    assert!(found.iter().any(|id| id.starts_with("aws")), "{found:?}");
    let clean = serde_json::json!({"a": ["b", {"c": "d"}], "e": 1});
    assert!(defaults().matching_rules_in_json(&clean).is_empty());
}

/// `redacted_json` is `redact_json` on a copy, borrowed exactly when that
/// changes nothing: secrets in values, in keys, at depth, and none.
#[test]
fn redacted_json_is_redact_json_on_a_copy_and_borrows_clean_values() {
    let key = format!("ghp_{}", "a1B2".repeat(9));
    let aws = format!("AKIA{}", "Q7R2".repeat(4));
    let values = [
        serde_json::json!({"text": "hello"}),
        serde_json::json!({"a": ["b", {"c": "d"}], "e": 1, "f": null, "g": true}),
        serde_json::json!("hello"),
        serde_json::json!(1.5),
        serde_json::json!({"stdout": ["clean", {"nested": format!("token={key}")}]}),
        serde_json::json!({(aws.clone()): 1, "z": "clean", "a": 2}),
        serde_json::json!([null, {"deep": [[format!("x {aws} y")]]}]),
        serde_json::json!(key.clone()),
    ];
    let mut borrowed = 0;
    for value in &values {
        let mut want = value.clone();
        let changed = defaults().redact_json(&mut want);
        let got = defaults().redacted_json(value);
        assert_eq!(*got, want);
        // The same bytes, key order included.
        assert_eq!(got.to_string(), want.to_string());
        assert_eq!(matches!(got, Cow::Borrowed(_)), !changed, "{value}");
        borrowed += usize::from(!changed);
    }
    assert_eq!(borrowed, 4);
}
