//! Compiling tool manifests: every manifest is checked (schema, effects,
//! prepare steps, dialects) and problems point at the manifest's line.

use serde_json::Value;

use super::super::tools::{ToolInfo, ToolSet, BUILTINS};
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::manifest::{parse_exec_word, ExecWordPart, Implementation};
use crate::config::parse::position_of;
use crate::config::LoadedManifest;

/// The line where `key` is first assigned or opens a table, for manifest
/// errors that have no span of their own.
fn toml_key_position(text: &str, key: &str) -> Position {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with(&format!("[{key}"))
            || t.starts_with(&format!("{key} "))
            || t.starts_with(&format!("{key}="))
            || t.starts_with(&format!("{key}."))
        {
            return Position {
                line: i + 1,
                col: line.len() - t.len() + 1,
            };
        }
    }
    Position { line: 1, col: 1 }
}

pub(super) fn compile_tools(manifests: &[LoadedManifest], diags: &mut Diagnostics) -> ToolSet {
    let mut set = ToolSet::default();
    for lm in manifests {
        let m = &lm.manifest;
        let file = &lm.file;
        let at_span = |span: std::ops::Range<usize>| position_of(&file.text, span.start);
        let name = m.name.get_ref().clone();
        let mut ok = true;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || name.len() > 64
        {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    at_span(m.name.span()),
                    format!("invalid tool name `{name}`"),
                )
                .with_help("use 1-64 letters, digits, `_` or `-`"),
            );
            ok = false;
        }
        if let Some(prev) = set.tools.get(&name) {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    at_span(m.name.span()),
                    format!("tool `{name}` is already defined in {}", prev.file),
                )
                .with_help("give each manifest a unique `name`"),
            );
            ok = false;
        }
        match &m.implementation {
            Implementation::Builtin(b) if !BUILTINS.contains(&b.as_str()) => {
                diags.push(
                    Diagnostic::new(
                        &file.name,
                        toml_key_position(&file.text, "implementation"),
                        format!("unknown builtin `{b}`"),
                    )
                    .with_help(format!(
                        "use one of {}, or `exec = [...]`",
                        BUILTINS.join(", ")
                    )),
                );
                ok = false;
            }
            Implementation::Exec(argv)
                if argv.is_empty() || argv[0].is_empty() || argv[0].contains('{') =>
            {
                diags.push(Diagnostic::new(&file.name, toml_key_position(&file.text, "implementation"), "`exec` must start with a fixed program name")
                    .with_help("write e.g. `exec = [\"rg\", \"--json\", \"{pattern}\"]`; the program itself cannot come from an argument"));
                ok = false;
            }
            _ => {}
        }
        ok &= check_exec(lm, &name, diags);
        let schema_pos = toml_key_position(&file.text, "parameters");
        if m.parameters.get("type").and_then(Value::as_str) != Some("object") {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    schema_pos,
                    "`[parameters]` must be a JSON Schema with `type = \"object\"`",
                )
                .with_help("add `type = \"object\"` under `[parameters]`"),
            );
            ok = false;
        } else if let Err(e) = validate_schema(file, &m.parameters) {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    schema_pos,
                    format!("`[parameters]` is not a valid JSON Schema: {e}"),
                )
                .with_help("fix the schema (JSON Schema 2020-12, written as TOML)"),
            );
            ok = false;
        }
        let props = m.parameters.get("properties").and_then(Value::as_object);
        let prop_type = |arg: &str| {
            props
                .and_then(|p| p.get(arg))
                .map(|p| p.get("type").and_then(Value::as_str).unwrap_or(""))
        };
        let mut path_args = Vec::new();
        for (arg, access) in &m.effects.paths {
            match prop_type(arg.get_ref()) {
                Some("string") => path_args.push((arg.get_ref().clone(), (*access).into())),
                Some(t) => {
                    diags.push(
                        Diagnostic::new(
                            &file.name,
                            at_span(arg.span()),
                            format!(
                                "path argument `{}` has type `{t}`; path arguments must be strings",
                                arg.get_ref()
                            ),
                        )
                        .with_help("declare it with `type = \"string\"`"),
                    );
                    ok = false;
                }
                None => {
                    diags.push(
                        Diagnostic::new(
                            &file.name,
                            at_span(arg.span()),
                            format!(
                                "`effects.paths` names `{}`, which is not a parameter of `{name}`",
                                arg.get_ref()
                            ),
                        )
                        .with_help("name a property of `[parameters]`"),
                    );
                    ok = false;
                }
            }
        }
        let mut command_arg = None;
        if let Some(cmd) = &m.effects.command {
            if prop_type(cmd.get_ref()) == Some("string") {
                command_arg = Some(cmd.get_ref().clone());
            } else {
                diags.push(Diagnostic::new(&file.name, at_span(cmd.span()), format!("`effects.command` names `{}`, which is not a string parameter of `{name}`", cmd.get_ref()))
                    .with_help("name a property of `[parameters]` with `type = \"string\"`"));
                ok = false;
            }
        }
        for (i, step) in m.prepare.iter().enumerate() {
            let set_count = [
                step.rename.is_some(),
                step.parse_json.is_some(),
                step.wrap.is_some(),
            ]
            .iter()
            .filter(|b| **b)
            .count();
            if set_count != 1 {
                diags.push(Diagnostic::new(&file.name, toml_key_position(&file.text, "[[prepare"), format!("prepare step {} must have exactly one of `rename`, `parse_json`, `wrap`", i + 1))
                    .with_help("split it into one `[[prepare]]` table per step"));
                ok = false;
            }
        }
        for (cli, dialect) in &m.dialects {
            for target in dialect.args.values() {
                if prop_type(target).is_none() {
                    diags.push(Diagnostic::new(&file.name, toml_key_position(&file.text, &format!("[dialects.{cli}")), format!("dialect `{cli}` maps onto `{target}`, which is not a parameter of `{name}`"))
                        .with_help("map each of the CLI's arguments onto a property of `[parameters]`"));
                    ok = false;
                }
            }
        }
        if ok {
            set.tools.insert(
                name,
                ToolInfo {
                    manifest: m.clone(),
                    file: file.name.clone(),
                    path_args,
                    command_arg,
                },
            );
        }
    }
    set
}

