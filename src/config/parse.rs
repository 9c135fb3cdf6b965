//! Parsing one file into its serde struct, with every error positioned.
//!
//! Policy files are deserialized section by section (and rule by rule), so a
//! typo in `paths:` does not hide a bad rule further down: one run reports all.

use serde::de::DeserializeOwned;
use serde_yaml::Value;

use super::diagnostics::{did_you_mean, Diagnostic, Diagnostics, Position};
use super::manifest::Manifest;
use super::policy_file::{PolicyFile, POLICY_FIELDS};
use super::yaml::SourceMap;
use super::SourceFile;

/// The 1-based line and column of byte offset `byte` in `text`.
pub fn position_of(text: &str, byte: usize) -> Position {
    let byte = byte.min(text.len());
    let before = &text.as_bytes()[..byte];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    Position { line, col }
}

/// A list of rules (`rules:`, `results:`), each item parsed on its own so
/// one broken rule does not hide the problems of the others.
fn rule_list<T: DeserializeOwned>(
    file: &SourceFile,
    map: &SourceMap,
    key: &str,
    value: Value,
    diags: &mut Diagnostics,
    into: &mut Vec<T>,
) {
    match value {
        Value::Sequence(items) => {
            for (i, item) in items.into_iter().enumerate() {
                if let Some(rule) = section(file, map, &format!("{key}.{i}"), item, diags) {
                    into.push(rule);
                }
            }
        }
        Value::Null => {}
        _ => diags.push(
            Diagnostic::new(
                &file.name,
                map.value(key),
                format!("`{key}` must be a list"),
            )
            .with_help("write each rule as a `- id: …` item"),
        ),
    }
}

/// `rules.1.when` -> `rules[1].when`, the way people read paths.
pub fn display_path(dotted: &str) -> String {
    let mut out = String::new();
    for seg in dotted.split('.').filter(|s| !s.is_empty()) {
        if seg.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!("[{seg}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        }
    }
    out
}

/// Parses a policy file, reporting every section's problems.
pub fn policy(file: &SourceFile) -> Result<(PolicyFile, SourceMap), Diagnostics> {
    let value: Value = match serde_yaml::from_str(&file.text) {
        Ok(v) => v,
        Err(e) => {
            let pos = e
                .location()
                .map(|l| Position {
                    line: l.line(),
                    col: l.column(),
                })
                .unwrap_or_default();
            let message = strip_location(&e.to_string());
            let help = if message.contains("repetition limit")
                || message.contains("recursion limit")
            {
                "this file expands into too much data (YAML aliases or nesting); write the values out instead"
            } else {
                "fix the YAML syntax at this position"
            };
            return Err(
                Diagnostic::new(&file.name, pos, format!("invalid YAML: {message}"))
                    .with_help(help)
                    .into(),
            );
        }
    };
    policy_value(file, value)
}

/// Reads a policy file whose text was already parsed into `value` (the
/// embedded default arrives as JSON); positions still come from the text.
pub fn policy_value(
    file: &SourceFile,
    value: Value,
) -> Result<(PolicyFile, SourceMap), Diagnostics> {
    let mut diags = Diagnostics::default();
    let map = SourceMap::build(&file.text);
    let Value::Mapping(root) = value else {
        return Err(Diagnostic::new(
            &file.name,
            Position::default(),
            "a policy file must be a mapping with `version: 1` at the top",
        )
        .with_help("start the file with `version: 1`")
        .into());
    };

    let mut policy = PolicyFile::default();
    let mut has_version = false;
    for (key, value) in root {
        let Some(key) = key.as_str().map(str::to_string) else {
            diags.push(Diagnostic::new(
                &file.name,
                Position::default(),
                "top-level keys must be strings",
            ));
            continue;
        };
        let ok = match key.as_str() {
            "version" => {
                has_version = true;
                section(file, &map, "version", value, &mut diags).map(|v| policy.version = v)
            }
            "extends" => {
                section(file, &map, "extends", value, &mut diags).map(|v| policy.extends = v)
            }
            "mode" => section(file, &map, "mode", value, &mut diags).map(|v| policy.mode = v),
            "tools" => section(file, &map, "tools", value, &mut diags).map(|v| policy.tools = v),
            "paths" => section(file, &map, "paths", value, &mut diags).map(|v| policy.paths = v),
            "commands" => {
                section(file, &map, "commands", value, &mut diags).map(|v| policy.commands = v)
            }
            "redact" => section(file, &map, "redact", value, &mut diags).map(|v| policy.redact = v),
            "terminate" => {
                section(file, &map, "terminate", value, &mut diags).map(|v| policy.terminate = v)
            }
            "limits" => section(file, &map, "limits", value, &mut diags).map(|v| policy.limits = v),
            "auth" => section(file, &map, "auth", value, &mut diags).map(|v| policy.auth = v),
            "sandbox" => {
                section(file, &map, "sandbox", value, &mut diags).map(|v| policy.sandbox = v)
            }
            "rules" => {
                rule_list(file, &map, "rules", value, &mut diags, &mut policy.rules);
                Some(())
            }
            "results" => {
                rule_list(
                    file,
                    &map,
                    "results",
                    value,
                    &mut diags,
                    &mut policy.results,
                );
                Some(())
            }
            other => {
                let mut d = Diagnostic::new(
                    &file.name,
                    map.key(other),
                    format!("unknown field `{other}`"),
                );
                d = match did_you_mean(other, POLICY_FIELDS) {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")),
                    None => d.with_help(format!("expected one of {}", quote_list(POLICY_FIELDS))),
                };
                diags.push(d);
                Some(())
            }
        };
        let _ = ok;
    }
    if !has_version && diags.is_empty() {
        diags.push(
            Diagnostic::new(&file.name, Position::default(), "missing field `version`")
                .with_help("add `version: 1` at the top of the file"),
        );
    } else if has_version && policy.version != 1 {
        diags.push(
            Diagnostic::new(
                &file.name,
                map.value("version"),
                format!("unsupported version {}", policy.version),
            )
            .with_help("this toolgate reads `version: 1`"),
        );
    }
    if diags.is_empty() {
        Ok((policy, map))
    } else {
        Err(diags)
    }
}

/// Deserializes one section, turning a failure into a positioned diagnostic.
fn section<T: DeserializeOwned>(
    file: &SourceFile,
    map: &SourceMap,
    base: &str,
    value: Value,
    diags: &mut Diagnostics,
) -> Option<T> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(v) => Some(v),
        Err(e) => {
            let mut path = base.to_string();
            for seg in e.path().iter() {
                use serde_path_to_error::Segment;
                let s = match seg {
                    Segment::Seq { index } => index.to_string(),
                    Segment::Map { key } => key.clone(),
                    Segment::Enum { variant } => variant.clone(),
                    Segment::Unknown => continue,
                };
                path.push('.');
                path.push_str(&s);
            }
            diags.push(describe_serde_error(
                file,
                map,
                &path,
                &e.into_inner().to_string(),
            ));
            None
        }
    }
}

