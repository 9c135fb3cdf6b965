//! Resource limits: what one call, one command or one batch may cost.
//!
//! Every input toolgate reads comes from someone it does not trust: the
//! model's arguments, the scripts it asks to run, the number of calls it
//! sends at once. Each limit here is checked in exactly one place, so every
//! front-end (CLI, hook, MCP) gets the same answer:
//!
//! - argument size and depth: [`check_arguments`], called by the policy's
//!   [`gather`](super::decide::gather) (so `eval` and hooks) and, before any
//!   of its own walks over the arguments, by the executor's preflight;
//! - shell command length and nesting: the shell analyzer
//!   ([`super::shell::analyze_with`]), judged by the policy's decide;
//! - calls per batch and calls running at once: the executor.
//!
//! Going over a limit is never a crash and never an allow: it is a deny (or
//! an error result) whose reason names the limit and says what to do.

use std::io::{self, Write};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::text::format_size;

/// The limits a policy sets (`limits:`), each with a safe default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// A tool call's time limit.
    #[serde(serialize_with = "serialize_secs")]
    pub timeout: Duration,
    /// Output kept per call, in bytes.
    pub max_output_bytes: u64,
    /// Output kept per call, in lines.
    pub max_output_lines: u64,
    /// Size of one call's arguments, as compact JSON.
    pub max_argument_bytes: u64,
    /// How deeply one call's arguments may nest arrays and objects
    /// (`{"a": [1]}` is 2 deep).
    pub max_argument_depth: u32,
    /// Length of a shell command argument, in bytes.
    pub max_command_bytes: u64,
    /// How deeply a shell command may nest: subshells, groups, control-flow
    /// bodies, `bash -c` bodies, command substitutions, wrappers (`sudo`,
    /// `env`, …) and `find -exec` each add a level.
    pub max_command_nesting: u32,
    /// Tool calls in one batch (one model message).
    pub max_batch_calls: u32,
    /// Tool calls executing at once in one gateway; more wait their turn.
    pub max_concurrent_calls: u32,
}

fn serialize_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The deepest `max_argument_depth` a policy may set: JSON parsers refuse
/// deeper input before toolgate sees it (serde_json's limit is 128), and
/// the walks over arguments must stay well inside a thread's stack.
pub const ARGUMENT_DEPTH_CEILING: u32 = 100;
/// The deepest `max_command_nesting` a policy may set; each level of a
/// `bash -c` body is one more parse.
pub const COMMAND_NESTING_CEILING: u32 = 64;
/// The longest `max_command_bytes` a policy may set: the analyzer parses the
/// whole script for every decision.
pub const COMMAND_BYTES_CEILING: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // Pi's DEFAULT_MAX_BYTES / DEFAULT_MAX_LINES.
            timeout: Duration::from_secs(120),
            max_output_bytes: 51_200,
            max_output_lines: 2000,
            // Far above any real edit or write (the default policy asks a
            // person about writes over 1 MB), far below what hurts a gateway.
            max_argument_bytes: 4 << 20,
            // Pi's tools nest 3 deep (edit's `edits[].oldText`).
            max_argument_depth: 32,
            max_command_bytes: 64 << 10,
            max_command_nesting: 16,
            max_batch_calls: 64,
            max_concurrent_calls: 16,
        }
    }
}

impl Limits {
    /// `text` cut to the output limits, head kept, with a notice when cut:
    /// for output a front-end hands back to a model without having run the
    /// tool itself (an agent CLI's tool output).
    pub fn clip(&self, text: &str) -> String {
        let lines = usize::try_from(self.max_output_lines).unwrap_or(usize::MAX);
        let bytes = usize::try_from(self.max_output_bytes).unwrap_or(usize::MAX);
        let t = crate::text::truncate_head(text, lines, bytes);
        if t.truncated() {
            format!(
                "{}\n[toolgate: truncated to {} of {} lines]",
                t.content, t.output_lines, t.total_lines
            )
        } else {
            t.content
        }
    }
}

