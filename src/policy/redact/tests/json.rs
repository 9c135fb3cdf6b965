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

/// A walk takes one scanner for all its strings: each string is redacted
/// as on its own, whatever the strings before it left (an open block, a
/// keyword window, a secret cut off at the end).
#[test]
fn a_walk_redacts_each_string_as_on_its_own() {
    fn each(r: &Redactor, value: &serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(r.redact(s).into_owned()),
            Value::Array(items) => Value::Array(items.iter().map(|v| each(r, v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (r.redact(k).into_owned(), each(r, v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let atoms = super::streaming::atoms();
    let strings: Vec<serde_json::Value> = atoms
        .iter()
        .flat_map(|a| {
            let half: String = a.chars().take(a.chars().count() / 2).collect();
            [a.clone(), "hello".to_string(), half]
        })
        .map(serde_json::Value::String)
        .collect();
    let keys: serde_json::Map<String, serde_json::Value> = atoms
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("{i} {a}"), serde_json::json!([a, {"k": a}])))
        .collect();
    let value = serde_json::json!({"strings": strings, "keys": keys, "n": 1});
    let r = defaults();
    let want = each(r, &value);
    assert_ne!(want, value);
    let mut got = value.clone();
    assert!(r.redact_json(&mut got));
    assert_eq!(got.to_string(), want.to_string());
    assert_eq!(r.redacted_json(&value).to_string(), want.to_string());
}
