//! JSON-Schema validation of a call's arguments, with Pi's error texts.
//!
//! Validation itself is the `jsonschema` crate's (every draft, compiled once
//! per tool per policy snapshot). What the model reads is Pi's format, so an
//! agent written against Pi gets the same feedback from toolgate:
//!
//! ```text
//! Validation failed for tool "read":
//!   - path: missing
//!   - limit: expected number, got string
//!
//! Received arguments:
//! { … }
//! ```

use std::borrow::Cow;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::Validator;
use serde_json::Value;

use super::coerce::{coerce, Flat};
use super::prepare::prepare;
use crate::config::manifest::PrepareStep;
use crate::policy::limits::{check_arguments, LimitExceeded, Limits};
use crate::text::{format_size, DEFAULT_MAX_BYTES};

/// A tool's compiled argument schema.
#[derive(Debug)]
pub struct ArgumentSchema {
    validator: Validator,
    /// Coercion's fast path, when the schema has a shape it knows.
    flat: Option<Flat>,
}

impl ArgumentSchema {
    /// Compiles `schema`. Manifests are checked against the meta-schema at
    /// load, so this fails only for schemas the crate cannot build (an
    /// unresolvable `$ref`); the caller reports that as the tool's error.
    pub fn compile(schema: &Value) -> Result<ArgumentSchema, String> {
        jsonschema::validator_for(schema)
            .map(|validator| ArgumentSchema {
                validator,
                flat: Flat::of(schema),
            })
            .map_err(|e| e.to_string())
    }

    /// True when coercion toward this schema would return `args` as they
    /// are, so it need not run (see `coerce/flat.rs`).
    fn coercion_leaves_alone(&self, args: &Value) -> bool {
        self.flat.as_ref().is_some_and(|f| f.leaves_alone(args))
    }

    /// `Ok` when `args` is valid, else each problem as `(dotted path, message)`.
    pub fn check(&self, args: &Value) -> Result<(), Vec<(String, String)>> {
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let mut problems = Vec::new();
        for error in self.validator.iter_errors(args) {
            let pointer = error.instance_path().as_str().to_string();
            let (pointer, message) = describe(error.kind(), error.instance(), pointer);
            problems.push((dotted(&pointer), message));
        }
        Err(problems)
    }
}

/// Why a call's arguments were refused before the policy saw them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgumentsRefused {
    /// Over the policy's argument size or depth limit.
    OverLimit(LimitExceeded),
    /// Not valid for the tool's schema: Pi's validation error text.
    Invalid(String),
}

/// The argument steps of the pipeline for one call: the size and depth
/// limits (before any walk over the arguments), the manifest's `prepare`
/// migrations, the limits again (`prepare` may parse a JSON string into a
/// nested value), coercion, and validation against `schema` (compiled from
/// `schema_value`). The executor's preflight runs exactly this; it is public
/// so that tests and fuzzing run the same code.
pub fn check_call_arguments(
    tool: &str,
    steps: &[PrepareStep],
    schema_value: &Value,
    schema: &ArgumentSchema,
    limits: &Limits,
    args: &Value,
) -> Result<Value, ArgumentsRefused> {
    let call = ArgumentCheck {
        tool,
        steps,
        schema_value,
        schema,
        limits,
    };
    call.run(Cow::Borrowed(args), true)
}

/// The inputs of [`check_call_arguments`] but the arguments.
pub(super) struct ArgumentCheck<'a> {
    pub tool: &'a str,
    pub steps: &'a [PrepareStep],
    pub schema_value: &'a Value,
    pub schema: &'a ArgumentSchema,
    pub limits: &'a Limits,
}

