//! Argument rules: conditions on a call's arguments, checked against the
//! tool's schema at load and against their own examples.
//!
//! A rule on an argument the tool does not have, or a test that cannot apply
//! to the argument's type (`matches` on a number), is a load error: a rule that
//! silently never matches is worse than no rule.

use globset::GlobMatcher;
use regex::Regex;
use serde_json::{Map, Value};

use super::Decision;
use crate::config::policy_file::{parse_byte_size, Condition};

/// The largest regex a rule may compile to (bytes of compiled program):
/// policy files come from people, and a regex must not cost unbounded memory.
pub const MAX_REGEX_SIZE: usize = 1 << 20;

/// A compiled condition.
#[derive(Clone, Debug)]
pub enum Cond {
    /// The argument equals the value (numbers compare numerically).
    Equals {
        /// The argument.
        arg: String,
        /// The value.
        value: Value,
    },
    /// The argument equals one of the values.
    OneOf {
        /// The argument.
        arg: String,
        /// The values.
        values: Vec<Value>,
    },
    /// The string argument contains a match.
    Matches {
        /// The argument.
        arg: String,
        /// The regex.
        regex: Regex,
    },
    /// The string argument (for path arguments: the workspace-relative path) matches.
    Glob {
        /// The argument.
        arg: String,
        /// The glob.
        glob: GlobMatcher,
    },
    /// The argument is bigger than this many bytes.
    LargerThan {
        /// The argument.
        arg: String,
        /// The size, in bytes.
        bytes: u64,
    },
    /// The argument is given (`true`) or not (`false`).
    Present {
        /// The argument.
        arg: String,
        /// Whether it must be given.
        present: bool,
    },
    /// Every condition holds.
    All(Vec<Cond>),
    /// Some condition holds.
    Any(Vec<Cond>),
    /// The condition does not hold.
    Not(Box<Cond>),
}

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Its id.
    pub id: String,
    /// The tools it applies to.
    pub tools: Vec<String>,
    /// When it applies.
    pub cond: Cond,
    /// What it decides.
    pub decision: Decision,
    /// Why, for the model.
    pub reason: Option<String>,
    /// Whether a match also ends the batch.
    pub terminate: bool,
}

/// Every layer's rules, in file order.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    /// The rules.
    pub rules: Vec<Rule>,
}

impl Cond {
    /// Evaluates against `args`. `path_key(arg, value)` gives the
    /// workspace-relative form of a path argument, so `glob: "src/**"` matches
    /// `./src/x`, `/abs/ws/src/x` and `src/../src/x` alike.
    pub fn eval(
        &self,
        args: &Map<String, Value>,
        path_key: &dyn Fn(&str, &str) -> Option<String>,
    ) -> bool {
        match self {
            Cond::Equals { arg, value } => args.get(arg).is_some_and(|v| json_eq(v, value)),
            Cond::OneOf { arg, values } => args
                .get(arg)
                .is_some_and(|v| values.iter().any(|x| json_eq(v, x))),
            Cond::Matches { arg, regex } => args
                .get(arg)
                .and_then(Value::as_str)
                .is_some_and(|s| regex.is_match(s)),
            Cond::Glob { arg, glob } => args.get(arg).and_then(Value::as_str).is_some_and(|s| {
                let key = path_key(arg, s).unwrap_or_else(|| s.to_string());
                glob.is_match(key.as_str())
            }),
            Cond::LargerThan { arg, bytes } => args.get(arg).is_some_and(|v| size_of(v) > *bytes),
            Cond::Present { arg, present } => args.contains_key(arg) == *present,
            Cond::All(cs) => cs.iter().all(|c| c.eval(args, path_key)),
            Cond::Any(cs) => cs.iter().any(|c| c.eval(args, path_key)),
            Cond::Not(c) => !c.eval(args, path_key),
        }
    }

    /// Every argument name the condition reads.
    pub fn args(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_args(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_args<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Cond::Equals { arg, .. }
            | Cond::OneOf { arg, .. }
            | Cond::Matches { arg, .. }
            | Cond::Glob { arg, .. }
            | Cond::LargerThan { arg, .. }
            | Cond::Present { arg, .. } => out.push(arg),
            Cond::All(cs) | Cond::Any(cs) => cs.iter().for_each(|c| c.collect_args(out)),
            Cond::Not(c) => c.collect_args(out),
        }
    }
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn size_of(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        other => serde_json::to_string(other).map_or(0, |s| s.len() as u64),
    }
}