/// Which limit a call, command or batch went over, with the numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitExceeded {
    /// A call's arguments are too large.
    ArgumentBytes {
        /// The tool called.
        tool: String,
        /// The limit.
        max: u64,
    },
    /// A call's arguments nest too deeply.
    ArgumentDepth {
        /// The tool called.
        tool: String,
        /// The limit.
        max: u32,
    },
    /// A shell command is too long.
    CommandBytes {
        /// Its length.
        bytes: usize,
        /// The limit.
        max: u64,
    },
    /// A shell command nests too deeply.
    CommandNesting {
        /// The limit.
        max: u32,
    },
    /// A shell command could not be parsed in the time allowed.
    CommandTooComplex {
        /// The time allowed, in milliseconds.
        max_ms: u64,
    },
    /// A batch has too many calls.
    BatchCalls {
        /// Calls in the batch.
        calls: usize,
        /// The limit.
        max: u32,
    },
}

impl LimitExceeded {
    /// The rule id reported with the decision: `limits.<setting>`.
    pub fn rule(&self) -> &'static str {
        match self {
            LimitExceeded::ArgumentBytes { .. } => "limits.max_argument_bytes",
            LimitExceeded::ArgumentDepth { .. } => "limits.max_argument_depth",
            LimitExceeded::CommandBytes { .. } => "limits.max_command_bytes",
            LimitExceeded::CommandNesting { .. } => "limits.max_command_nesting",
            // Not a policy setting: a fixed bound on the analyzer's time.
            LimitExceeded::CommandTooComplex { .. } => "commands.too_complex",
            LimitExceeded::BatchCalls { .. } => "limits.max_batch_calls",
        }
    }

    /// What happened and what to do instead, for the model.
    pub fn message(&self) -> String {
        let rule = self.rule();
        match self {
            LimitExceeded::ArgumentBytes { tool, max } => format!(
                "The arguments of tool {tool} are larger than {} ({rule}), so the call was not run. \
                 Send less in one call: split the content over several calls, or write it in parts.",
                format_size(usize::try_from(*max).unwrap_or(usize::MAX))
            ),
            LimitExceeded::ArgumentDepth { tool, max } => format!(
                "The arguments of tool {tool} nest arrays and objects more than {max} levels deep \
                 ({rule}), so the call was not run. Send flatter arguments."
            ),
            LimitExceeded::CommandBytes { bytes, max } => format!(
                "The command is {} long, over the limit of {} ({rule}), so it was not run. \
                 Split it into several shorter commands, or write the script to a file and run that.",
                format_size(*bytes),
                format_size(usize::try_from(*max).unwrap_or(usize::MAX))
            ),
            LimitExceeded::CommandNesting { max } => format!(
                "The command nests subshells, `bash -c` bodies, substitutions or wrappers more than \
                 {max} levels deep ({rule}), so it was not run. Run the inner commands directly."
            ),
            LimitExceeded::CommandTooComplex { max_ms } => format!(
                "The command could not be analyzed within {max_ms} ms ({rule}), so it was not run. \
                 Send simpler commands, one at a time."
            ),
            LimitExceeded::BatchCalls { calls, max } => format!(
                "This message has {calls} tool calls, over the limit of {max} per message ({rule}), \
                 so none of them was run. Send at most {max} tool calls at a time."
            ),
        }
    }
}

/// Checks a call's arguments against the size and depth limits. Depth is
/// checked first, without recursion, so that measuring the size (which
/// serializes) is safe on any input.
pub fn check_arguments(limits: &Limits, tool: &str, args: &Value) -> Result<(), LimitExceeded> {
    let Some(bound) = json_len_bound(args, limits.max_argument_depth as usize) else {
        return Err(LimitExceeded::ArgumentDepth {
            tool: tool.to_string(),
            max: limits.max_argument_depth,
        });
    };
    // The bound settles nearly every call; only a value that might be over
    // is measured exactly.
    if bound > limits.max_argument_bytes && json_len_over(args, limits.max_argument_bytes) {
        return Err(LimitExceeded::ArgumentBytes {
            tool: tool.to_string(),
            max: limits.max_argument_bytes,
        });
    }
    Ok(())
}

/// Checks the number of calls in a batch.
pub fn check_batch(limits: &Limits, calls: usize) -> Result<(), LimitExceeded> {
    if calls > limits.max_batch_calls as usize {
        return Err(LimitExceeded::BatchCalls {
            calls,
            max: limits.max_batch_calls,
        });
    }
    Ok(())
}

/// Most characters of a value [`preview`] shows.
pub const PREVIEW_CHARS: usize = 120;

