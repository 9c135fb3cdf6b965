//! Argument rules: conditions on a call's arguments, checked against the
//! tool's schema at load and against their own examples.
//!
//! A rule on an argument the tool does not have, or a test that cannot apply
//! to the argument's type (`matches` on a number), is a load error: a rule that
//! silently never matches is worse than no rule.
//!
//! The same conditions serve the after-rules of `results:`
//! ([`super::results`]), which may also test what the call returned
//! (`output`, `is_error`, `exit_code`): one evaluator for both.

use globset::GlobMatcher;
use serde_json::{Map, Value};

pub use super::rules_regex::{compile_failed, PolicyRegex, MAX_REGEX_SIZE};
use super::Decision;
use crate::config::condition::parse_byte_size;

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
        regex: PolicyRegex,
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
    /// `results:` only: the result's text passes the test.
    Output(OutputTest),
    /// `results:` only: the result is (or is not) an error.
    IsError(bool),
    /// `results:` only: the command exited with one of these codes.
    ExitCode(Vec<i64>),
}

/// A compiled test on a result's text.
#[derive(Clone, Debug)]
pub enum OutputTest {
    /// The text contains a match.
    Matches(PolicyRegex),
    /// The text contains the string.
    Contains(String),
    /// The text is bigger than this many bytes.
    LargerThan(u64),
    /// The text has more lines than this.
    LinesOver(u64),
}

impl OutputTest {
    fn eval(&self, text: &str) -> bool {
        match self {
            OutputTest::Matches(r) => r.is_match(text),
            OutputTest::Contains(s) => text.contains(s.as_str()),
            OutputTest::LargerThan(n) => text.len() as u64 > *n,
            OutputTest::LinesOver(n) => text.lines().count() as u64 > *n,
        }
    }
}

/// What a result test reads of a call's result.
#[derive(Clone, Copy, Debug)]
pub struct ResultFacts<'a> {
    /// The result's text, as the model would see it (redacted).
    pub text: &'a str,
    /// Whether the result is an error.
    pub is_error: bool,
    /// The command's exit code, for bash and exec tools that ran to an exit.
    pub exit_code: Option<i64>,
}

impl<'a> ResultFacts<'a> {
    /// The facts of a result written down by hand (a rule's example, a
    /// policy test): an error when it says so, or when its exit code is
    /// not 0.
    pub fn written(text: &'a str, is_error: Option<bool>, exit_code: Option<i64>) -> Self {
        ResultFacts {
            text,
            is_error: is_error.unwrap_or(exit_code.is_some_and(|c| c != 0)),
            exit_code,
        }
    }
}

/// Which result tests a condition may use (`None` where none may: `rules:`).
#[derive(Clone, Copy, Debug)]
pub struct ResultScope<'a> {
    /// The rule's tools that report no exit code (neither bash nor exec
    /// tools): `exit_code` could never match a call to them.
    pub without_exit_code: &'a [String],
}

/// One compiled rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Its id.
    pub id: String,
    /// The identities it applies to (`rules[].identities`); every caller
    /// when `None`.
    pub identities: Option<globset::GlobSet>,
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
    /// Audit-only (`mode: audit`): recorded, never decisive.
    pub audit: bool,
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
        self.eval_with(args, path_key, None)
    }

    /// Evaluates against `args` and the call's result (after-rules).
    pub fn eval_result(
        &self,
        args: &Map<String, Value>,
        path_key: &dyn Fn(&str, &str) -> Option<String>,
        result: &ResultFacts<'_>,
    ) -> bool {
        self.eval_with(args, path_key, Some(result))
    }

    /// Result tests without a result are false; they are compiled only into
    /// `results:` rules, which always have one.
    fn eval_with(
        &self,
        args: &Map<String, Value>,
        path_key: &dyn Fn(&str, &str) -> Option<String>,
        result: Option<&ResultFacts<'_>>,
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
            Cond::All(cs) => cs.iter().all(|c| c.eval_with(args, path_key, result)),
            Cond::Any(cs) => cs.iter().any(|c| c.eval_with(args, path_key, result)),
            Cond::Not(c) => !c.eval_with(args, path_key, result),
            Cond::Output(test) => result.is_some_and(|r| test.eval(r.text)),
            Cond::IsError(want) => result.is_some_and(|r| r.is_error == *want),
            Cond::ExitCode(codes) => {
                result.is_some_and(|r| r.exit_code.is_some_and(|c| codes.contains(&c)))
            }
        }
    }

    /// Whether the condition tests an exit code anywhere.
    pub fn reads_exit_code(&self) -> bool {
        match self {
            Cond::ExitCode(_) => true,
            Cond::All(cs) | Cond::Any(cs) => cs.iter().any(Cond::reads_exit_code),
            Cond::Not(c) => c.reads_exit_code(),
            _ => false,
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
            Cond::Output(_) | Cond::IsError(_) | Cond::ExitCode(_) => {}
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
#[path = "rules_tests.rs"]
mod tests;
