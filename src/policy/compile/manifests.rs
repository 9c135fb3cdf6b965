//! Compiling tool manifests: every manifest is checked (schema, effects,
//! prepare steps, dialects) and problems point at the manifest's line.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::tools::{ToolInfo, ToolSet, BUILTINS};
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::manifest::{
    parse_exec_word, ExecWordPart, Implementation, Manifest, DIALECT_KEYS,
};
use crate::config::manifest_positions::ManifestPositions;
use crate::config::parse::position_of;
use crate::config::LoadedManifest;
use crate::policy::Access;

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
    // (CLI, the CLI's tool name) -> the manifest that maps it.
    let mut claimed: HashMap<(String, String), String> = HashMap::new();
    for lm in manifests {
        let m = &lm.manifest;
        let file = &lm.file;
        let positions = ManifestPositions::new(&file.text);
        let name = m.name.clone();
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
                    positions.name(),
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
                    positions.name(),
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
        let schema_pos = || toml_key_position(&file.text, "parameters");
        if m.parameters.get("type").and_then(Value::as_str) != Some("object") {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    schema_pos(),
                    "`[parameters]` must be a JSON Schema with `type = \"object\"`",
                )
                .with_help("add `type = \"object\"` under `[parameters]`"),
            );
            ok = false;
        } else if let Err(e) = validate_schema(file, &m.parameters) {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    schema_pos(),
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
        // An array of strings is a list of paths (each judged like one).
        let string_items = |arg: &str| {
            props
                .and_then(|p| p.get(arg))
                .and_then(|p| p.pointer("/items/type"))
                .and_then(Value::as_str)
                == Some("string")
        };
        for (arg, access) in &m.effects.paths {
            match prop_type(arg) {
                Some("string") => path_args.push((arg.clone(), (*access).into())),
                Some("array") if string_items(arg) => {
                    path_args.push((arg.clone(), (*access).into()))
                }
                Some(t) => {
                    diags.push(
                        Diagnostic::new(
                            &file.name,
                            positions.effects_path(arg),
                            format!(
                                "path argument `{}` has type `{t}`; path arguments must be strings or arrays of strings",
                                arg
                            ),
                        )
                        .with_help("declare it with `type = \"string\"` (or an array with `items.type = \"string\"`)"),
                    );
                    ok = false;
                }
                None => {
                    diags.push(
                        Diagnostic::new(
                            &file.name,
                            positions.effects_path(arg),
                            format!(
                                "`effects.paths` names `{}`, which is not a parameter of `{name}`",
                                arg
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
            if prop_type(cmd) == Some("string") {
                command_arg = Some(cmd.clone());
            } else {
                diags.push(Diagnostic::new(&file.name, positions.effects_command(), format!("`effects.command` names `{}`, which is not a string parameter of `{name}`", cmd))
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
        let dialect_errors = check_dialects(m, &name, &path_args, &prop_type);
        for (cli, message, help) in &dialect_errors {
            diags.push(
                Diagnostic::new(&file.name, dialect_position(&file.text, cli), message)
                    .with_help(help),
            );
        }
        ok &= dialect_errors.is_empty();
        for (cli, entries) in &m.dialects {
            for d in &entries.0 {
                if let Some(other) =
                    claimed.insert((cli.clone(), d.name.clone()), file.name.clone())
                {
                    diags.push(
                        Diagnostic::new(
                            &file.name,
                            dialect_position(&file.text, cli),
                            format!(
                                "dialect `{cli}` tool `{}` is already mapped by {other}",
                                d.name
                            ),
                        )
                        .with_help("map each of a CLI's tools onto one toolgate tool"),
                    );
                    ok = false;
                }
            }
        }
        if ok {
            set.tools.insert(
                name,
                ToolInfo {
                    manifest: Arc::clone(m),
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
        Implementation::Upstream { .. } => return true,
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
    for (i, v) in m.exec.iter().flat_map(|e| &e.env).enumerate() {
        if v.is_empty() || v.contains(['=', '\0']) {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    ManifestPositions::new(&file.text).exec_env(i),
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

/// Where `[dialects.CLI]` or the first `[[dialects.CLI]]` opens.
fn dialect_position(text: &str, cli: &str) -> Position {
    let key = format!("dialects.{cli}");
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let rest = t.trim_start_matches('[');
        if t.starts_with('[')
            && (rest.starts_with(&format!("{key}]")) || rest.starts_with(&format!("{key}.")))
        {
            return Position {
                line: i + 1,
                col: line.len() - t.len() + 1,
            };
        }
    }
    toml_key_position(text, &key)
}

/// Problems with a manifest's `[dialects.*]` tables, as (CLI, message,
/// help): unknown CLIs, targets that are not parameters, and `workdir` /
/// `patch` settings the tool cannot honour.
fn check_dialects<'p>(
    m: &Manifest,
    name: &str,
    path_args: &[(String, Access)],
    prop_type: &dyn Fn(&str) -> Option<&'p str>,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (cli, entries) in &m.dialects {
        let mut err =
            |message: String, help: &str| out.push((cli.clone(), message, help.to_string()));
        if !DIALECT_KEYS.contains(&cli.as_str()) {
            let help = match crate::config::diagnostics::did_you_mean(cli, DIALECT_KEYS) {
                Some(s) => format!("did you mean `{s}`? Dialects: {}", DIALECT_KEYS.join(", ")),
                None => format!("use one of: {}", DIALECT_KEYS.join(", ")),
            };
            err(format!("unknown dialect `{cli}`"), &help);
            continue;
        }
        for d in &entries.0 {
            if d.name.is_empty() || (cli == "mcp" && !d.name.starts_with("mcp__")) {
                err(
                    format!("dialect `{cli}` has an invalid tool name `{}`", d.name),
                    "give the CLI's own tool name; MCP tools are named `mcp__SERVER__TOOL`",
                );
            }
            for target in d.args.values() {
                if prop_type(target).is_none() {
                    err(format!("dialect `{cli}` maps onto `{target}`, which is not a parameter of `{name}`"), "map each of the CLI's arguments onto a property of `[parameters]`");
                }
            }
            for arg in d.ignore.iter().filter(|a| d.args.contains_key(*a)) {
                err(
                    format!("dialect `{cli}` both maps and ignores `{arg}`"),
                    "keep it in `args` or in `ignore`, not both",
                );
            }
            if d.workdir.is_some() && m.effects.command.is_none() {
                err(
                    format!(
                        "dialect `{cli}` sets `workdir`, but `{name}` declares no command argument"
                    ),
                    "`workdir` is for tools with `effects.command`",
                );
            }
            if let Some(p) = &d.patch {
                if !path_args
                    .iter()
                    .any(|(a, access)| *a == p.path && *access == Access::Write)
                {
                    err(format!("dialect `{cli}` patch path `{}` is not a write path argument of `{name}`", p.path), "name an argument declared in `effects.paths` as \"write\"");
                }
                if let Some(c) = &p.content {
                    if prop_type(c) != Some("string") {
                        err(format!("dialect `{cli}` patch content `{c}` is not a string parameter of `{name}`"), "name a property of `[parameters]` with `type = \"string\"`");
                    }
                }
            }
        }
    }
    out
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
    fn dialect_mistakes_are_load_errors() {
        let dir = tempfile::tempdir().unwrap();
        let head = "description = \"d\"\nimplementation = { builtin = \"write\" }\n\n[parameters]\ntype = \"object\"\nproperties.path = { type = \"string\" }\nproperties.n = { type = \"number\" }\n\n[effects]\npaths = { path = \"read\" }\n\n";
        for (file, dialects) in [
            ("a.toml", "[dialects.calude]\nname = \"Read\"\n"),
            ("b.toml", "[dialects.codex]\nname = \"apply_patch\"\npatch = { from = \"command\", path = \"path\", content = \"n\" }\n"),
            ("c.toml", "[dialects.gemini]\nname = \"x\"\nworkdir = \"dir_path\"\nargs = { p = \"path\" }\nignore = [\"p\"]\n"),
            ("d.toml", "[[dialects.claude]]\nname = \"Read\"\n[[dialects.claude]]\nname = \"View\"\nargs = { f = \"nope\" }\n[dialects.mcp]\nname = \"github_get\"\n"),
            ("e.toml", "[dialects.claude]\nname = \"Read\"\n"),
        ] {
            let name = file.trim_end_matches(".toml");
            std::fs::write(dir.path().join(file), format!("name = \"{name}\"\n{head}{dialects}")).unwrap();
        }
        let policy = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(policy.path(), "version: 1\n").unwrap();
        let paths = crate::config::ConfigPaths {
            policies: Some(policy.path().to_path_buf()),
            manifests: Some(dir.path().to_path_buf()),
        };
        let loaded = crate::config::load(&paths).unwrap();
        let text = compile(&loaded, &CompileOptions::default())
            .unwrap_err()
            .to_human();
        for want in [
            "a.toml:13:1: error: unknown dialect `calude`",
            "did you mean `claude`?",
            "b.toml:13:1: error: dialect `codex` patch path `path` is not a write path argument of `b`",
            "dialect `codex` patch content `n` is not a string parameter of `b`",
            "c.toml:13:1: error: dialect `gemini` both maps and ignores `p`",
            "dialect `gemini` sets `workdir`, but `c` declares no command argument",
            "d.toml:13:1: error: dialect `claude` maps onto `nope`, which is not a parameter of `d`",
            "dialect `mcp` has an invalid tool name `github_get`",
            "e.toml:13:1: error: dialect `claude` tool `Read` is already mapped by",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
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