fn describe_serde_error(file: &SourceFile, map: &SourceMap, path: &str, raw: &str) -> Diagnostic {
    let message = strip_location(raw);
    let shown = display_path(path);
    if let Some((field, help)) = unknown_field(&message) {
        // serde_path_to_error's path already ends at the unknown field.
        let parent = path.strip_suffix(&format!(".{field}")).unwrap_or(path);
        let pos = map.key(&format!("{parent}.{field}"));
        let d = Diagnostic::new(
            &file.name,
            pos,
            format!("unknown field `{field}` in `{}`", display_path(parent)),
        );
        return d.with_help(help);
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or_default();
        return Diagnostic::new(
            &file.name,
            map.value(path),
            format!("`{shown}` is missing the required field `{field}`"),
        )
        .with_help(format!("add `{field}:`"));
    }
    if message.starts_with("unknown variant `") {
        return Diagnostic::new(
            &file.name,
            map.value(path),
            format!("invalid value at `{shown}`: {message}"),
        )
        .with_help("use one of the listed values");
    }
    if message.contains("did not match any variant of untagged enum CommandEntry") {
        return Diagnostic::new(&file.name, map.value(path), format!("invalid command entry at `{shown}`"))
            .with_help("write a pattern string such as `\"git push\"` (quote words YAML reads as booleans or numbers, like `\"true\"`), or `{ pattern: \"git push\", id: …, reason: … }`");
    }
    if message.contains("did not match any variant of untagged enum ByteSize") {
        return Diagnostic::new(
            &file.name,
            map.value(path),
            format!("invalid size at `{shown}`"),
        )
        .with_help("write a number of bytes or a size such as `1MB`");
    }
    Diagnostic::new(
        &file.name,
        map.value(path),
        format!("invalid value at `{shown}`: {message}"),
    )
    .with_help("see `toolgate schema policy` for the format")
}

