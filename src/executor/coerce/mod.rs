//! Argument coercion before validation, with Pi 1.6's rules.
//!
//! Models send `"42"` for a number, `null` for an omitted optional property,
//! one object where an array of them is expected. Pi repairs these before it
//! validates, and a gateway in front of Pi's tools must accept exactly what
//! Pi accepts — no more (a stricter gateway breaks agents), no less (a looser
//! one lets through arguments a tool was never written for).
//!
//! Three passes, each on the output of the previous one:
//!
//! 1. **optional nulls**: `null` in an optional property whose schema rejects
//!    null is dropped, as if the property were omitted;
//! 2. **conversion** by schema structure (`const`, `enum`, `anyOf`/`oneOf`,
//!    `allOf`, `type`, `items`, `properties`): `"3.5"` -> 3 for an integer,
//!    `null` -> `"null"` for a string, one value -> a one-item array, and a
//!    union takes the first branch whose conversion it accepts;
//! 3. **primitive coercion** by `type`, also for type arrays: what pass 2
//!    left, e.g. `"1"` for `["boolean", "number"]`, or `""` for `null`.
//!
//! A value that cannot be coerced is left as it is and validation reports it.
//! Whether a value "passes" a schema during coercion (for unions and optional
//! nulls) is judged structurally — types, `const`, `enum`, required and nested
//! properties and items — not by formats or bounds, which only validation
//! checks.

use serde_json::{Map, Value};

mod flat;
mod scalars;

pub use flat::Flat;

use scalars::{
    coerce_primitive, convert_literal, matches_type, number, try_boolean, try_null, try_number,
    try_string, types_of,
};

/// How deep coercion follows `$ref`s and nested schemas before it leaves the
/// rest as it is (validation still checks it). Bounds recursive schemas.
const MAX_DEPTH: usize = 64;

/// `value` coerced toward `schema` (the tool's whole parameter schema).
pub fn coerce(schema: &Value, value: Value) -> Value {
    let c = Coercer { root: schema };
    let value = c.drop_optional_nulls(schema, value, 0);
    let value = c.convert(schema, value, 0);
    c.coerce_types(schema, value, 0)
}

struct Coercer<'a> {
    root: &'a Value,
}

