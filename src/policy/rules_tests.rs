//! Tests of the argument and result conditions.

use super::*;
use crate::config::condition::Condition;
use crate::policy::rules_compile::{compile_condition_with, Regexes};

/// A condition compiled as at load (regexes now).
fn compile_condition(
    cond: &Condition,
    at: &str,
    arg_types: ArgTypes<'_>,
    results: Option<ResultScope<'_>>,
    errors: &mut Vec<CondError>,
) -> Option<Cond> {
    compile_condition_with(cond, at, arg_types, results, Regexes::Now, errors)
}

fn compile(yaml: &str, types: &[(&str, &str)]) -> Result<Cond, Vec<CondError>> {
    let cond: Condition = serde_yaml::from_str(yaml).unwrap();
    let lookup = |a: &str| {
        types
            .iter()
            .find(|(n, _)| *n == a)
            .map(|(_, t)| vec![t.to_string()])
    };
    let mut errors = Vec::new();
    compile_condition(&cond, "when", &lookup, None, &mut errors)
        .filter(|_| errors.is_empty())
        .ok_or(errors)
}

fn args(json: &str) -> Map<String, Value> {
    serde_json::from_str(json).unwrap()
}

#[test]
fn combinators_and_tests() {
    let c = compile(
        "{ all: [ { arg: path, glob: 'src/**' }, { not: { arg: content, matches: 'TODO' } } ] }",
        &[("path", "string"), ("content", "string")],
    )
    .unwrap();
    let none = |_: &str, _: &str| None;
    assert!(c.eval(&args(r#"{"path":"src/a/b.rs","content":"ok"}"#), &none));
    assert!(!c.eval(&args(r#"{"path":"src/a.rs","content":"TODO"}"#), &none));
    assert!(!c.eval(&args(r#"{"path":"docs/a.md","content":"ok"}"#), &none));
}

#[test]
fn type_errors_name_the_argument() {
    let err = compile("{ arg: limit, matches: 'x' }", &[("limit", "number")]).unwrap_err();
    assert!(
        err[0]
            .1
            .contains("`matches` needs a string argument, but `limit` is number"),
        "{err:?}"
    );
    let err = compile("{ arg: nope, present: true }", &[("limit", "number")]).unwrap_err();
    assert!(
        err[0].1.contains("argument `nope` does not exist"),
        "{err:?}"
    );
    let err = compile("{ arg: limit, equals: 'ten' }", &[("limit", "number")]).unwrap_err();
    assert!(
        err[0].1.contains("is a string, but `limit` is number"),
        "{err:?}"
    );
}

#[test]
fn bad_shapes_and_regexes_are_errors() {
    assert!(compile("{ arg: a, equals: 1, matches: x }", &[("a", "string")]).is_err());
    assert!(compile("{ any: [] }", &[("a", "string")]).is_err());
    let err = compile("{ arg: a, matches: '(unclosed' }", &[("a", "string")]).unwrap_err();
    assert!(err[0].1.starts_with("invalid regex"), "{err:?}");
    let err = compile(
        "{ arg: a, matches: '\\w{1000}\\w{1000}\\w{1000}' }",
        &[("a", "string")],
    )
    .unwrap_err();
    assert!(err[0].1.contains("too large"), "{err:?}");
}

#[test]
fn sizes_and_placeholders() {
    let c = compile(
        "{ arg: content, larger_than: 1KB }",
        &[("content", "string")],
    )
    .unwrap();
    let none = |_: &str, _: &str| None;
    // Together at most 64 MB: the third placeholder stays as written.
    let many =
        expand_placeholders(&serde_json::json!({"a": "<30 MB>", "b": "<30 MB>", "c": "<30 MB>"}));
    let sizes: Vec<usize> = ["a", "b", "c"]
        .iter()
        .map(|k| many[k].as_str().map_or(0, str::len))
        .collect();
    assert_eq!(sizes, [30 << 20, 30 << 20, 7]);
    let big = expand_placeholders(&serde_json::json!({"content": "<2 KB>"}));
    assert_eq!(big["content"].as_str().unwrap().len(), 2048);
    assert!(c.eval(big.as_object().unwrap(), &none));
    assert!(!c.eval(&args(r#"{"content":"<not a size>"}"#), &none));
}

fn result_scope(without_exit_code: &[String]) -> Option<ResultScope<'_>> {
    Some(ResultScope { without_exit_code })
}

fn compile_result(yaml: &str, without_exit_code: &[String]) -> Result<Cond, Vec<CondError>> {
    let cond: Condition = serde_yaml::from_str(yaml).unwrap();
    let lookup = |a: &str| (a == "command").then(|| vec!["string".to_string()]);
    let mut errors = Vec::new();
    compile_condition(
        &cond,
        "when",
        &lookup,
        result_scope(without_exit_code),
        &mut errors,
    )
    .filter(|_| errors.is_empty())
    .ok_or(errors)
}

#[test]
fn result_tests_read_the_result() {
    let none = |_: &str, _: &str| None;
    let args = args(r#"{"command":"cargo test"}"#);
    let c = compile_result(
        "{ all: [ { arg: command, matches: '^cargo test' }, { output: { matches: 'FAILED' } }, { not: { exit_code: [0] } } ] }",
        &[],
    )
    .unwrap();
    let failed = ResultFacts {
        text: "test result: FAILED",
        is_error: true,
        exit_code: Some(101),
    };
    assert!(c.eval_result(&args, &none, &failed));
    let passed = ResultFacts {
        text: "test result: ok",
        is_error: false,
        exit_code: Some(0),
    };
    assert!(!c.eval_result(&args, &none, &passed));
    // A before-rule never sees a result: its result tests are false.
    assert!(!c.eval(&args, &none));

    let lines = compile_result("{ output: { lines_over: 2 } }", &[]).unwrap();
    let three = ResultFacts {
        text: "a\nb\nc\n",
        is_error: false,
        exit_code: None,
    };
    assert!(lines.eval_result(&args, &none, &three));
    let size = compile_result("{ output: { larger_than: 4 } }", &[]).unwrap();
    assert!(size.eval_result(&args, &none, &three), "6 bytes");
    let err = compile_result("{ is_error: true }", &[]).unwrap();
    assert!(!err.eval_result(&args, &none, &three));
    // No exit code (aborted, timed out): an exit_code test does not match.
    let code = compile_result("{ exit_code: 1 }", &[]).unwrap();
    let aborted = ResultFacts {
        text: "",
        is_error: true,
        exit_code: None,
    };
    assert!(!code.eval_result(&args, &none, &aborted));
}

#[test]
fn result_tests_are_errors_where_they_cannot_apply() {
    let cond: Condition = serde_yaml::from_str("{ output: { contains: x } }").unwrap();
    let mut errors = Vec::new();
    let lookup = |_: &str| None;
    assert!(compile_condition(&cond, "when", &lookup, None, &mut errors).is_none());
    assert!(errors[0].1.contains("before-rule cannot see"), "{errors:?}");
    let err = compile_result("{ exit_code: 1 }", &["read".to_string()]).unwrap_err();
    assert!(err[0].1.contains("cannot match read"), "{err:?}");
    let err = compile_result("{ output: { contains: x, lines_over: 1 } }", &[]).unwrap_err();
    assert!(err[0].1.contains("exactly one test"), "{err:?}");
}
