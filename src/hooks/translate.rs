//! From an agent CLI's tool call to toolgate calls, through the manifests'
//! `[dialects.*]` tables.
//!
//! Translation only renames: the CLI's tool becomes the manifest's tool, its
//! arguments the manifest's arguments. What the call may do is then decided
//! by the policy like any other call. Three things need more than a rename,
//! and each is declared in the manifest, not written here per CLI:
//!
//! - `ignore`: arguments that do not matter to the policy are dropped, and an
//!   argument that is neither mapped nor ignored refuses the call (a field the
//!   CLI adds later must not slip past unjudged);
//! - `workdir`: the argument naming the directory a command runs in;
//! - `patch`: an argument holding a Codex patch, one call per file it writes.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::patch;
use crate::config::manifest::Dialect;
use crate::policy::limits::preview;
use crate::policy::tools::ToolInfo;
use crate::{Policy, ToolCall};

/// One toolgate call made from the CLI's call.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    /// The call, named and shaped as the manifest says.
    pub call: ToolCall,
    /// The directory its command runs in, when the CLI said.
    pub workdir: Option<String>,
}

/// What a CLI's call becomes.
#[derive(Clone, Debug, PartialEq)]
pub enum Translation {
    /// Calls of manifest tools: one, or one per file for a patch.
    Calls(Vec<Mapped>),
    /// No manifest maps this tool: the policy's `tools.unknown` decides.
    Unknown,
    /// The call cannot be judged as sent; deny it with this rule and reason.
    Refused {
        /// The rule id reported.
        rule: &'static str,
        /// Why, and what to change.
        reason: String,
    },
}

/// The manifest and dialect entry that map `cli`'s tool `name`: the CLI's own
/// table first, then `[dialects.mcp]` for `mcp__SERVER__TOOL` names.
pub fn find<'p>(
    policy: &'p Policy,
    cli: &str,
    name: &str,
) -> Option<(&'p ToolInfo, &'p Dialect, &'static str)> {
    let lookup = |key: &'static str| {
        policy.tools.tools.values().find_map(|tool| {
            let entries = tool.manifest.dialects.get(key)?;
            let d = entries.0.iter().find(|d| d.name == name)?;
            Some((tool, d, key))
        })
    };
    let cli_key = match cli {
        "claude" => "claude",
        "codex" => "codex",
        "gemini" => "gemini",
        _ => return None,
    };
    lookup(cli_key).or_else(|| {
        if name.starts_with("mcp__") {
            lookup("mcp")
        } else {
            None
        }
    })
}

/// Translates `cli`'s call of `name` with `input`.
pub fn translate(
    policy: &Policy,
    cli: &str,
    name: &str,
    input: &Map<String, Value>,
    id: &str,
) -> Translation {
    let Some((tool, dialect, key)) = find(policy, cli, name) else {
        return Translation::Unknown;
    };
    let refuse = |rule, reason| Translation::Refused { rule, reason };
    let mut args = Map::new();
    // Which CLI argument gave each toolgate argument, to name both when two
    // of them disagree (Gemini's `dir_path` and its older `path`).
    let mut given_by: HashMap<&str, &str> = HashMap::new();
    for (arg, value) in input {
        if let Some(target) = dialect.args.get(arg) {
            if let Some(previous) = args.get(target) {
                if previous != value {
                    let other = given_by.get(target.as_str()).copied().unwrap_or_default();
                    return refuse(
                        "hooks.dialect",
                        format!("{name} got both `{other}` and `{arg}`, which both mean `{target}` of toolgate's {}, with different values; send one of them", tool.name()),
                    );
                }
            }
            args.insert(target.clone(), value.clone());
            given_by.insert(target, arg);
        } else if !(dialect.ignore.contains(arg)
            || dialect.workdir.as_ref() == Some(arg)
            || dialect.patch.as_ref().is_some_and(|p| &p.from == arg))
        {
            return refuse(
                "hooks.unmapped_argument",
                format!(
                    "toolgate does not know argument `{arg}` of {name}, so it cannot judge this call. \
                     Map it in `args` or list it in `ignore` under [dialects.{key}] named \"{name}\" in {}",
                    tool.file
                ),
            );
        }
    }
    let workdir = match dialect
        .workdir
        .as_ref()
        .and_then(|w| input.get(w).map(|v| (w, v)))
    {
        None | Some((_, Value::Null)) => None,
        Some((_, Value::String(dir))) => Some(dir.clone()),
        Some((w, other)) => {
            return refuse(
                "hooks.dialect",
                format!(
                    "argument `{w}` of {name} must be a directory path (a string), got {}",
                    preview(other)
                ),
            )
        }
    };
    let call = |arguments: Map<String, Value>| Mapped {
        call: ToolCall {
            id: id.to_string(),
            name: tool.name().to_string(),
            arguments: Value::Object(arguments),
        },
        workdir: workdir.clone(),
    };
    let Some(p) = &dialect.patch else {
        return Translation::Calls(vec![call(args)]);
    };
    let text = match input.get(&p.from) {
        Some(Value::String(text)) => text,
        other => {
            return refuse(
                "hooks.patch",
                format!(
                    "argument `{}` of {name} must hold the patch text, got {}",
                    p.from,
                    other.map_or("nothing".to_string(), preview)
                ),
            )
        }
    };
    match patch::files_written(text) {
        Ok(files) => Translation::Calls(
            files
                .into_iter()
                .map(|f| {
                    let mut one = args.clone();
                    one.insert(p.path.clone(), Value::String(f.path));
                    if let Some(content) = &p.content {
                        one.insert(content.clone(), Value::String(f.content));
                    }
                    call(one)
                })
                .collect(),
        ),
        Err(e) => refuse(
            "hooks.patch",
            format!("the patch could not be read ({e}), so the files it writes cannot be checked"),
        ),
    }
}