/// A problem in a condition: the dotted path below `when`, what is wrong, what to change.
pub type CondError = (String, String, String);

/// The JSON types an argument may take, from the tool's schema; an empty list
/// means the schema does not say (anything goes).
pub type ArgTypes<'a> = &'a dyn Fn(&str) -> Option<Vec<String>>;

/// Compiles a condition, type-checking every test against `arg_types`
/// (`None` from it means the argument does not exist).
pub fn compile_condition(
    cond: &Condition,
    at: &str,
    arg_types: ArgTypes<'_>,
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
    let shape_help = "write either `{ arg: NAME, <one test> }` with one of equals, one_of, matches, glob, larger_than, present, missing — or one of `all: [...]`, `any: [...]`, `not: {...}`";
    if combinators + usize::from(cond.arg.is_some()) != 1
        || (cond.arg.is_some() && tests != 1)
        || (cond.arg.is_none() && tests > 0)
    {
        errors.push((
            at.to_string(),
            "a condition must be exactly one test on one argument, or one combination".to_string(),
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
                .map(|(i, c)| compile_condition(c, &format!("{at}.{key}.{i}"), arg_types, errors))
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
        return compile_condition(inner, &format!("{at}.not"), arg_types, errors)
            .map(|c| Cond::Not(Box::new(c)));
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
        return match regex::RegexBuilder::new(pattern)
            .size_limit(MAX_REGEX_SIZE)
            .dfa_size_limit(MAX_REGEX_SIZE)
            .build()
        {
            Ok(regex) => Some(Cond::Matches { arg, regex }),
            Err(regex::Error::CompiledTooBig(_)) => {
                errors.push((
                    format!("{at}.matches"),
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
                    format!("{at}.matches"),
                    format!("invalid regex `{pattern}`: {short}"),
                    "fix the regex (Rust `regex` syntax: no look-around or backreferences)"
                        .to_string(),
                ));
                None
            }
        };
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

/// Most bytes the placeholders of one example may expand to, together: a
/// policy file must not make its loader allocate without bound.
pub const MAX_PLACEHOLDER_BYTES: u64 = 64 << 20;

/// Expands `"<2 MB>"`-style placeholders in examples and tests into strings
/// of that many bytes, so a rule on big content can carry a readable example.
/// Together they expand to at most [`MAX_PLACEHOLDER_BYTES`]; placeholders
/// past that stay as written (and the example then shows as failing).
pub fn expand_placeholders(value: &Value) -> Value {
    let mut budget = MAX_PLACEHOLDER_BYTES;
    expand_within(value, &mut budget)
}

fn expand_within(value: &Value, budget: &mut u64) -> Value {
    match value {
        Value::String(s) => {
            if let Some(inner) = s.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
                if inner.starts_with(|c: char| c.is_ascii_digit()) {
                    if let Ok(n) = parse_byte_size(inner) {
                        if n <= *budget {
                            *budget -= n;
                            return Value::String("x".repeat(n as usize));
                        }
                    }
                }
            }
            value.clone()
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| expand_within(v, budget)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), expand_within(v, budget)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(yaml: &str, types: &[(&str, &str)]) -> Result<Cond, Vec<CondError>> {
        let cond: Condition = serde_yaml::from_str(yaml).unwrap();
        let lookup = |a: &str| {
            types
                .iter()
                .find(|(n, _)| *n == a)
                .map(|(_, t)| vec![t.to_string()])
        };
        let mut errors = Vec::new();
        compile_condition(&cond, "when", &lookup, &mut errors)
            .filter(|_| errors.is_empty())
            .ok_or(errors)
    }

    fn args(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn combinators_and_tests() {
        let c = compile("{ all: [ { arg: path, glob: 'src/**' }, { not: { arg: content, matches: 'TODO' } } ] }", &[("path", "string"), ("content", "string")]).unwrap();
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
        let many = expand_placeholders(
            &serde_json::json!({"a": "<30 MB>", "b": "<30 MB>", "c": "<30 MB>"}),
        );
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
}
