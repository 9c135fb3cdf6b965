//! Coercion's fast path: knowing, without running it, that coercion would
//! leave a call's arguments exactly as they are.
//!
//! Most tool schemas — and nearly every upstream server's — are one flat
//! object of plain scalar properties (`{"type": "object", "properties":
//! {"text": {"type": "string"}}, "required": ["text"]}`), and most calls
//! already send the right types. For those, coercion's three passes would
//! rebuild every map and copy every value only to return an equal value.
//! [`Flat`] is read off the schema once (per tool, per policy snapshot) and
//! answers in one pass over the arguments, without allocating.
//!
//! It is conservative: it says "untouched" only where each pass provably
//! returns its input (see [`Flat::leaves_alone`]); anything else — a null, a
//! string for a number, a nested object under a typed property, a schema
//! with `$ref`, `enum` or a union — goes through the full coercion. The
//! tests pin it to the full passes.

use serde_json::{Map, Value};

/// The schema keywords any coercion pass reads. A property schema may carry
/// `type` among them (see [`Kind`]); everything else (`title`,
/// `description`, `default`, `format`, bounds…) only validation reads.
const READ_BY_COERCION: [&str; 12] = [
    "$ref",
    "const",
    "enum",
    "anyOf",
    "oneOf",
    "allOf",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
];

/// What one property's schema asks for, among the shapes the fast path
/// knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `"type": "string"`.
    String,
    /// `"type": "boolean"`.
    Boolean,
    /// `"type": "integer"`.
    Integer,
    /// `"type": "number"`.
    Number,
    /// No keyword coercion reads: every value passes unchanged.
    Any,
}

/// An object schema whose properties are all [`Kind`]s and whose
/// `additionalProperties` is absent or a boolean.
#[derive(Clone, Debug)]
pub struct Flat {
    properties: Vec<(String, Kind)>,
}

/// Integers up to this size survive coercion's trip through `f64`.
const EXACT_INTEGER: u64 = 9_007_199_254_740_992;

impl Flat {
    /// The fast path for `schema`, or `None` when its shape is not one the
    /// fast path knows (then coercion always runs in full).
    pub fn of(schema: &Value) -> Option<Flat> {
        let node = schema.as_object()?;
        for key in READ_BY_COERCION {
            let Some(v) = node.get(key) else { continue };
            let allowed = match key {
                "type" => v.as_str() == Some("object"),
                "properties" => v.is_object(),
                // Read only to drop nulls, which the fast path never takes.
                "required" => true,
                "additionalProperties" => v.is_boolean(),
                _ => false,
            };
            if !allowed {
                return None;
            }
        }
        // Without `"type": "object"` the last pass does not visit the
        // properties; the full path handles that rarer shape.
        node.get("type")?;
        let properties = match node.get("properties") {
            Some(Value::Object(props)) => props
                .iter()
                .map(|(name, prop)| Some((name.clone(), kind(prop)?)))
                .collect::<Option<Vec<_>>>()?,
            _ => Vec::new(),
        };
        Some(Flat { properties })
    }

    /// True when every coercion pass would return `args` unchanged:
    /// `args` is an object and each of its values that has a property
    /// schema already has that property's type — a string for a string; a
    /// boolean for a boolean; for a number, an integer that `f64` holds
    /// exactly or a number with a fraction; for an integer, such an
    /// integer. Values without a property schema are never touched
    /// (`additionalProperties` is not a schema here).
    pub fn leaves_alone(&self, args: &Value) -> bool {
        let Value::Object(map) = args else {
            return false;
        };
        self.fits(map)
    }

    fn fits(&self, map: &Map<String, Value>) -> bool {
        map.iter().all(|(key, value)| {
            let Some((_, kind)) = self.properties.iter().find(|(name, _)| name == key) else {
                return true;
            };
            match kind {
                Kind::String => value.is_string(),
                Kind::Boolean => value.is_boolean(),
                Kind::Integer => exact_integer(value),
                Kind::Number => {
                    exact_integer(value) || value.as_f64().is_some_and(|f| f.fract() != 0.0)
                }
                Kind::Any => true,
            }
        })
    }
}

/// The [`Kind`] of one property schema, if the fast path knows it.
fn kind(prop: &Value) -> Option<Kind> {
    let node = prop.as_object()?;
    if READ_BY_COERCION
        .iter()
        .any(|k| *k != "type" && node.contains_key(*k))
    {
        return None;
    }
    match node.get("type") {
        None => Some(Kind::Any),
        Some(Value::String(t)) => match t.as_str() {
            "string" => Some(Kind::String),
            "boolean" => Some(Kind::Boolean),
            "integer" => Some(Kind::Integer),
            "number" => Some(Kind::Number),
            _ => None,
        },
        Some(_) => None,
    }
}

/// An integer JSON number that `f64` holds exactly (coercion turns numbers
/// into `f64` and back).
fn exact_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.as_u64().is_some_and(|u| u < EXACT_INTEGER)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() < EXACT_INTEGER)
        }
        _ => false,
    }
}
