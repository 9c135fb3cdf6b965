//! Conversions of single values, as JavaScript and TypeBox do them: what
//! Pi's coercion produces for `"42"`, `true`, `null`, `"0x10"` and friends.

use serde_json::{Number, Value};

pub(super) fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

pub(super) fn matches_type(value: &Value, ty: &str) -> bool {
    match ty {
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

pub(super) fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// A JSON number from an f64, as an integer when it is one (so `42` prints
/// as `42`, not `42.0`).
pub(super) fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

/// JavaScript's `String(x)` of a number: integers without a fraction.
pub(super) fn js_number_string(n: &Number) -> String {
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e21 && !n.is_i64() && !n.is_u64() => {
            format!("{}", f as i64)
        }
        _ => n.to_string(),
    }
}

pub(super) fn convert_literal(literal: &Value, value: Value) -> Value {
    if literal == &value {
        return value;
    }
    let converted = match literal {
        Value::String(_) => try_string(&value),
        Value::Number(_) => try_number(&value).map(number),
        Value::Bool(_) => try_boolean(&value).map(Value::Bool),
        _ => None,
    };
    match converted {
        Some(c) if &c == literal => c,
        _ => value,
    }
}

pub(super) fn try_string(value: &Value) -> Option<Value> {
    match value {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(n) => Some(Value::String(js_number_string(n))),
        Value::Null => Some(Value::String("null".into())),
        Value::String(_) => Some(value.clone()),
        _ => None,
    }
}

/// JavaScript's `+s` for a string: trimmed, empty is 0, hex/octal/binary
/// prefixes, `Infinity` is not finite.
pub(super) fn js_string_to_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            return u64::from_str_radix(digits, radix).ok().map(|n| n as f64);
        }
    }
    let valid = t
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    if !valid {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}

pub(super) fn try_number(value: &Value) -> Option<f64> {
    match value {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(0.0),
        Value::String(s) => {
            if let Some(f) = js_string_to_number(s) {
                return Some(f);
            }
            match s.to_lowercase().as_str() {
                "false" => Some(0.0),
                "true" => Some(1.0),
                _ => big_int_of_string(s),
            }
        }
        _ => None,
    }
}

/// TypeBox's big-integer spellings: `12n`, and `12.5` truncated.
pub(super) fn big_int_of_string(s: &str) -> Option<f64> {
    let digits = s.strip_suffix('n').unwrap_or(s);
    let int_part = digits.split('.').next().unwrap_or("");
    let unsigned = int_part.strip_prefix('-').unwrap_or(int_part);
    let canonical = unsigned == "0" || (!unsigned.starts_with('0') && !unsigned.is_empty());
    if canonical && unsigned.chars().all(|c| c.is_ascii_digit()) {
        let f: f64 = int_part.parse().ok()?;
        (f.abs() <= 9_007_199_254_740_991.0).then_some(f)
    } else {
        None
    }
}

pub(super) fn try_boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        Value::Null => Some(false),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(false)
            } else if lower == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

pub(super) fn try_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    }
}

/// Pass 3's coercion of one primitive to `ty`; `None` when it does not apply.
pub(super) fn coerce_primitive(value: &Value, ty: &str) -> Option<Value> {
    match ty {
        "number" | "integer" => match value {
            Value::Null => Some(number(0.0)),
            Value::String(s) if !s.trim().is_empty() => {
                let f = js_string_to_number(s)?;
                (ty == "number" || f.fract() == 0.0).then(|| number(f))
            }
            Value::Bool(b) => Some(number(if *b { 1.0 } else { 0.0 })),
            _ => None,
        },
        "boolean" => match value {
            Value::Null => Some(Value::Bool(false)),
            Value::String(s) if s == "true" => Some(Value::Bool(true)),
            Value::String(s) if s == "false" => Some(Value::Bool(false)),
            Value::Number(n) if n.as_f64() == Some(1.0) => Some(Value::Bool(true)),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Bool(false)),
            _ => None,
        },
        "string" => match value {
            Value::Null => Some(Value::String(String::new())),
            Value::Number(n) => Some(Value::String(js_number_string(n))),
            Value::Bool(b) => Some(Value::String(b.to_string())),
            _ => None,
        },
        "null" => match value {
            Value::String(s) if s.is_empty() => Some(Value::Null),
            Value::Number(n) if n.as_f64() == Some(0.0) => Some(Value::Null),
            Value::Bool(false) => Some(Value::Null),
            _ => None,
        },
        _ => None,
    }
}
