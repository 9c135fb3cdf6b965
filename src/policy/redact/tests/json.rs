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
