//! The argument fast path pinned to the full path: coercion skipped only
//! where it would change nothing, and `check_call_arguments` giving the same
//! answer (the same arguments, the same error text) either way.

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::coerce::{coerce, Flat};
use super::validate::{ArgumentCheck, ArgumentSchema};
use crate::config::manifest::{Manifest, PrepareStep};
use crate::policy::Limits;

/// Both paths' answers for one call; panics when they differ, and when the
/// fast path's "untouched" is wrong.
fn same_answer(schema: &Value, steps: &[PrepareStep], args: &Value) {
    let compiled = ArgumentSchema::compile(schema).expect("schema compiles");
    let limits = Limits::default();
    let check = ArgumentCheck {
        tool: "t",
        steps,
        schema_value: schema,
        schema: &compiled,
        limits: &limits,
    };
    let fast = check.run(Cow::Borrowed(args), true);
    let full = check.run(Cow::Owned(args.clone()), false);
    assert_eq!(fast, full, "schema {schema}, args {args}");
    if Flat::of(schema).is_some_and(|f| f.leaves_alone(args)) {
        assert_eq!(
            &coerce(schema, args.clone()),
            args,
            "said untouched: schema {schema}, args {args}"
        );
    }
}

fn leaves_alone(schema: &Value, args: &Value) -> bool {
    Flat::of(schema).is_some_and(|f| f.leaves_alone(args))
}

/// Pi's coercion table (docs: pi-tool-pipeline.md), each row's schema as a
/// property, required and optional.
fn table_schemas() -> Vec<Value> {
    let props = [
        json!({"type": "number"}),
        json!({"type": "integer"}),
        json!({"type": "boolean"}),
        json!({"type": "string"}),
        json!({"type": "null"}),
        json!({"type": ["number", "string"]}),
        json!({"type": ["boolean", "number"]}),
        json!({"anyOf": [{"type": "number"}, {"type": "null"}]}),
        json!({"type": "array", "items": {"type": "number"}}),
        json!({"type": "array", "items": {"type": "object",
            "properties": {"oldText": {"type": "string"}}}}),
        json!({"enum": [1, 2, 3]}),
        json!({"const": true}),
        json!({"description": "anything"}),
        json!({}),
    ];
    let mut schemas = Vec::new();
    for prop in props {
        for required in [json!([]), json!(["v"])] {
            schemas.push(json!({"type": "object", "required": required,
                "properties": {"v": prop.clone()}}));
        }
    }
    schemas
}

/// The inputs of the table, and the cases around them.
fn table_inputs() -> Vec<Value> {
    vec![
        json!("42"),
        json!("42.1"),
        json!(true),
        json!(false),
        json!(null),
        json!(1),
        json!(0),
        json!(-3),
        json!(2.5),
        json!(2.0),
        json!(9_007_199_254_740_991u64),
        json!(9_007_199_254_740_993u64),
        json!(-9_007_199_254_740_993i64),
        json!(u64::MAX),
        json!("1"),
        json!("0"),
        json!("TRUE"),
        json!("yes"),
        json!(""),
        json!("null"),
        json!("hello"),
        json!(["1", "2"]),
        json!([1, 2]),
        json!({"oldText": "a"}),
        json!({"a": null}),
    ]
}

/// Schemas as upstream servers send them: the Python SDK's (titles) and
/// zod's (`additionalProperties: false`, `$schema`).
fn upstream_schemas() -> Vec<Value> {
    vec![
        json!({"type": "object", "title": "echoArguments", "required": ["text"],
            "properties": {"text": {"type": "string", "title": "Text"}}}),
        json!({"type": "object", "properties": {"message": {"type": "string",
            "description": "Message to echo"}}, "required": ["message"],
            "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"}),
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer",
            "minimum": 0}, "flag": {"type": "boolean", "default": false}, "any": {"title": "Any"}},
            "required": ["a"]}),
        // The filesystem server's edit_file: an array of objects.
        json!({"type": "object", "properties": {"path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"], "additionalProperties": false}},
            "dryRun": {"type": "boolean", "default": false}},
            "required": ["path", "edits"], "additionalProperties": false}),
        // A GitHub-style search: enums, string arrays, a nested object.
        json!({"type": "object", "properties": {
            "state": {"type": "string", "enum": ["open", "closed"]},
            "labels": {"type": "array", "items": {"type": "string"}},
            "sort": {"enum": ["created", "updated", null]},
            "page": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "raw": {"type": "array"}}}),
    ]
}