impl ArgumentCheck<'_> {
    /// [`check_call_arguments`] on arguments the caller may hand over (then
    /// arguments that need no change are not copied at all). `fast`: skip
    /// coercion when it would change nothing; tests turn it off to pin the
    /// fast path to the full one.
    pub(super) fn run(&self, args: Cow<'_, Value>, fast: bool) -> Result<Value, ArgumentsRefused> {
        let (tool, limits) = (self.tool, self.limits);
        check_arguments(limits, tool, &args).map_err(ArgumentsRefused::OverLimit)?;
        // Without steps, `prepare` returns its input: nothing to copy, and
        // the limits just checked hold for it.
        let prepared = if self.steps.is_empty() && fast {
            args
        } else {
            let prepared = prepare(self.steps, &args);
            check_arguments(limits, tool, &prepared).map_err(ArgumentsRefused::OverLimit)?;
            Cow::Owned(prepared)
        };
        let coerced = if fast && self.schema.coercion_leaves_alone(&prepared) {
            None
        } else {
            Some(coerce(self.schema_value, prepared.clone().into_owned()))
        };
        match self.schema.check(coerced.as_ref().unwrap_or(&prepared)) {
            Ok(()) => Ok(coerced.unwrap_or_else(|| prepared.into_owned())),
            Err(problems) => {
                let max = usize::try_from(limits.max_output_bytes).unwrap_or(usize::MAX);
                Err(ArgumentsRefused::Invalid(failure_message_within(
                    tool, &problems, &prepared, max,
                )))
            }
        }
    }
}

/// Pi's full validation error text, with the received arguments shown up
/// to Pi's default output limit (see [`failure_message_within`]).
pub fn failure_message(tool: &str, problems: &[(String, String)], received: &Value) -> String {
    failure_message_within(tool, problems, received, DEFAULT_MAX_BYTES)
}

/// Pi's full validation error text. The echo of the received arguments is
/// cut at `max_bytes`: pretty-printing indents every line, so a large, deep
/// argument would otherwise come back many times its own size (an error
/// result skips the after-hook's output limits).
pub fn failure_message_within(
    tool: &str,
    problems: &[(String, String)],
    received: &Value,
    max_bytes: usize,
) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|(path, message)| format!("  - {path}: {message}"))
        .collect();
    let received = pretty_within(received, max_bytes);
    format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        lines.join("\n")
    )
}

