//! Coercion's fast path: knowing, without running it, that coercion would
//! leave a call's arguments exactly as they are.
//!
//! Most tool schemas — and nearly every upstream server's — are objects of
//! plain properties (`{"type": "object", "properties": {"text": {"type":
//! "string"}}, "required": ["text"]}`; scalars, enums, arrays and nested
//! objects of such), and most calls already send the right types. For those, coercion's three passes would
//! rebuild every map and copy every value only to return an equal value.
//! [`Flat`] is read off the schema once (per tool, per policy snapshot) and
//! answers in one pass over the arguments, without allocating.
//!
//! It is conservative: it says "untouched" only where each pass provably
//! returns its input (see [`Flat::leaves_alone`]); anything else — a null, a
//! string for a number, one value where an array is expected, a schema with
//! `$ref`, `const`, a union or a tuple — goes through the full coercion.
//! The tests pin it to the full passes.

use serde_json::Value;

/// The schema keywords any coercion pass reads. A schema the fast path knows
/// carries only some of them (see [`Kind`]); everything else (`title`,
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

/// What one property's (or array item's) schema asks for, among the shapes
/// the fast path knows.
#[derive(Clone, Debug)]
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
    /// `enum`, alone or with one of the scalar types above.
    Enum {
        options: Vec<Value>,
        of: Option<Box<Kind>>,
    },
    /// `"type": "array"`, with `items` of a known kind or without `items`.
    Array(Option<Box<Kind>>),
    /// `"type": "object"`, shaped as [`Flat`] asks.
    Object(Flat),
}

/// An object schema (`"type": "object"`) whose properties are all
/// [`Kind`]s and whose `additionalProperties` is absent or a boolean.
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
                // Read only to drop the nulls a property's schema rejects,
                // which the fast path never takes.
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

    /// True when every coercion pass would return `args` unchanged: `args`
    /// is an object and each of its values that has a property schema
    /// already is what that schema asks for (see [`fits`]). Values without a
    /// property schema are never touched (`additionalProperties` is not a
    /// schema here).
    pub fn leaves_alone(&self, args: &Value) -> bool {
        let Value::Object(map) = args else {
            return false;
        };
        map.iter().all(
            |(key, value)| match self.properties.iter().find(|(name, _)| name == key) {
                Some((_, kind)) => fits(kind, value),
                None => true,
            },
        )
    }
}

/// True when coercion's passes return `value` unchanged under a schema of
/// `kind`, as an object's property or as an array's item. Only [`Kind::Any`]
/// and an `enum` listing null take a null (any other null is converted, or
/// dropped from its object).
///
/// - a scalar type: pass 2 converts to the type (a no-op for a value of it;
///   numbers go through `f64`, hence [`exact_integer`]), pass 3 leaves a
///   value of the type alone;
/// - `enum`: pass 2 returns a listed value as it is, pass 3 is the type's;
/// - an array: every pass maps the items through `items` (a non-array would
///   be wrapped in one);
/// - an object: every pass walks its properties as for the top level.
fn fits(kind: &Kind, value: &Value) -> bool {
    match kind {
        Kind::String => value.is_string(),
        Kind::Boolean => value.is_boolean(),
        Kind::Integer => exact_integer(value),
        Kind::Number => exact_integer(value) || value.as_f64().is_some_and(|f| f.fract() != 0.0),
        Kind::Any => true,
        Kind::Enum { options, of } => {
            options.contains(value) && of.as_deref().is_none_or(|k| fits(k, value))
        }
        Kind::Array(items) => match value {
            Value::Array(values) => items
                .as_deref()
                .is_none_or(|k| values.iter().all(|v| fits(k, v))),
            _ => false,
        },
        Kind::Object(flat) => flat.leaves_alone(value),
    }
}

/// The [`Kind`] of one property or item schema, if the fast path knows it.
fn kind(prop: &Value) -> Option<Kind> {
    let node = prop.as_object()?;
    // Of the keywords coercion reads, only `allowed` may be present.
    let only = |allowed: &[&str]| {
        READ_BY_COERCION
            .iter()
            .all(|k| allowed.contains(k) || !node.contains_key(*k))
    };
    let options = || node.get("enum").and_then(Value::as_array).cloned();
    let scalar = |k: Kind| {
        if only(&["type"]) {
            Some(k)
        } else if only(&["type", "enum"]) {
            Some(Kind::Enum {
                options: options()?,
                of: Some(Box::new(k)),
            })
        } else {
            None
        }
    };
    match node.get("type") {
        None if only(&[]) => Some(Kind::Any),
        None if only(&["enum"]) => Some(Kind::Enum {
            options: options()?,
            of: None,
        }),
        None => None,
        Some(Value::String(t)) => match t.as_str() {
            "string" => scalar(Kind::String),
            "boolean" => scalar(Kind::Boolean),
            "integer" => scalar(Kind::Integer),
            "number" => scalar(Kind::Number),
            "array" if only(&["type", "items"]) => match node.get("items") {
                None => Some(Kind::Array(None)),
                Some(items) => Some(Kind::Array(Some(Box::new(kind(items)?)))),
            },
            "object" => Flat::of(prop).map(Kind::Object),
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