fn builtin_manifests() -> Vec<Manifest> {
    crate::config::embedded_manifests()
        .map(|(_, text)| toml::from_str(text).expect("embedded manifest"))
        .collect()
}

#[test]
fn the_usual_calls_take_the_fast_path() {
    let [python, zod, mixed, edit, search] = <[Value; 5]>::try_from(upstream_schemas()).unwrap();
    assert!(leaves_alone(&python, &json!({"text": "hello"})));
    assert!(leaves_alone(
        &edit,
        &json!({"path": "a", "edits": [{"oldText": "x", "newText": "y"}], "dryRun": true})
    ));
    assert!(leaves_alone(
        &search,
        &json!({"state": "open", "labels": ["bug"], "sort": null, "page": {"size": 5},
            "raw": [null, {"x": 1}]})
    ));
    assert!(leaves_alone(
        &zod,
        &json!({"message": "hi", "extra": [null]})
    ));
    assert!(leaves_alone(
        &mixed,
        &json!({"a": 1.5, "b": 3, "flag": true, "any": {"x": null}})
    ));
    let read = builtin_manifests()
        .into_iter()
        .find(|m| m.name == "read")
        .expect("read");
    assert!(leaves_alone(
        &read.parameters,
        &json!({"path": "a.txt", "offset": 3})
    ));
}

