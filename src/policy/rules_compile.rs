//! Compiling a rule's condition (`when:`): each test type-checked against
//! the argument's JSON types from the tool's schema (a test that cannot
//! apply is a load error, never a rule that silently never matches), result
//! tests allowed only under `results:`, regexes compiled now or on first use.

use regex::Regex;
use serde_json::Value;

use super::rules::{ArgTypes, Cond, CondError, OutputTest, ResultScope};
use super::rules_regex::{build_regex, PolicyRegex};
use crate::config::condition::{Condition, OutputTestSpec};

/// When a condition's regexes are compiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regexes {
    /// At load: a regex that does not compile is a load error (the usual way).
    Now,
    /// On first use. Only for policy text already proven, by this same
    /// build, to compile and pass its examples (see
    /// [`crate::config::proven`]): a process that decides one call then
    /// compiles only the regexes that call reaches.
    OnFirstUse,
}

/// Compiles a condition, type-checking every test against `arg_types`
/// (`None` from it means the argument does not exist), its regexes compiled
/// as `regexes` says. Result tests are allowed only with a `results` scope.
pub fn compile_condition_with(
    cond: &Condition,
    at: &str,
    arg_types: ArgTypes<'_>,
    results: Option<ResultScope<'_>>,
    regexes: Regexes,
    errors: &mut Vec<CondError>,
) -> Option<Cond> {
    let combinators = [cond.all.is_some(), cond.any.is_some(), cond.not.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    let tests = [
        cond.equals.is_some(),
        cond.one_of.is_some(),
        cond.matches.is_some(),
        cond.glob.is_some(),
        cond.larger_than.is_some(),
        cond.present.is_some(),
        cond.missing.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    let result_tests = [
        cond.output.is_some(),
        cond.is_error.is_some(),
        cond.exit_code.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if result_tests > 0 && results.is_none() {
        let test = if cond.output.is_some() {
            "output"
        } else if cond.is_error.is_some() {
            "is_error"
        } else {
            "exit_code"
        };
        errors.push((
            format!("{at}.{test}"),
            format!("`{test}` tests a call's result, which a before-rule cannot see"),
            "move the rule to `results:` (after-rules), or test an argument".to_string(),
        ));
        return None;
    }
    let shape_help = if results.is_some() {
        "write either `{ arg: NAME, <one test> }` with one of equals, one_of, matches, glob, larger_than, present, missing — or one result test `output: {...}`, `is_error: BOOL`, `exit_code: N` — or one of `all: [...]`, `any: [...]`, `not: {...}`"
    } else {
        "write either `{ arg: NAME, <one test> }` with one of equals, one_of, matches, glob, larger_than, present, missing — or one of `all: [...]`, `any: [...]`, `not: {...}`"
    };
    if combinators + usize::from(cond.arg.is_some()) + result_tests != 1
        || (cond.arg.is_some() && tests != 1)
        || (cond.arg.is_none() && tests > 0)
    {
        errors.push((
            at.to_string(),
            "a condition must be exactly one test on one argument, one result test, or one combination".to_string(),
            shape_help.to_string(),
        ));
        return None;
    }
    let list =
        |items: &Vec<Condition>, key: &str, errors: &mut Vec<CondError>| -> Option<Vec<Cond>> {
            if items.is_empty() {
                errors.push((
                    format!("{at}.{key}"),
                    format!("`{key}` needs at least one condition"),
                    "add conditions or remove it".to_string(),
                ));
                return None;
            }
            let compiled: Vec<Option<Cond>> = items
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let at = format!("{at}.{key}.{i}");
                    compile_condition_with(c, &at, arg_types, results, regexes, errors)
                })
                .collect();
            compiled.into_iter().collect()
        };
    if let Some(items) = &cond.all {
        return list(items, "all", errors).map(Cond::All);
    }
    if let Some(items) = &cond.any {
        return list(items, "any", errors).map(Cond::Any);
    }
    if let Some(inner) = &cond.not {
        let at = format!("{at}.not");
        return compile_condition_with(inner, &at, arg_types, results, regexes, errors)
            .map(|c| Cond::Not(Box::new(c)));
    }
    if let Some(want) = cond.is_error {
        return Some(Cond::IsError(want));
    }
    if let Some(codes) = &cond.exit_code {
        let tools = results.map_or(&[][..], |r| r.without_exit_code);
        if !tools.is_empty() {
            errors.push((
                format!("{at}.exit_code"),
                format!(
                    "`exit_code` cannot match {}: only bash and exec tools report an exit code",
                    tools.join(", ")
                ),
                "narrow the rule's `tools` to bash or exec tools, or test `output` or `is_error`"
                    .to_string(),
            ));
            return None;
        }
        let codes = codes.to_vec();
        if codes.is_empty() {
            errors.push((
                format!("{at}.exit_code"),
                "`exit_code` lists no code".to_string(),
                "write a code such as `1`, or a list such as `[1, 2]`".to_string(),
            ));
            return None;
        }
        return Some(Cond::ExitCode(codes));
    }
    if let Some(test) = &cond.output {
        return compile_output_test(test, &format!("{at}.output"), regexes, errors)
            .map(Cond::Output);
    }
    let arg = cond.arg.clone().unwrap_or_default();
    let Some(types) = arg_types(&arg) else {
        errors.push((format!("{at}.arg"), format!("argument `{arg}` does not exist on the rule's tools"), "name an argument from the tool's manifest `[parameters]`, or narrow the rule's `tools`".to_string()));
        return None;
    };
    let allows = |t: &str| {
        types.is_empty()
            || types.iter().any(|x| {
                x == t || (t == "number" && x == "integer") || (t == "integer" && x == "number")
            })
    };
    let type_error = |test: &str, want: &str| {
        (
            format!("{at}.{test}"),
            format!(
                "`{test}` needs a {want} argument, but `{arg}` is {}",
                types.join(" or ")
            ),
            format!("use a test that fits a {} argument", types.join("/")),
        )
    };
    let check_value = |v: &Value, key: &str, errors: &mut Vec<CondError>| {
        let t = match v {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        if !allows(t) {
            errors.push((
                format!("{at}.{key}"),
                format!("`{v}` is a {t}, but `{arg}` is {}", types.join(" or ")),
                format!("compare `{arg}` with a value of its type"),
            ));
        }
    };
    if let Some(v) = &cond.equals {
        check_value(v, "equals", errors);
        return Some(Cond::Equals {
            arg,
            value: v.clone(),
        });
    }
    if let Some(vs) = &cond.one_of {
        for v in vs {
            check_value(v, "one_of", errors);
        }
        return Some(Cond::OneOf {
            arg,
            values: vs.clone(),
        });
    }
    if let Some(pattern) = &cond.matches {
        if !allows("string") {
            errors.push(type_error("matches", "string"));
            return None;
        }
        return policy_regex(pattern, &format!("{at}.matches"), regexes, errors)
            .map(|regex| Cond::Matches { arg, regex });
    }
    if let Some(pattern) = &cond.glob {
        if !allows("string") {
            errors.push(type_error("glob", "string"));
            return None;
        }
        return match crate::workspace::compile_glob(pattern) {
            Ok(g) => Some(Cond::Glob {
                arg,
                glob: g.compile_matcher(),
            }),
            Err(e) => {
                errors.push((
                    format!("{at}.glob"),
                    format!("invalid glob `{pattern}`: {e}"),
                    "fix the glob".to_string(),
                ));
                None
            }
        };
    }
    if let Some(size) = &cond.larger_than {
        return match size.bytes() {
            Ok(bytes) => Some(Cond::LargerThan { arg, bytes }),
            Err(e) => {
                errors.push((
                    format!("{at}.larger_than"),
                    e,
                    "write a size such as `1MB`".to_string(),
                ));
                None
            }
        };
    }
    if let Some(present) = cond.present {
        return Some(Cond::Present { arg, present });
    }
    cond.missing.map(|missing| Cond::Present {
        arg,
        present: !missing,
    })
}

/// A regex of a policy file, compiled now or on first use.
fn policy_regex(
    pattern: &str,
    at: &str,
    regexes: Regexes,
    errors: &mut Vec<CondError>,
) -> Option<PolicyRegex> {
    match regexes {
        Regexes::Now => compile_regex(pattern, at, errors).map(PolicyRegex::compiled),
        Regexes::OnFirstUse => Some(PolicyRegex::on_first_use(pattern)),
    }
}

/// Compiles a regex of a policy file, bounded by [`MAX_REGEX_SIZE`](super::rules_regex::MAX_REGEX_SIZE).
fn compile_regex(pattern: &str, at: &str, errors: &mut Vec<CondError>) -> Option<Regex> {
    match build_regex(pattern) {
        Ok(regex) => Some(regex),
        Err(regex::Error::CompiledTooBig(_)) => {
            errors.push((
                at.to_string(),
                "regex is too large to compile safely".to_string(),
                "simplify the regex (fewer repetitions or alternatives)".to_string(),
            ));
            None
        }
        Err(e) => {
            let msg = e.to_string();
            let last = msg.lines().last().unwrap_or(&msg).trim();
            let short = last.strip_prefix("error: ").unwrap_or(last).to_string();
            errors.push((
                at.to_string(),
                format!("invalid regex `{pattern}`: {short}"),
                "fix the regex (Rust `regex` syntax: no look-around or backreferences)".to_string(),
            ));
            None
        }
    }
}

/// Compiles `output: { ... }`: exactly one test on the result's text.
fn compile_output_test(
    spec: &OutputTestSpec,
    at: &str,
    regexes: Regexes,
    errors: &mut Vec<CondError>,
) -> Option<OutputTest> {
    let given = [
        spec.matches.is_some(),
        spec.contains.is_some(),
        spec.larger_than.is_some(),
        spec.lines_over.is_some(),
    ]
    .iter()
    .filter(|b| **b)
    .count();
    if given != 1 {
        errors.push((
            at.to_string(),
            "`output` must hold exactly one test".to_string(),
            "write one of `output: { matches: REGEX }`, `{ contains: TEXT }`, `{ larger_than: 20KB }`, `{ lines_over: N }`; combine several with `all`/`any`".to_string(),
        ));
        return None;
    }
    if let Some(pattern) = &spec.matches {
        return policy_regex(pattern, &format!("{at}.matches"), regexes, errors)
            .map(OutputTest::Matches);
    }
    if let Some(text) = &spec.contains {
        if text.is_empty() {
            errors.push((
                format!("{at}.contains"),
                "`contains` is empty, so it matches every result".to_string(),
                "write the text to look for".to_string(),
            ));
            return None;
        }
        return Some(OutputTest::Contains(text.clone()));
    }
    if let Some(size) = &spec.larger_than {
        return match size.bytes() {
            Ok(bytes) => Some(OutputTest::LargerThan(bytes)),
            Err(e) => {
                errors.push((
                    format!("{at}.larger_than"),
                    e,
                    "write a size such as `20KB`".to_string(),
                ));
                None
            }
        };
    }
    spec.lines_over.map(OutputTest::LinesOver)
}
