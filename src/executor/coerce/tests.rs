//! Every row of Pi 1.6's coercion table, plus the cases around it.

use serde_json::{json, Value};

use super::coerce;

/// Coerces `{"v": input}` against an object schema whose property `v` has
/// `prop` (required, so pass 1 leaves nulls alone) and returns `v`, or
/// `None` when the property was dropped.
fn coerce_prop(prop: Value, input: Value) -> Option<Value> {
    let schema = json!({"type": "object", "required": ["v"], "properties": {"v": prop}});
    coerce(&schema, json!({ "v": input })).get("v").cloned()
}

fn one(prop: Value, input: Value) -> Value {
    coerce_prop(prop, input).expect("property kept")
}

#[test]
fn number_rows() {
    let n = json!({"type": "number"});
    assert_eq!(one(n.clone(), json!("42")), json!(42));
    assert_eq!(one(n.clone(), json!(true)), json!(1));
    assert_eq!(one(n.clone(), json!(null)), json!(0));
    assert_eq!(one(n.clone(), json!("2.5")), json!(2.5));
    // Not a number: left alone for validation to report.
    assert_eq!(one(n, json!("forty")), json!("forty"));
}

#[test]
fn integer_rows() {
    let i = json!({"type": "integer"});
    assert_eq!(one(i.clone(), json!("42")), json!(42));
    assert_eq!(one(i.clone(), json!("42.1")), json!(42));
    assert_eq!(one(i, json!(false)), json!(0));
}

#[test]
fn boolean_rows() {
    let b = json!({"type": "boolean"});
    for (input, want) in [
        (json!("true"), true),
        (json!("false"), false),
        (json!(1), true),
        (json!(0), false),
        (json!("1"), true),
        (json!("0"), false),
        (json!("TRUE"), true),
    ] {
        assert_eq!(one(b.clone(), input.clone()), json!(want), "{input}");
    }
    // "yes" is not a boolean: it stays, and validation fails.
    assert_eq!(one(b, json!("yes")), json!("yes"));
}

#[test]
fn string_rows() {
    let s = json!({"type": "string"});
    assert_eq!(one(s.clone(), json!(true)), json!("true"));
    assert_eq!(one(s.clone(), json!(42)), json!("42"));
    assert_eq!(one(s.clone(), json!(null)), json!("null"));
    assert_eq!(one(s, json!(2.5)), json!("2.5"));
}

#[test]
fn null_rows() {
    let n = json!({"type": "null"});
    for input in [json!(""), json!(0), json!(false), json!("null")] {
        assert_eq!(one(n.clone(), input.clone()), Value::Null, "{input}");
    }
    assert_eq!(one(n, json!("x")), json!("x"));
}

#[test]
fn type_arrays_prefer_a_matching_member() {
    assert_eq!(
        one(json!({"type": ["number", "string"]}), json!("1")),
        json!("1")
    );
    assert_eq!(
        one(json!({"type": ["boolean", "number"]}), json!("1")),
        json!(1)
    );
}

#[test]
fn any_of_number_or_null() {
    let u = json!({"anyOf": [{"type": "number"}, {"type": "null"}]});
    assert_eq!(one(u.clone(), json!(null)), Value::Null);
    assert_eq!(one(u, json!("42")), json!(42));
}

#[test]
fn arrays_convert_items_and_wrap_single_values() {
    let nums = json!({"type": "array", "items": {"type": "number"}});
    assert_eq!(one(nums, json!(["1", "2"])), json!([1, 2]));
    let objs = json!({"type": "array", "items": {"type": "object",
        "properties": {"oldText": {"type": "string"}}}});
    assert_eq!(
        one(objs, json!({"oldText": "a"})),
        json!([{"oldText": "a"}])
    );
}

#[test]
fn optional_nulls_are_dropped() {
    let schema = json!({"type": "object", "required": ["path"], "properties": {
        "path": {"type": "string"},
        "n": {"type": "number"}, "s": {"type": "string"}, "b": {"type": "boolean"},
        "maybe": {"type": ["number", "null"]}
    }});
    let out = coerce(
        &schema,
        json!({"path": "a", "n": null, "s": null, "b": null, "maybe": null}),
    );
    // Dropped where null is not allowed; kept where the schema takes it.
    assert_eq!(out, json!({"path": "a", "maybe": null}));
}

#[test]
fn required_null_is_converted_not_dropped() {
    assert_eq!(
        coerce_prop(json!({"type": "string"}), json!(null)),
        Some(json!("null"))
    );
}

#[test]
fn extra_properties_are_kept() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
    assert_eq!(
        coerce(&schema, json!({"a": "1", "extra": "x"})),
        json!({"a": 1, "extra": "x"})
    );
}

#[test]
fn nested_properties_and_refs_are_followed() {
    let schema = json!({
        "type": "object",
        "$defs": {"edit": {"type": "object", "properties": {"line": {"type": "integer"}}}},
        "properties": {"edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}}}
    });
    assert_eq!(
        coerce(&schema, json!({"edits": [{"line": "7"}]})),
        json!({"edits": [{"line": 7}]})
    );
}

#[test]
fn enums_and_consts_take_the_converted_member() {
    assert_eq!(one(json!({"enum": [1, 2, 3]}), json!("2")), json!(2));
    assert_eq!(one(json!({"const": true}), json!("true")), json!(true));
    assert_eq!(one(json!({"enum": ["a"]}), json!("b")), json!("b"));
}

#[test]
fn a_recursive_schema_terminates() {
    let schema = json!({"$ref": "#"});
    assert_eq!(coerce(&schema, json!({"a": 1})), json!({"a": 1}));
    let tree =
        json!({"type": "object", "properties": {"child": {"$ref": "#"}, "n": {"type": "number"}}});
    assert_eq!(
        coerce(&tree, json!({"child": {"child": {"n": "3"}}})),
        json!({"child": {"child": {"n": 3}}})
    );
}