/// Checks an exec tool's placeholders and `[exec]` table: every `{name}`
/// must be a parameter, environment names must be plain names, and
/// `[exec]` belongs to exec tools only. False when something is wrong.
fn check_exec(lm: &LoadedManifest, tool: &str, diags: &mut Diagnostics) -> bool {
    let (m, file) = (&lm.manifest, &lm.file);
    let mut ok = true;
    let argv = match &m.implementation {
        Implementation::Exec(argv) => argv,
        Implementation::Builtin(b) => {
            if m.exec.is_some() {
                diags.push(
                    Diagnostic::new(
                        &file.name,
                        table_position(&file.text, "[exec]"),
                        format!(
                            "`[exec]` applies to exec tools, but `{tool}` is the builtin `{b}`"
                        ),
                    )
                    .with_help("remove `[exec]`, or use `implementation = { exec = [...] }`"),
                );
                return false;
            }
            return true;
        }
    };
    let props = m.parameters.get("properties").and_then(Value::as_object);
    let implementation_line = toml_key_position(&file.text, "implementation").line;
    for word in argv.iter().skip(1) {
        for part in parse_exec_word(word) {
            let ExecWordPart::Arg(arg) = part else {
                continue;
            };
            if props.is_some_and(|p| p.contains_key(&arg)) {
                continue;
            }
            let placeholder = format!("{{{arg}}}");
            let pos = file
                .text
                .match_indices(&placeholder)
                .map(|(i, _)| position_of(&file.text, i))
                .find(|p| p.line >= implementation_line)
                .unwrap_or_else(|| toml_key_position(&file.text, "implementation"));
            diags.push(
                Diagnostic::new(
                    &file.name,
                    pos,
                    format!("exec placeholder `{placeholder}` names `{arg}`, which is not a parameter of `{tool}`"),
                )
                .with_help(format!(
                    "name a property of `[parameters]`, or write `{{{{{arg}}}}}` for the literal text `{placeholder}`"
                )),
            );
            ok = false;
        }
    }
    for var in m.exec.iter().flat_map(|e| &e.env) {
        let v = var.get_ref();
        if v.is_empty() || v.contains(['=', '\0']) {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    position_of(&file.text, var.span().start),
                    format!("`exec.env` entry `{v}` is not an environment variable name"),
                )
                .with_help(
                    "list names of variables to pass through, e.g. `env = [\"PATH\", \"HOME\"]`",
                ),
            );
            ok = false;
        }
    }
    ok
}

/// Where a table header such as `[exec]` starts; line 1 when absent.
fn table_position(text: &str, header: &str) -> Position {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.trim_start().starts_with(header))
        .map(|(i, l)| Position {
            line: i + 1,
            col: l.len() - l.trim_start().len() + 1,
        })
        .unwrap_or(Position { line: 1, col: 1 })
}

/// Checks a manifest's schema against the JSON Schema meta-schema. Building
/// the meta-schema validator is most of a cold start's cost, so a manifest
/// whose text is byte-for-byte a built-in one (checked by this crate's tests)
/// is not checked again.
fn validate_schema(file: &crate::config::SourceFile, schema: &Value) -> Result<(), String> {
    if crate::config::is_embedded_manifest_text(&file.text) {
        return Ok(());
    }
    jsonschema::meta::validate(schema).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::{compile, CompileOptions};

    #[test]
    fn builtin_manifests_have_valid_schemas() {
        // The cold-start path skips the meta-schema check for these texts.
        for (name, text) in crate::config::embedded_manifests() {
            let m: crate::config::Manifest = toml::from_str(text).unwrap();
            assert!(jsonschema::meta::validate(&m.parameters).is_ok(), "{name}");
        }
    }

    #[test]
    fn invalid_schemas_are_load_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("x.toml"),
            "name = \"x\"\ndescription = \"d\"\nimplementation = { builtin = \"read\" }\n\n[parameters]\ntype = \"object\"\nproperties.a = { type = \"strnig\" }\n",
        )
        .unwrap();
        let paths = crate::config::ConfigPaths {
            policies: None,
            manifests: Some(dir.path().to_path_buf()),
        };
        let loaded = crate::config::load(&paths).unwrap();
        let err = compile(&loaded, &CompileOptions::default()).unwrap_err();
        let text = err.to_human();
        assert!(
            text.contains("x.toml:5:1: error: `[parameters]` is not a valid JSON Schema"),
            "{text}"
        );
    }
}
