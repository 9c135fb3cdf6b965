//! `commands.exec_options` and `commands.exec_env`: a policy's additions to
//! the shipped escape-hatch table, checked and merged into
//! [`ExecRules`]. Layers only add hatches; where two name the same option
//! or variable with different kinds, the stricter kind wins.

use super::err_at;
use crate::config::diagnostics::{Diagnostic, Diagnostics};
use crate::config::policy_file::{ExecEnv, ExecKind, ExecOptions};
use crate::config::PolicyLayer;
use crate::policy::shell::{ExecRules, ValueKind};

/// Compiles every layer's additions.
pub(super) fn compile_exec(layers: &[PolicyLayer], diags: &mut Diagnostics) -> ExecRules {
    let mut rules = ExecRules::default();
    let mut env: Vec<(String, ExecKind)> = Vec::new();
    for layer in layers {
        let Some(c) = &layer.policy.commands else {
            continue;
        };
        for (program, options) in &c.exec_options {
            let at = format!("commands.exec_options.{program}");
            if let Err(e) = check_program(program) {
                diags.push(
                    Diagnostic::new(&layer.file.name, layer.map.key(&at), e).with_help(
                        "write the program's name as it is run, without a path, e.g. `mytool`",
                    ),
                );
                continue;
            }
            let entries: Vec<(String, ExecKind, String)> = match options {
                ExecOptions::Names(names) => names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.clone(), ExecKind::Program, format!("{at}.{i}")))
                    .collect(),
                ExecOptions::Kinds(map) => kinds(map, &at, layer, diags),
            };
            let mut added = Vec::new();
            for (name, kind, path) in entries {
                match check_option(&name) {
                    Ok(()) => added.push((name, kind)),
                    Err(e) => err_at(
                        diags,
                        layer,
                        &path,
                        format!("invalid option `{name}` in `commands.exec_options.{program}`: {e}"),
                        "write the option as it is typed: `--hook`, `-x` (a short option, also found in groups like `-ax`), `-hook` (single-dash long) or `+*` (a word starting with +)",
                    ),
                }
            }
            let current = rules.program(program).cloned().unwrap_or_default();
            let merged = added.into_iter().map(|(name, kind)| {
                let kind = value_kind(kind);
                let kind = match current.option(&name).map(|(_, k)| k) {
                    Some(old) if rank(old) > rank(&kind) => old.clone(),
                    _ => kind,
                };
                (name, kind)
            });
            rules.add_options(program, merged.collect::<Vec<_>>());
        }
        let entries: Vec<(String, ExecKind, String)> = match &c.exec_env {
            None => Vec::new(),
            Some(ExecEnv::Names(names)) => names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    (
                        n.clone(),
                        ExecKind::Program,
                        format!("commands.exec_env.{i}"),
                    )
                })
                .collect(),
            Some(ExecEnv::Kinds(map)) => kinds(map, "commands.exec_env", layer, diags),
        };
        for (name, kind, path) in entries {
            let problem = check_variable(&name).err().or_else(|| {
                (kind == ExecKind::Argv)
                    .then(|| "`argv` is for options; a variable holds one string".to_string())
            });
            if let Some(e) = problem {
                err_at(
                    diags,
                    layer,
                    &path,
                    format!("invalid variable `{name}` in `commands.exec_env`: {e}"),
                    "write a variable name such as `MYTOOL_HOOK`, or a prefix such as `MYTOOL_*`, with kind command, program, opaque or write",
                );
                continue;
            }
            match env.iter_mut().find(|(n, _)| *n == name) {
                Some((_, old)) if rank(&value_kind(*old)) >= rank(&value_kind(kind)) => {}
                Some((_, old)) => *old = kind,
                None => env.push((name, kind)),
            }
        }
    }
    for (name, kind) in env {
        rules.env.insert(&name, value_kind(kind));
    }
    rules
}

/// The `NAME: kind` entries of a map, each with its source path; a kind
/// that does not exist is reported at its position.
fn kinds(
    map: &std::collections::BTreeMap<String, String>,
    at: &str,
    layer: &PolicyLayer,
    diags: &mut Diagnostics,
) -> Vec<(String, ExecKind, String)> {
    let mut out = Vec::new();
    for (name, kind) in map {
        let path = format!("{at}.{name}");
        match ExecKind::parse(kind) {
            Some(k) => out.push((name.clone(), k, path)),
            None => err_at(
                diags,
                layer,
                &path,
                format!("unknown kind `{kind}` for `{name}` in `{at}`"),
                format!("use one of: {}", ExecKind::NAMES.join(", ")),
            ),
        }
    }
    out
}

fn value_kind(kind: ExecKind) -> ValueKind {
    match kind {
        ExecKind::Command => ValueKind::Command,
        ExecKind::Program => ValueKind::Program,
        ExecKind::Opaque => ValueKind::Opaque,
        ExecKind::Write => ValueKind::Write,
        ExecKind::Argv => ValueKind::Argv,
    }
}

/// How strict a kind is, for merging layers: a program is also analyzed as
/// a command, and opaque is unparsed whatever the value.
fn rank(kind: &ValueKind) -> u8 {
    match kind {
        ValueKind::Plain => 0,
        ValueKind::Write => 1,
        ValueKind::Command | ValueKind::BangCommand | ValueKind::Argv => 2,
        ValueKind::Program => 3,
        _ => 4,
    }
}

fn check_program(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
        return Err(format!(
            "`{name}` in `commands.exec_options` is not a program name"
        ));
    }
    Ok(())
}

fn check_option(name: &str) -> Result<(), String> {
    if name == "+*" {
        return Ok(());
    }
    if !name.starts_with('-') || name.len() < 2 || name == "--" {
        return Err("an option starts with `-` and has a name".to_string());
    }
    if name.contains(|c: char| c.is_whitespace() || c == '=') {
        return Err("an option name has no spaces or `=`".to_string());
    }
    Ok(())
}

fn check_variable(name: &str) -> Result<(), String> {
    let stem = name.strip_suffix('*').unwrap_or(name);
    let valid = !stem.is_empty()
        && !stem.starts_with(|c: char| c.is_ascii_digit())
        && stem.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err("a variable name has only letters, digits and `_` (and may end with `*`)".to_string())
    }
}