/// For serde's "unknown field `x`, expected one of `a`, `b`": the field and
/// a "did you mean" (or "expected one of") hint.
fn unknown_field(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let field = rest.split('`').next().unwrap_or_default();
    let expected: Vec<&str> = rest
        .split("expected ")
        .nth(1)
        .map(|e| e.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    let help = match did_you_mean(field, &expected) {
        Some(s) => format!("did you mean `{s}`?"),
        None if !expected.is_empty() => format!("expected one of {}", quote_list(&expected)),
        None => "remove it".to_string(),
    };
    Some((field.to_string(), help))
}

fn strip_location(message: &str) -> String {
    // serde_yaml appends " at line L column C"; the diagnostic carries it already.
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a tool manifest.
pub fn manifest(file: &SourceFile) -> Result<Manifest, Diagnostics> {
    toml::from_str::<Manifest>(&file.text).map_err(|e| {
        let pos = e
            .span()
            .map(|s| position_of(&file.text, s.start))
            .unwrap_or_default();
        let message = e.message().trim().to_string();
        let help = match unknown_field(&message) {
            Some((_, help)) => help,
            None => "see `toolgate schema manifest` for the format".to_string(),
        };
        Diagnostic::new(&file.name, pos, format!("invalid manifest: {message}"))
            .with_help(help)
            .into()
    })
}

/// Parses an upstream server manifest (a `[server]` table).
pub fn server_manifest(file: &SourceFile) -> Result<super::server::ServerManifest, Diagnostics> {
    toml::from_str::<super::server::ServerManifest>(&file.text).map_err(|e| {
        let pos = e
            .span()
            .map(|s| position_of(&file.text, s.start))
            .unwrap_or_default();
        let message = e.message().trim().to_string();
        Diagnostic::new(
            &file.name,
            pos,
            format!("invalid server manifest: {message}"),
        )
        .with_help("see docs/upstream.md for the `[server]` format")
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(text: &str) -> SourceFile {
        SourceFile {
            name: "p.yaml".into(),
            path: None,
            text: text.into(),
        }
    }

    #[test]
    fn reports_every_section_error_with_positions() {
        let text = "version: 1\ncomands:\n  allow: [ls]\npaths:\n  roots: [\".\"]\n  denny: []\nrules:\n  - id: a\n    whn: {}\n    decision: deny\n";
        let err = policy(&src(text)).unwrap_err();
        let rendered = err.to_human();
        assert_eq!(err.len(), 3, "{rendered}");
        assert!(
            rendered.contains("p.yaml:2:1: error: unknown field `comands`"),
            "{rendered}"
        );
        assert!(rendered.contains("did you mean `commands`?"), "{rendered}");
        assert!(
            rendered.contains("p.yaml:6:3: error: unknown field `denny` in `paths`"),
            "{rendered}"
        );
        assert!(rendered.contains("did you mean `deny`?"), "{rendered}");
        assert!(
            rendered.contains("p.yaml:9:5: error: unknown field `whn` in `rules[0]`"),
            "{rendered}"
        );
    }

    #[test]
    fn syntax_errors_carry_the_parser_position() {
        let err = policy(&src("version: 1\ntools:\n  active: [read\n")).unwrap_err();
        let d = &err.0[0];
        assert!(d.message.starts_with("invalid YAML"), "{d}");
        assert!(d.line >= 3, "{d}");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let prev = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let err = policy(&src(&text)).unwrap_err();
        assert!(
            err.to_human().contains("too much data") || err.to_human().contains("unknown field"),
            "{err}"
        );
        assert!(
            err.to_human().contains("repetition limit") || err.to_human().contains("recursion"),
            "{err}"
        );
    }

    #[test]
    fn manifest_errors_point_at_the_key() {
        let text = "name = \"x\"\ndescription = \"d\"\nimplementation = { builtin = \"read\" }\nparameters = { type = \"object\" }\nexecution_mod = \"parallel\"\n";
        let file = SourceFile {
            name: "x.toml".into(),
            path: None,
            text: text.into(),
        };
        let err = manifest(&file).unwrap_err();
        let d = &err.0[0];
        assert_eq!((d.line, d.col), (5, 1), "{d}");
        assert_eq!(
            d.help.as_deref(),
            Some("did you mean `execution_mode`?"),
            "{d}"
        );
    }
}