#[test]
fn anything_coercion_would_change_takes_the_full_path() {
    let [python, _, mixed, edit, search] = <[Value; 5]>::try_from(upstream_schemas()).unwrap();
    for args in [
        json!({"text": 5}),
        json!({"text": null}),
        json!({"text": true}),
        json!("hello"),
        json!(null),
    ] {
        assert!(!leaves_alone(&python, &args), "{args}");
    }
    for args in [
        json!({"a": "1"}),
        json!({"a": 2.0}),
        json!({"a": 9_007_199_254_740_993u64}),
        json!({"b": 1.5}),
        json!({"flag": "true"}),
        json!({"flag": 1}),
    ] {
        assert!(!leaves_alone(&mixed, &args), "{args}");
        assert_ne!(coerce(&mixed, args.clone()), args);
    }
    for (schema, args) in [
        (
            &edit,
            json!({"path": "a", "edits": {"oldText": "x", "newText": "y"}}),
        ),
        (
            &edit,
            json!({"path": "a", "edits": [{"oldText": "x", "newText": 1}]}),
        ),
        (&edit, json!({"path": "a", "edits": [], "dryRun": "false"})),
        (&search, json!({"state": "OPEN"})),
        (&search, json!({"labels": "bug"})),
        (&search, json!({"labels": ["bug", 7]})),
        (&search, json!({"page": {"size": "5"}})),
    ] {
        assert!(!leaves_alone(schema, &args), "{args}");
    }
    // A listed value of another type than the enum's: pass 3 converts it.
    let listed = json!({"type": "object", "properties": {
        "n": {"type": "integer", "enum": [1, "2"]},
        "s": {"type": "string", "enum": ["a", 1]}}});
    for args in [json!({"n": "2"}), json!({"s": 1})] {
        assert!(!leaves_alone(&listed, &args), "{args}");
        assert_ne!(coerce(&listed, args.clone()), args);
    }
    assert!(leaves_alone(&listed, &json!({"n": 1, "s": "a"})));
    // Shapes the fast path does not know: never "untouched".
    for schema in [
        json!({"type": "object", "properties": {"v": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"type": "string"}}}),
        json!({"type": "object", "properties": {"v": {"type": "string"}},
            "additionalProperties": {"type": "number"}}),
        json!({"properties": {"v": {"type": "string"}}}),
        json!({"type": "object", "anyOf": [{"required": ["v"]}]}),
        json!({"type": "object", "properties": {"v": {"type": ["string", "null"]}}}),
        json!({"type": "object", "properties": {"v": {"type": "array",
            "items": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"v": {"type": "array",
            "prefixItems": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"v": {"type": "string", "const": "x"}}}),
        json!({"type": "object", "properties": {"v": {"type": "object",
            "additionalProperties": {"type": "string"}}}}),
    ] {
        assert!(Flat::of(&schema).is_none(), "{schema}");
    }
}

#[test]
fn the_coercion_table_gets_the_same_answers_both_ways() {
    for schema in table_schemas() {
        for input in table_inputs() {
            same_answer(&schema, &[], &json!({ "v": input }));
            same_answer(&schema, &[], &json!({ "v": input, "other": input }));
        }
        same_answer(&schema, &[], &json!({}));
        same_answer(&schema, &[], &json!("not an object"));
    }
}

#[test]
fn builtin_tools_get_the_same_answers_both_ways() {
    let args = [
        json!({"path": "a.txt"}),
        json!({"path": "a.txt", "offset": "3", "limit": null}),
        json!({"path": "a.txt", "offset": 3, "limit": 10}),
        json!({"path": 7}),
        json!({"command": "ls", "timeout": 2.5}),
        json!({"pattern": "x", "ignoreCase": "true", "context": 2}),
        json!({"path": "a", "oldText": "x", "newText": "y"}),
        json!({"path": "a", "edits": "[{\"oldText\":\"x\",\"newText\":\"y\"}]"}),
        json!({"path": "a", "content": "hi", "unknown": 1}),
        json!({}),
    ];
    let manifests = builtin_manifests();
    assert!(manifests.len() >= 7);
    for m in &manifests {
        for a in &args {
            same_answer(&m.parameters, &m.prepare, a);
        }
    }
}

#[test]
fn upstream_schemas_get_the_same_answers_both_ways() {
    for schema in upstream_schemas() {
        for input in table_inputs() {
            for key in [
                "text", "message", "a", "b", "flag", "any", "extra", "path", "edits", "dryRun",
                "state", "labels", "sort", "page", "raw",
            ] {
                same_answer(&schema, &[], &json!({ key: input }));
            }
        }
    }
}

/// A property schema: the fast path's kinds, with keywords only validation
/// reads, and shapes it must leave to the full path.
fn prop_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => Just(json!({"type": "string"})),
        1 => Just(json!({"type": "string", "minLength": 2, "title": "S"})),
        3 => Just(json!({"type": "boolean"})),
        3 => Just(json!({"type": "integer"})),
        1 => Just(json!({"type": "integer", "maximum": 10})),
        3 => Just(json!({"type": "number"})),
        1 => Just(json!({"type": "null"})),
        1 => Just(json!({"description": "any"})),
        1 => Just(json!({})),
        1 => Just(json!({"type": ["number", "null"]})),
        1 => Just(json!({"enum": ["a", "b"]})),
        1 => Just(json!({"type": "array", "items": {"type": "integer"}})),
        1 => Just(json!({"type": "object", "properties": {"n": {"type": "number"}}})),
        1 => Just(json!({"type": "string", "enum": ["a", "b", 1]})),
        1 => Just(json!({"type": "integer", "enum": [1, 2, "2"]})),
        1 => Just(json!({"enum": ["a", 1, null, true, [1], {"a": 1}]})),
        1 => Just(json!({"type": "boolean", "enum": [true]})),
        1 => Just(json!({"type": "array"})),
        2 => Just(json!({"type": "array", "items": {"type": "string"}})),
        1 => Just(json!({"type": "array", "items": {"type": "number"}})),
        1 => Just(json!({"type": "array", "items": {"enum": ["a", null]}})),
        1 => Just(json!({"type": "array", "items": {}})),
        1 => Just(json!({"type": "array", "prefixItems": [{"type": "string"}]})),
        1 => Just(json!({"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}})),
        2 => Just(json!({"type": "array", "items": {"type": "object", "required": ["n"],
            "properties": {"n": {"type": "number"}, "b": {"type": "boolean"}}}})),
        2 => Just(json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": "string"}, "n": {"type": "integer"},
            "inner": {"type": "object", "properties": {"b": {"type": "boolean"}}}}})),
        1 => Just(json!({"type": "object", "additionalProperties": false,
            "properties": {"b": {"type": "boolean"}}})),
        1 => Just(json!({"type": "object", "properties": {"n": {"$ref": "#"}}})),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    // Values next to the schemas' types and options: what coercion changes
    // and what it leaves alone.
    let near = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(2),
        json!(-3),
        json!(2.0),
        json!(2.5),
        json!(9_007_199_254_740_993u64),
        json!("2"),
        json!("1"),
        json!("0"),
        json!("true"),
        json!("false"),
        json!(""),
        json!("null"),
        json!("a"),
        json!("b"),
        json!("0x10"),
        json!([1]),
        json!({"a": 1}),
    ];
    prop_oneof![
        1 => Just(Value::Null),
        6 => prop::sample::select(near),
        1 => any::<i64>().prop_map(|i| json!(i)),
        1 => any::<u64>().prop_map(|u| json!(u)),
        1 => (-1e3f64..1e3).prop_map(|f| json!(f)),
        1 => (-100i64..100).prop_map(|i| json!(i as f64)),
        1 => "[a-z0-9. ]{0,6}".prop_map(Value::String),
    ]
}

