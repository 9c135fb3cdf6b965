//! Compiling upstream server manifests (`[server]`): each server is checked,
//! and each tool its running server listed becomes a manifest named
//! `PREFIX__TOOL` whose schema is the upstream `inputSchema` and whose
//! effects come from the `[tools.TOOL]` overlay. Those manifests then go
//! through the same checks as every other (names, collisions, schemas,
//! effects), with diagnostics pointing at the server manifest.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::manifest::{Implementation, Manifest};
use crate::config::server::LoadedServer;
use crate::config::{Loaded, LoadedManifest};

use super::CompileOptions;

/// What the servers contribute to a compile.
pub(super) struct Upstream {
    /// One manifest per listed upstream tool.
    pub manifests: Vec<LoadedManifest>,
    /// Prefixes of servers with no listing yet: names under them are not
    /// errors, they do not exist yet.
    pub pending_prefixes: Vec<String>,
}

/// The line of `key = …` inside the `[server]` table (or the table itself).
fn server_key_position(text: &str, key: &str) -> Position {
    let mut in_server = false;
    let mut table = Position { line: 1, col: 1 };
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_server = t.starts_with("[server]");
            if in_server {
                table = Position {
                    line: i + 1,
                    col: 1,
                };
            }
            continue;
        }
        if in_server && (t.starts_with(&format!("{key} ")) || t.starts_with(&format!("{key}="))) {
            return Position {
                line: i + 1,
                col: line.len() - t.len() + 1,
            };
        }
    }
    table
}

/// The line of `[tools.TOOL]` (or `[tools.TOOL.…]`).
fn overlay_position(text: &str, tool: &str) -> Position {
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with(&format!("[tools.{tool}]")) || t.starts_with(&format!("[tools.{tool}.")) {
            return Position {
                line: i + 1,
                col: 1,
            };
        }
    }
    Position { line: 1, col: 1 }
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Checks one server's table; false when something is wrong.
fn check_server(s: &LoadedServer, diags: &mut Diagnostics) -> bool {
    let (file, table) = (&s.file, &s.manifest.server);
    let mut ok = true;
    let mut err = |key: &str, message: String, help: &str| {
        diags.push(
            Diagnostic::new(&file.name, server_key_position(&file.text, key), message)
                .with_help(help),
        );
        ok = false;
    };
    if !plain_name(&table.name) || table.name.len() > 32 {
        err(
            "name",
            format!("invalid server name `{}`", table.name),
            "use 1-32 letters, digits, `_` or `-`",
        );
    }
    if let Some(p) = &table.prefix {
        if !plain_name(p) || p.len() > 32 {
            err(
                "prefix",
                format!("invalid tool name prefix `{p}`"),
                "use 1-32 letters, digits, `_` or `-`",
            );
        }
    }
    match (&table.command, &table.url) {
        (Some(argv), None) if argv.first().is_some_and(|p| !p.is_empty()) => {}
        (Some(_), None) => err(
            "command",
            "`command` must start with the program to run".to_string(),
            "write e.g. `command = [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]`",
        ),
        (None, Some(_)) => err(
            "url",
            "upstream servers over Streamable HTTP (`url`) are not supported yet".to_string(),
            "run the server over stdio with `command = [...]` (see docs/upstream.md)",
        ),
        (Some(_), Some(_)) => err(
            "url",
            "a server has either `command` (stdio) or `url` (HTTP), not both".to_string(),
            "remove one of them",
        ),
        (None, None) => err(
            "name",
            "a server needs `command = [...]` to run it".to_string(),
            "add `command = [\"program\", \"arg\", ...]` under `[server]`",
        ),
    }
    if !table.headers.is_empty() && table.url.is_none() {
        err(
            "headers",
            "`headers` apply to `url` servers only".to_string(),
            "remove `headers`",
        );
    }
    for name in &table.env {
        if !plain_name(name) || name.contains('-') {
            err(
                "env",
                format!("`env` lists `{name}`, which is not a variable name"),
                "list plain variable names such as `PATH` or `HOME`",
            );
        }
    }
    ok
}

/// Checks every server and makes the manifests of the tools they listed.
pub(super) fn upstream_manifests(
    loaded: &Loaded,
    options: &CompileOptions,
    diags: &mut Diagnostics,
) -> Upstream {
    let mut out = Upstream {
        manifests: Vec::new(),
        pending_prefixes: Vec::new(),
    };
    // Server name -> its file, for duplicate names.
    let mut names: HashMap<&str, &str> = HashMap::new();
    for s in &loaded.servers {
        if !check_server(s, diags) {
            continue;
        }
        if let Some(prev) = names.insert(s.name(), &s.file.name) {
            diags.push(
                Diagnostic::new(
                    &s.file.name,
                    server_key_position(&s.file.text, "name"),
                    format!("server `{}` is already defined in {prev}", s.name()),
                )
                .with_help("give each server manifest a unique `name`"),
            );
            continue;
        }
        let listed = options.upstream.as_ref().and_then(|c| c.get(s.name()));
        let Some(listed) = listed else {
            out.pending_prefixes
                .push(s.manifest.server.prefix().to_string());
            continue;
        };
        let table = &s.manifest.server;
        let by_name: BTreeMap<&str, _> = listed.iter().map(|t| (t.name.as_str(), t)).collect();
        for tool in s.manifest.tools.keys() {
            if !by_name.contains_key(tool.as_str()) {
                diags.push(
                    Diagnostic::new(
                        &s.file.name,
                        overlay_position(&s.file.text, tool),
                        format!(
                            "`[tools.{tool}]` names a tool server `{}` does not list",
                            s.name()
                        ),
                    )
                    .with_help(format!(
                        "use one of: {}",
                        by_name.keys().copied().collect::<Vec<_>>().join(", ")
                    )),
                );
            }
        }
        for tool in listed {
            let overlay = s
                .manifest
                .tools
                .get(&tool.name)
                .cloned()
                .unwrap_or_default();
            let manifest = Manifest {
                name: table.tool_name(&tool.name),
                label: tool.title.clone(),
                description: tool.description.clone(),
                execution_mode: overlay.execution_mode.unwrap_or_default(),
                implementation: Implementation::Upstream {
                    server: s.name().to_string(),
                    tool: tool.name.clone(),
                },
                parameters: tool.input_schema.clone(),
                effects: overlay.effects,
                prepare: Vec::new(),
                dialects: BTreeMap::new(),
                exec: None,
            };
            out.manifests.push(LoadedManifest {
                file: s.file.clone(),
                manifest: Arc::new(manifest),
            });
        }
    }
    out
}