impl<'a> Coercer<'a> {
    /// A local `$ref` (`#/...`) resolved against the root schema.
    fn deref(&self, node: &'a Value) -> &'a Value {
        let mut node = node;
        for _ in 0..MAX_DEPTH {
            match node.get("$ref").and_then(Value::as_str) {
                Some(r) => match r.strip_prefix('#').and_then(|p| self.root.pointer(p)) {
                    Some(target) => node = target,
                    None => return node,
                },
                None => return node,
            }
        }
        node
    }

    // ----- pass 1: optional nulls -------------------------------------------

    fn drop_optional_nulls(&self, schema: &'a Value, value: Value, depth: usize) -> Value {
        let schema = self.deref(schema);
        if depth > MAX_DEPTH || !schema.is_object() {
            return value;
        }
        match value {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema(schema, i) {
                        Some(s) => self.drop_optional_nulls(s, item, depth + 1),
                        None => item,
                    })
                    .collect(),
            ),
            Value::Object(map) => {
                let props = schema.get("properties").and_then(Value::as_object);
                let required = required_set(schema);
                let mut out = Map::new();
                for (key, v) in map {
                    match props.and_then(|p| p.get(&key)) {
                        Some(prop) => {
                            let is_ref = prop.get("$ref").is_some();
                            if v.is_null()
                                && !required.contains(&key.as_str())
                                && !is_ref
                                && !self.passes(prop, &Value::Null, depth)
                            {
                                continue;
                            }
                            let v = self.drop_optional_nulls(prop, v, depth + 1);
                            out.insert(key, v);
                        }
                        None => {
                            let v = match schema.get("additionalProperties") {
                                Some(add) if add.is_object() => {
                                    self.drop_optional_nulls(add, v, depth + 1)
                                }
                                _ => v,
                            };
                            out.insert(key, v);
                        }
                    }
                }
                Value::Object(out)
            }
            other => other,
        }
    }

    // ----- pass 2: conversion by structure ----------------------------------

    fn convert(&self, schema: &'a Value, value: Value, depth: usize) -> Value {
        let node = self.deref(schema);
        if depth > MAX_DEPTH || !node.is_object() {
            return value;
        }
        if let Some(literal) = node.get("const") {
            return convert_literal(literal, value);
        }
        if let Some(Value::Array(options)) = node.get("enum") {
            if options.contains(&value) {
                return value;
            }
            for option in options {
                let candidate = convert_literal(option, value.clone());
                if &candidate == option {
                    return candidate;
                }
            }
            return value;
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = node.get(key) {
                return self.convert_union(node, branches, value, depth);
            }
        }
        if let Some(Value::Array(members)) = node.get("allOf") {
            let mut v = value;
            for m in members {
                v = self.convert(m, v, depth + 1);
            }
            return self.convert_members(node, v, depth);
        }
        match node.get("type").and_then(Value::as_str) {
            Some("string") => try_string(&value).unwrap_or(value),
            Some("number") => try_number(&value).map(number).unwrap_or(value),
            Some("integer") => try_number(&value)
                .map(|n| number(n.trunc()))
                .unwrap_or(value),
            Some("boolean") => try_boolean(&value).map(Value::Bool).unwrap_or(value),
            Some("null") => {
                if try_null(&value) {
                    Value::Null
                } else {
                    value
                }
            }
            Some("array") => self.convert_array(node, value, depth),
            Some("object") => self.convert_object(node, value, depth),
            None if node.get("properties").is_some() => self.convert_object(node, value, depth),
            None if node.get("items").is_some() || node.get("prefixItems").is_some() => {
                self.convert_array(node, value, depth)
            }
            _ => value,
        }
    }

    fn convert_union(
        &self,
        node: &'a Value,
        branches: &'a [Value],
        value: Value,
        depth: usize,
    ) -> Value {
        if branches.iter().any(|b| self.passes(b, &value, depth)) {
            return self.convert_members(node, value, depth);
        }
        for branch in branches {
            let candidate = self.convert(branch, value.clone(), depth + 1);
            let candidate = self.convert_members(node, candidate, depth);
            if self.passes(node, &candidate, depth) {
                return candidate;
            }
        }
        self.convert_members(node, value, depth)
    }

    /// A union node that also declares properties converts them too.
    fn convert_members(&self, node: &'a Value, value: Value, depth: usize) -> Value {
        let declares = ["properties", "additionalProperties"]
            .iter()
            .any(|k| node.get(*k).is_some());
        if declares {
            self.convert_object(node, value, depth)
        } else {
            value
        }
    }

    fn convert_array(&self, node: &'a Value, value: Value, depth: usize) -> Value {
        let prefix = node
            .get("prefixItems")
            .or_else(|| node.get("items").filter(|i| i.is_array()))
            .and_then(Value::as_array);
        if let Some(prefix) = prefix {
            // A tuple converts its items and never wraps a single value.
            let Value::Array(items) = value else {
                return value;
            };
            let rest = node.get("items").filter(|i| !i.is_array());
            return Value::Array(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| match prefix.get(i).or(rest) {
                        Some(s) => self.convert(s, item, depth + 1),
                        None => item,
                    })
                    .collect(),
            );
        }
        let items_schema = node.get("items");
        match value {
            Value::Array(items) => match items_schema {
                Some(s) => Value::Array(
                    items
                        .into_iter()
                        .map(|item| self.convert(s, item, depth + 1))
                        .collect(),
                ),
                None => Value::Array(items),
            },
            // One value where an array is expected: a one-item array.
            single => {
                let item = match items_schema {
                    Some(s) if s.is_object() => self.convert(s, single, depth + 1),
                    _ => single,
                };
                Value::Array(vec![item])
            }
        }
    }

    fn convert_object(&self, node: &'a Value, value: Value, depth: usize) -> Value {
        let Value::Object(map) = value else {
            return value;
        };
        let props = node.get("properties").and_then(Value::as_object);
        let additional = node.get("additionalProperties").filter(|a| a.is_object());
        Value::Object(
            map.into_iter()
                .map(|(key, v)| {
                    let v = match props.and_then(|p| p.get(&key)).or(additional) {
                        Some(s) => self.convert(s, v, depth + 1),
                        None => v,
                    };
                    (key, v)
                })
                .collect(),
        )
    }

    // ----- pass 3: primitive coercion by type -------------------------------

    fn coerce_types(&self, schema: &'a Value, value: Value, depth: usize) -> Value {
        let schema = self.deref(schema);
        if depth > MAX_DEPTH || !schema.is_object() {
            return value;
        }
        let mut next = value;
        if let Some(Value::Array(members)) = schema.get("allOf") {
            for m in members {
                next = self.coerce_types(m, next, depth + 1);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = schema.get(key) {
                next = self.coerce_union(branches, next, depth);
            }
        }
        let types = types_of(schema);
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
        if !types.is_empty() && !matches_member {
            for t in &types {
                if let Some(candidate) = coerce_primitive(&next, t) {
                    next = candidate;
                    break;
                }
            }
        }
        if types.contains(&"object") {
            if let Value::Object(map) = next {
                let props = schema.get("properties").and_then(Value::as_object);
                let additional = schema.get("additionalProperties").filter(|a| a.is_object());
                next = Value::Object(
                    map.into_iter()
                        .map(|(k, v)| {
                            let v = match props.and_then(|p| p.get(&k)).or(additional) {
                                Some(s) => self.coerce_types(s, v, depth + 1),
                                None => v,
                            };
                            (k, v)
                        })
                        .collect(),
                );
            }
        }
        if types.contains(&"array") {
            if let Value::Array(items) = next {
                next = Value::Array(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, item)| match item_schema(schema, i) {
                            Some(s) => self.coerce_types(s, item, depth + 1),
                            None => item,
                        })
                        .collect(),
                );
            }
        }
        next
    }

    fn coerce_union(&self, branches: &'a [Value], value: Value, depth: usize) -> Value {
        if branches.iter().any(|b| self.passes(b, &value, depth)) {
            return value;
        }
        for branch in branches {
            let coerced = self.coerce_types(branch, value.clone(), depth + 1);
            if self.passes(branch, &coerced, depth) {
                return coerced;
            }
        }
        value
    }

    // ----- structural check -------------------------------------------------

    /// Whether `value` has the shape `schema` asks for (see the module doc).
    fn passes(&self, schema: &'a Value, value: &Value, depth: usize) -> bool {
        let schema = self.deref(schema);
        if depth > MAX_DEPTH {
            return true;
        }
        let node = match schema {
            Value::Bool(b) => return *b,
            Value::Object(node) => node,
            _ => return true,
        };
        let types = types_of(schema);
        if !types.is_empty() && !types.iter().any(|t| matches_type(value, t)) {
            return false;
        }
        if node.get("const").is_some_and(|c| c != value) {
            return false;
        }
        if let Some(Value::Array(options)) = node.get("enum") {
            if !options.contains(value) {
                return false;
            }
        }
        if let Some(Value::Array(members)) = node.get("allOf") {
            if !members.iter().all(|m| self.passes(m, value, depth + 1)) {
                return false;
            }
        }
        if let Some(Value::Array(branches)) = node.get("anyOf") {
            if !branches.iter().any(|b| self.passes(b, value, depth + 1)) {
                return false;
            }
        }
        if let Some(Value::Array(branches)) = node.get("oneOf") {
            if branches
                .iter()
                .filter(|b| self.passes(b, value, depth + 1))
                .count()
                != 1
            {
                return false;
            }
        }
        match value {
            Value::Object(map) => {
                if required_set(schema).iter().any(|k| !map.contains_key(*k)) {
                    return false;
                }
                let props = node.get("properties").and_then(Value::as_object);
                for (k, v) in map {
                    match props.and_then(|p| p.get(k)) {
                        Some(s) => {
                            if !self.passes(s, v, depth + 1) {
                                return false;
                            }
                        }
                        None => match node.get("additionalProperties") {
                            Some(Value::Bool(false)) => return false,
                            Some(add) if add.is_object() && !self.passes(add, v, depth + 1) => {
                                return false
                            }
                            _ => {}
                        },
                    }
                }
                true
            }
            Value::Array(items) => items.iter().enumerate().all(|(i, item)| {
                item_schema(schema, i).is_none_or(|s| self.passes(s, item, depth + 1))
            }),
            _ => true,
        }
    }
}

fn required_set(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The schema of the item at `index`: a tuple's prefix item, else `items`.
fn item_schema(schema: &Value, index: usize) -> Option<&Value> {
    if let Some(Value::Array(tuple)) = schema.get("items") {
        return tuple.get(index);
    }
    if let Some(Value::Array(prefix)) = schema.get("prefixItems") {
        if index < prefix.len() {
            return prefix.get(index);
        }
    }
    schema.get("items")
}

#[cfg(test)]
mod tests;