/// `value` pretty-printed, cut at `max_bytes` (on a character boundary)
/// with a note saying so.
fn pretty_within(value: &Value, max_bytes: usize) -> String {
    struct Bounded {
        out: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.max.saturating_sub(self.out.len());
            self.out.extend_from_slice(&buf[..buf.len().min(room)]);
            if buf.len() > room {
                return Err(std::io::Error::other("full"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut sink = Bounded {
        out: Vec::new(),
        max: max_bytes,
    };
    let complete = serde_json::to_writer_pretty(&mut sink, value).is_ok();
    let text = String::from_utf8_lossy(&sink.out);
    if complete {
        return text.into_owned();
    }
    // A cut inside a character decodes to U+FFFD; drop it.
    let text = text.trim_end_matches('\u{FFFD}');
    format!("{text}\n… [cut at {}]", format_size(max_bytes))
}

/// A JSON pointer as the dotted path the model sees (`/edits/0/oldText` ->
/// `edits.0.oldText`; the empty pointer is `root`).
fn dotted(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_string();
    }
    pointer[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// Pi's name for a value's type.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn list_values(values: &Value) -> String {
    const LISTED: usize = 10;
    match values {
        Value::Array(items) if items.len() > LISTED => {
            let listed = serde_json::to_string(&items[..LISTED]).unwrap_or_default();
            format!(
                "{}, ... and {} more]",
                &listed[..listed.len() - 1],
                items.len() - LISTED
            )
        }
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Pi's message for one error, and where it points (a missing property is
/// reported at the property, not at its object).
fn describe(kind: &ValidationErrorKind, instance: &Value, pointer: String) -> (String, String) {
    use ValidationErrorKind as K;
    let message = match kind {
        K::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            return (child(&pointer, name), "missing".to_string());
        }
        K::AdditionalProperties { unexpected } => {
            let key = unexpected.first().cloned().unwrap_or_default();
            return (child(&pointer, &key), "unknown field".to_string());
        }
        K::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!("expected {expected}, got {}", type_name(instance))
        }
        K::Enum { options } => format!("expected one of {}", list_values(options)),
        K::Constant { expected_value } => format!(
            "expected {}",
            serde_json::to_string(expected_value.as_ref()).unwrap_or_default()
        ),
        K::MinLength { limit } => format!("expected at least {limit} characters"),
        K::MaxLength { limit } => format!("expected at most {limit} characters"),
        K::Pattern { pattern } => format!("expected to match {pattern}"),
        K::Format { format } => format!("expected format {format}"),
        K::Minimum { limit } => format!("expected >= {limit}"),
        K::Maximum { limit } => format!("expected <= {limit}"),
        K::ExclusiveMinimum { limit } => format!("expected > {limit}"),
        K::ExclusiveMaximum { limit } => format!("expected < {limit}"),
        K::MultipleOf { multiple_of, .. } => format!("expected a multiple of {multiple_of}"),
        K::MinItems { limit } => format!("expected at least {limit} items"),
        K::MaxItems { limit } => format!("expected at most {limit} items"),
        K::MinProperties { limit } => format!("expected at least {limit} properties"),
        K::MaxProperties { limit } => format!("expected at most {limit} properties"),
        K::UniqueItems => "expected unique items".to_string(),
        K::Contains => "expected at least 1 matching item".to_string(),
        K::AnyOf { .. } | K::OneOfNotValid { .. } => "matches no alternative".to_string(),
        K::OneOfMultipleValid { .. } => "matches more than one alternative".to_string(),
        K::Not { .. } => "must not match the schema in not".to_string(),
        K::FalseSchema => "no value is allowed here".to_string(),
        K::UnevaluatedProperties { .. } => "unknown field".to_string(),
        K::UnevaluatedItems { .. } => "unexpected item".to_string(),
        K::PropertyNames { .. } => "invalid property name".to_string(),
        other => format!("{other:?}"),
    };
    (pointer, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn problems(schema: Value, args: Value) -> Vec<(String, String)> {
        ArgumentSchema::compile(&schema)
            .unwrap()
            .check(&args)
            .unwrap_err()
    }

    #[test]
    fn missing_property_is_reported_at_its_name() {
        let schema = json!({"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}}});
        assert_eq!(
            problems(schema, json!({})),
            vec![("path".to_string(), "missing".to_string())]
        );
    }

    #[test]
    fn nested_paths_are_dotted() {
        let schema = json!({"type": "object", "properties": {"edits": {"type": "array",
            "items": {"type": "object", "required": ["newText"],
            "properties": {"newText": {"type": "string"}}}}}});
        assert_eq!(
            problems(schema.clone(), json!({"edits": [{"newText": 5}]})),
            vec![(
                "edits.0.newText".to_string(),
                "expected string, got integer".to_string()
            )]
        );
        assert_eq!(
            problems(schema, json!({"edits": [{}]})),
            vec![("edits.0.newText".to_string(), "missing".to_string())]
        );
    }

    #[test]
    fn root_type_errors_say_root() {
        let p = problems(json!({"type": "object"}), json!("x"));
        assert_eq!(
            p,
            vec![(
                "root".to_string(),
                "expected object, got string".to_string()
            )]
        );
    }

    #[test]
    fn the_whole_message_matches_pi() {
        let msg = failure_message(
            "read",
            &[("path".into(), "missing".into())],
            &json!({"limit": "x"}),
        );
        assert_eq!(
            msg,
            "Validation failed for tool \"read\":\n  - path: missing\n\nReceived arguments:\n{\n  \"limit\": \"x\"\n}"
        );
    }

    #[test]
    fn bounds_and_enums_use_pi_wording() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number", "minimum": 1},
            "mode": {"enum": ["a", "b"]},
            "extra": false
        }, "additionalProperties": false});
        let p = problems(schema, json!({"n": 0, "mode": "c", "zzz": 1}));
        assert!(p.contains(&("n".into(), "expected >= 1".into())), "{p:?}");
        assert!(
            p.contains(&("mode".into(), "expected one of [\"a\",\"b\"]".into())),
            "{p:?}"
        );
        assert!(p.contains(&("zzz".into(), "unknown field".into())), "{p:?}");
    }
}