/// `value` as compact JSON for a message, cut after [`PREVIEW_CHARS`]
/// characters: a reason that quotes a wrong argument must not grow with it.
pub fn preview(value: &Value) -> String {
    struct Capped {
        text: String,
        full: bool,
    }
    impl Write for Capped {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.text.push_str(&String::from_utf8_lossy(buf));
            if self.text.chars().count() > PREVIEW_CHARS {
                self.full = true;
                return Err(io::Error::other("enough"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    // Deeper than any parser hands over: do not recurse into it at all.
    if deeper_than(value, ARGUMENT_DEPTH_CEILING as usize) {
        return "(a value nested too deeply to show)".to_string();
    }
    let mut out = Capped {
        text: String::new(),
        full: false,
    };
    let _ = serde_json::to_writer(&mut out, value);
    if out.full {
        let mut cut: String = out.text.chars().take(PREVIEW_CHARS).collect();
        cut.push('…');
        cut
    } else {
        out.text
    }
}

/// True when `value` nests arrays and objects more than `max` levels deep.
/// An explicit stack, so the check itself cannot overflow on hostile input.
pub fn deeper_than(value: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth > max {
            return true;
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    false
}

/// An upper bound of `value`'s length as compact JSON, or `None` when it
/// nests arrays and objects more than `max_depth` levels deep (as
/// [`deeper_than`]). One walk, with an explicit stack (allocated only for
/// nested containers), so it cannot overflow on hostile input.
///
/// The bound: a string's bytes at most 6 times over (a control character
/// is written `\u00XX`) plus its quotes, a number at most 24 bytes
/// (`-2.2250738585072014e-308`; integers take at most 20), and the
/// brackets, commas and colons exactly.
fn json_len_bound(value: &Value, max_depth: usize) -> Option<u64> {
    fn string(s: &str) -> u64 {
        2 + 6 * s.len() as u64
    }
    fn leaf(v: &Value) -> u64 {
        match v {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(_) => 24,
            Value::String(s) => string(s),
            Value::Array(_) | Value::Object(_) => 0,
        }
    }
    /// A leaf is counted now; a container waits on the stack.
    fn child<'v>(c: &'v Value, depth: usize, stack: &mut Vec<(&'v Value, usize)>) -> u64 {
        if c.is_array() || c.is_object() {
            stack.push((c, depth + 1));
        }
        leaf(c)
    }
    /// Brackets, and one separator between two items.
    fn punctuation(n: usize) -> u64 {
        2 + n.saturating_sub(1) as u64
    }
    let mut bound: u64 = 0;
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 1));
    while let Some((v, depth)) = next.take().or_else(|| stack.pop()) {
        match v {
            Value::Array(items) => {
                if depth > max_depth {
                    return None;
                }
                bound = bound.saturating_add(punctuation(items.len()));
                for item in items {
                    bound = bound.saturating_add(child(item, depth, &mut stack));
                }
            }
            Value::Object(map) => {
                if depth > max_depth {
                    return None;
                }
                // Each entry also has its key and a colon.
                bound = bound.saturating_add(punctuation(map.len()) + map.len() as u64);
                for (key, item) in map {
                    bound = bound.saturating_add(string(key));
                    bound = bound.saturating_add(child(item, depth, &mut stack));
                }
            }
            other => bound = bound.saturating_add(leaf(other)),
        }
    }
    Some(bound)
}

/// True when `value` as compact JSON is longer than `max` bytes. Stops
/// serializing as soon as it is. Recursive (serde's serializer), so only
/// for values already known to be shallow ([`deeper_than`]).
fn json_len_over(value: &Value, max: u64) -> bool {
    struct Counter {
        written: u64,
        max: u64,
    }
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written += buf.len() as u64;
            if self.written > self.max {
                return Err(io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, max };
    serde_json::to_writer(&mut counter, value).is_err()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(depth: usize) -> Value {
        // By hand: `json!([v])` would serialize `v` again, recursively.
        let mut v = json!("x");
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn depth_counts_containers() {
        assert!(!deeper_than(&json!("x"), 0));
        assert!(!deeper_than(&json!({"a": 1}), 1));
        assert!(deeper_than(&json!({"a": [1]}), 1));
        assert!(!deeper_than(&json!({"a": [1]}), 2));
        assert!(!deeper_than(&nested(32), 32));
        assert!(deeper_than(&nested(33), 32));
    }

    #[test]
    fn a_deep_value_is_refused_without_recursion() {
        // Built and dropped by hand: serde_json's own Drop recurses.
        let deep = nested(20_000);
        let limits = Limits::default();
        let err = check_arguments(&limits, "read", &deep).unwrap_err();
        assert_eq!(err.rule(), "limits.max_argument_depth");
        assert!(err.message().contains("32 levels"), "{}", err.message());
        let mut v = deep;
        while let Value::Array(mut items) = v {
            v = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn size_is_the_compact_json_length() {
        let limits = Limits {
            max_argument_bytes: 12,
            ..Limits::default()
        };
        // {"a":"1234"} is 12 bytes.
        assert!(check_arguments(&limits, "t", &json!({"a": "1234"})).is_ok());
        let err = check_arguments(&limits, "t", &json!({"a": "12345"})).unwrap_err();
        assert_eq!(err.rule(), "limits.max_argument_bytes");
        assert!(
            err.message().contains("larger than 12B"),
            "{}",
            err.message()
        );
    }

    /// The limits as they were checked before the bound: depth, then the
    /// exact length.
    fn reference(limits: &Limits, args: &Value) -> Result<(), &'static str> {
        if deeper_than(args, limits.max_argument_depth as usize) {
            return Err("limits.max_argument_depth");
        }
        if json_len_over(args, limits.max_argument_bytes) {
            return Err("limits.max_argument_bytes");
        }
        Ok(())
    }

    fn hostile_values() -> Vec<Value> {
        vec![
            json!(null),
            json!(false),
            json!(-9_223_372_036_854_775_808i64),
            json!(u64::MAX),
            json!(-2.2250738585072014e-308),
            json!(1.7976931348623157e308),
            json!(-1e-7),
            json!("\u{0}\u{1f}\"\\\n"),
            json!("ünï©ødé ✓"),
            json!({"\u{7}key": ["\u{1}", {}, [], [[]]], "": null}),
            json!([[[[["deep"]]]]]),
            nested(40),
        ]
    }

    #[test]
    fn the_bound_is_never_below_the_length() {
        for v in hostile_values() {
            let exact = serde_json::to_string(&v).unwrap().len() as u64;
            let bound = json_len_bound(&v, 1000).unwrap();
            assert!(bound >= exact, "{v}: {bound} < {exact}");
            for depth in 0..8 {
                assert_eq!(
                    json_len_bound(&v, depth).is_none(),
                    deeper_than(&v, depth),
                    "{v} at {depth}"
                );
            }
        }
    }

    #[test]
    fn bounded_checks_answer_as_the_exact_ones() {
        for v in hostile_values() {
            let exact = serde_json::to_string(&v).unwrap().len() as u64;
            for max_bytes in [0, 1, exact.saturating_sub(1), exact, exact + 1, 4 << 20] {
                for max_depth in [0, 1, 3, 32] {
                    let limits = Limits {
                        max_argument_bytes: max_bytes,
                        max_argument_depth: max_depth,
                        ..Limits::default()
                    };
                    assert_eq!(
                        check_arguments(&limits, "t", &v).map_err(|e| e.rule()),
                        reference(&limits, &v),
                        "{v} within {max_bytes} B, {max_depth} levels"
                    );
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn random_values_get_the_exact_answer(
            v in json_value(),
            max_bytes in 0u64..200,
            max_depth in 0u32..5,
        ) {
            let exact = serde_json::to_string(&v).unwrap().len() as u64;
            proptest::prop_assert!(json_len_bound(&v, 100).unwrap() >= exact);
            let limits = Limits {
                max_argument_bytes: max_bytes,
                max_argument_depth: max_depth,
                ..Limits::default()
            };
            proptest::prop_assert_eq!(
                check_arguments(&limits, "t", &v).map_err(|e| e.rule()),
                reference(&limits, &v)
            );
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\a]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((any::<String>(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn previews_are_short() {
        assert_eq!(preview(&json!({"a": [1, "x"]})), r#"{"a":[1,"x"]}"#);
        let long = preview(&json!("y".repeat(10_000)));
        assert_eq!(long.chars().count(), PREVIEW_CHARS + 1);
        assert!(long.ends_with('…'));
        let deep = preview(&nested(200));
        assert_eq!(deep, "(a value nested too deeply to show)");
    }

    #[test]
    fn batches_over_the_limit_are_named() {
        let limits = Limits::default();
        assert!(check_batch(&limits, 64).is_ok());
        let err = check_batch(&limits, 65).unwrap_err();
        assert!(err.message().contains("65 tool calls"), "{}", err.message());
        assert!(err.message().contains("limits.max_batch_calls"));
    }
}