fn arg_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(
                (prop::sample::select(vec!["a", "b", "n", "inner"]), inner),
                0..3
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<Map<_, _>>()
            )),
        ]
    })
}

fn schema() -> impl Strategy<Value = Value> {
    let additional = prop_oneof![
        3 => Just(None),
        1 => Just(Some(json!(true))),
        1 => Just(Some(json!(false))),
        1 => Just(Some(json!({"type": "string"}))),
    ];
    (
        prop::collection::vec(prop_schema(), 0..4),
        prop::collection::vec(any::<bool>(), 4),
        additional,
        prop::bool::weighted(0.9),
    )
        .prop_map(|(props, required, additional, typed)| {
            let names = ["p0", "p1", "p2", "p3"];
            let mut node = Map::new();
            if typed {
                node.insert("type".into(), json!("object"));
            }
            let properties: Map<String, Value> = props
                .into_iter()
                .enumerate()
                .map(|(i, p)| (names[i].to_string(), p))
                .collect();
            let required: Vec<Value> = names
                .iter()
                .zip(required)
                .filter(|(_, r)| *r)
                .map(|(n, _)| json!(n))
                .collect();
            node.insert("properties".into(), Value::Object(properties));
            node.insert("required".into(), Value::Array(required));
            if let Some(a) = additional {
                node.insert("additionalProperties".into(), a);
            }
            Value::Object(node)
        })
}

fn args_for() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["p0", "p1", "p2", "p3", "x"]),
            // Mostly scalars: a recursive strategy seldom ends at a leaf.
            prop_oneof![2 => leaf(), 1 => arg_value()],
        ),
        0..5,
    )
    .prop_map(|kv| {
        Value::Object(
            kv.into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Map<_, _>>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6000))]

    #[test]
    fn random_schemas_and_arguments_get_the_same_answers_both_ways(
        schema in schema(),
        args in args_for(),
    ) {
        same_answer(&schema, &[], &args);
    }
}
