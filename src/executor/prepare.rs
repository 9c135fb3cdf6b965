//! A manifest's declarative argument migrations (Pi's `prepareArguments`).
//!
//! Models keep sending arguments in shapes a tool used to accept: edit's
//! legacy top-level `oldText`/`newText`, `edits` as a JSON string, a CLI's own
//! argument names. Instead of code per tool, a manifest lists `[[prepare]]`
//! steps; they run in order on a copy, before coercion and validation.

use serde_json::{Map, Value};

use crate::config::manifest::PrepareStep;

/// `args` after every step. Arguments that are not an object pass unchanged
/// (validation reports them).
pub fn prepare(steps: &[PrepareStep], args: &Value) -> Value {
    let Value::Object(map) = args else {
        return args.clone();
    };
    if steps.is_empty() {
        return args.clone();
    }
    let mut map = map.clone();
    for step in steps {
        if let Some(rename) = &step.rename {
            if !map.contains_key(&rename.to) {
                if let Some(v) = map.remove(&rename.from) {
                    map.insert(rename.to.clone(), v);
                }
            }
        }
        if let Some(name) = &step.parse_json {
            parse_json(&mut map, name);
        }
        if let Some(wrap) = &step.wrap {
            let present = wrap.fields.iter().all(|f| map.contains_key(f));
            if present {
                let mut item = Map::new();
                for f in &wrap.fields {
                    if let Some(v) = map.remove(f) {
                        item.insert(f.clone(), v);
                    }
                }
                let mut list = match map.remove(&wrap.into) {
                    Some(Value::Array(items)) => items,
                    Some(other) => vec![other],
                    None => Vec::new(),
                };
                list.push(Value::Object(item));
                map.insert(wrap.into.clone(), Value::Array(list));
            }
        }
    }
    Value::Object(map)
}

/// A string argument that holds JSON for an array or object is replaced by
/// it; any other string is left for validation to report.
fn parse_json(map: &mut Map<String, Value>, name: &str) {
    let Some(Value::String(text)) = map.get(name) else {
        return;
    };
    if let Ok(parsed @ (Value::Array(_) | Value::Object(_))) = serde_json::from_str(text) {
        map.insert(name.to_string(), parsed);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::embedded_manifests;

    fn edit_steps() -> Vec<PrepareStep> {
        let (_, text) = embedded_manifests()
            .find(|(name, _)| name.starts_with("edit"))
            .expect("edit manifest");
        let m: crate::config::manifest::Manifest = toml::from_str(text).unwrap();
        m.prepare
    }

    #[test]
    fn legacy_old_and_new_text_become_one_edit() {
        let args = json!({"path": "a.txt", "oldText": "foo", "newText": "bar"});
        assert_eq!(
            prepare(&edit_steps(), &args),
            json!({"path": "a.txt", "edits": [{"oldText": "foo", "newText": "bar"}]})
        );
        // The input is not modified.
        assert_eq!(args["oldText"], "foo");
    }

    #[test]
    fn edits_as_a_json_string_are_parsed() {
        let args = json!({"path": "a", "edits": "[{\"oldText\":\"x\",\"newText\":\"y\"}]"});
        assert_eq!(
            prepare(&edit_steps(), &args)["edits"],
            json!([{"oldText": "x", "newText": "y"}])
        );
        // Not JSON: left for validation to report.
        let args = json!({"path": "a", "edits": "oops"});
        assert_eq!(prepare(&edit_steps(), &args)["edits"], json!("oops"));
    }

    #[test]
    fn legacy_fields_are_appended_to_given_edits() {
        let args = json!({"path": "a", "edits": [{"oldText": "1", "newText": "2"}],
            "oldText": "3", "newText": "4"});
        assert_eq!(
            prepare(&edit_steps(), &args)["edits"],
            json!([{"oldText": "1", "newText": "2"}, {"oldText": "3", "newText": "4"}])
        );
    }

    #[test]
    fn rename_keeps_an_explicit_new_name() {
        let step: PrepareStep =
            toml::from_str("rename = { from = \"file_path\", to = \"path\" }").unwrap();
        let steps = vec![step];
        assert_eq!(
            prepare(&steps, &json!({"file_path": "a"})),
            json!({"path": "a"})
        );
        assert_eq!(
            prepare(&steps, &json!({"file_path": "a", "path": "b"})),
            json!({"file_path": "a", "path": "b"})
        );
    }
}
