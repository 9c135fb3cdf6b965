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
        // `""` is the transparent server (names and URIs unchanged).
        if !p.is_empty() && (!plain_name(p) || p.len() > 32) {
            err(
                "prefix",
                format!("invalid tool name prefix `{p}`"),
                "use 1-32 letters, digits, `_` or `-`, or `\"\"` to keep the server's own names",
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
        (None, Some(url)) => {
            if let Err(why) = check_url(url) {
                err(
                    "url",
                    why,
                    "write e.g. `url = \"https://mcp.example.com/mcp\"`",
                );
            }
        }
        (Some(_), Some(_)) => err(
            "url",
            "a server has either `command` (stdio) or `url` (Streamable HTTP), not both"
                .to_string(),
            "remove one of them",
        ),
        (None, None) => err(
            "name",
            "a server needs `command = [...]` (stdio) or `url = \"…\"` (Streamable HTTP)"
                .to_string(),
            "add `command = [\"program\", \"arg\", ...]` or `url = \"https://…\"` under `[server]`",
        ),
    }
    if !table.headers.is_empty() && table.url.is_none() {
        err(
            "headers",
            "`headers` apply to `url` servers only".to_string(),
            "remove `headers`",
        );
    }
    if table.url.is_some() {
        for (name, value) in &table.headers {
            if let Err(why) = check_header(name, value) {
                err(
                    "headers",
                    why,
                    "set the variable in toolgate's environment, or fix the header (see docs/upstream.md)",
                );
            }
        }
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

/// Why `url` cannot be a Streamable HTTP endpoint.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`url` must start with https:// or http://, not `{url}`"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`url` `{url}` is not a valid http(s) address"));
    }
    Ok(())
}

/// Headers the MCP transport sets itself.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Why a header cannot be sent. The message names the header and any
/// missing variable, never the value (it may hold a secret).
fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(format!("`{name}` is not a valid HTTP header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "header `{name}` is set by the MCP transport and cannot be configured"
        ));
    }
    let value = crate::config::server::substitute_env(name, value, |var| std::env::var(var).ok())
        .map_err(|e| e.to_string())?;
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "the value of header `{name}` contains a line break or control character"
        ));
    }
    Ok(())
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
    // The file of the one server with `prefix = ""`.
    let mut transparent: Option<&str> = None;
    for s in &loaded.servers {
        if !check_server(s, diags) {
            continue;
        }
        if s.manifest.server.prefix().is_empty() {
            if let Some(prev) = transparent {
                diags.push(
                    Diagnostic::new(
                        &s.file.name,
                        server_key_position(&s.file.text, "prefix"),
                        format!("`prefix = \"\"` is already used by the server in {prev}"),
                    )
                    .with_help(
                        "only one server can keep its own names (resources and prompts \
                         are routed by prefix); give this one a `prefix`",
                    ),
                );
                continue;
            }
            transparent = Some(&s.file.name);
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::config::server::UpstreamTool;
    use crate::config::ConfigPaths;
    use crate::policy::CompileOptions;

    /// Compiles `policy` with the built-in manifests plus `extra` files, and
    /// `listed` as what server `fake` listed.
    fn compile(
        policy: &str,
        extra: &[(&str, &str)],
        listed: Option<&[&str]>,
    ) -> Result<crate::Policy, String> {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("m");
        std::fs::create_dir(&m).unwrap();
        for (name, text) in crate::config::embedded_manifests() {
            std::fs::write(m.join(name), text).unwrap();
        }
        std::fs::write(
            m.join("fake.toml"),
            "[server]\nname = \"fake\"\ncommand = [\"x\"]\n",
        )
        .unwrap();
        for (name, text) in extra {
            std::fs::write(m.join(name), text).unwrap();
        }
        let p = dir.path().join("policy.yaml");
        std::fs::write(&p, policy).unwrap();
        let loaded = crate::config::load(&ConfigPaths {
            policies: Some(p),
            manifests: Some(m),
        })
        .map_err(|d| d.to_human())?;
        let mut catalog = BTreeMap::new();
        if let Some(names) = listed {
            let tools = names
                .iter()
                .map(|n| UpstreamTool {
                    name: n.to_string(),
                    title: None,
                    description: format!("{n} tool"),
                    input_schema: serde_json::json!({
                        "type": "object",
                        "properties": {"text": {"type": "string"}}
                    }),
                })
                .collect();
            catalog.insert("fake".to_string(), tools);
        }
        let options = CompileOptions {
            upstream: Some(Arc::new(catalog)),
            ..CompileOptions::default()
        };
        crate::compile(&loaded, &options).map_err(|d| d.to_human())
    }

    const POLICY: &str =
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"fake__*\"]\n";

    #[test]
    fn listed_tools_become_prefixed_manifests_and_globs_expand() {
        let p = compile(POLICY, &[], Some(&["echo", "add"])).unwrap();
        let info = p.tools.get("fake__echo").expect("fake__echo");
        assert_eq!(info.upstream_server(), Some("fake"));
        assert_eq!(info.manifest.description, "echo tool");
        // `fake__*` in the profile named both tools.
        let up = compile(
            &POLICY.replace("profiles:\n    up:", "active:"),
            &[],
            Some(&["echo", "add"]),
        )
        .unwrap();
        assert!(up.tools.is_active("fake__echo") && up.tools.is_active("fake__add"));
        // Before the server listed anything, names under its prefix are
        // not errors: they do not exist yet.
        let rule = "rules:\n  - id: r\n    tools: [fake__echo]\n    when: { arg: text, matches: x }\n    decision: deny\n";
        let pending = compile(&format!("{POLICY}{rule}"), &[], None).unwrap();
        assert!(pending.tools.get("fake__echo").is_none());
        // Once it has, an argument rule is type-checked against its schema.
        let bad = "rules:\n  - id: r\n    tools: [fake__echo]\n    when: { arg: nope, matches: x }\n    decision: deny\n";
        assert!(compile(&format!("{POLICY}{bad}"), &[], Some(&["echo"])).is_err());
    }

    #[test]
    fn a_collision_names_both_sources() {
        let manifest = "name = \"fake__echo\"\ndescription = \"d\"\nimplementation = { builtin = \"read\" }\n[parameters]\ntype = \"object\"\n";
        let err = compile(POLICY, &[("a_fake_echo.toml", manifest)], Some(&["echo"])).unwrap_err();
        assert!(
            err.contains("fake.toml") && err.contains("a_fake_echo.toml"),
            "{err}"
        );
        assert!(
            err.contains("tool `fake__echo` is already defined in"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_prefix_keeps_upstream_names_and_only_one_server_may_use_it() {
        let transparent = "[server]\nname = \"fake\"\nprefix = \"\"\ncommand = [\"x\"]\n";
        let policy =
            "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [echo]\n";
        let extra = [("fake.toml", transparent)];
        let p = compile(policy, &extra, Some(&["echo"])).unwrap();
        let info = p.tools.get("echo").expect("echo, unprefixed");
        assert_eq!(info.upstream_server(), Some("fake"));
        assert!(p.tools.get("fake__echo").is_none());
        // Not listed yet: `echo` may be one of its tools, so it is no error.
        assert!(compile(policy, &extra, None).is_ok());
        // One of its tools named like a built-in: a load error naming both
        // files, pointing at the server manifest's line.
        let err = compile(policy, &extra, Some(&["echo", "read"])).unwrap_err();
        assert!(err.contains("tool `read` is already defined in"), "{err}");
        assert!(
            err.contains("fake.toml:") && err.contains("read.toml"),
            "{err}"
        );
        // A second unprefixed server: an error at its `prefix` line.
        let other = "[server]\nname = \"other\"\ncommand = [\"y\"]\nprefix = \"\"\n";
        let err = compile(
            policy,
            &[("fake.toml", transparent), ("other.toml", other)],
            Some(&["echo"]),
        )
        .unwrap_err();
        assert!(
            err.contains("other.toml:4:1") && err.contains("is already used by the server in"),
            "{err}"
        );
    }

    #[test]
    fn invalid_upstream_names_and_empty_globs_are_load_errors() {
        let long = "x".repeat(70);
        let err = compile(POLICY, &[], Some(&["has space", &long])).unwrap_err();
        assert!(err.contains("invalid tool name `fake__has space`"), "{err}");
        assert!(
            err.contains(&format!("invalid tool name `fake__{long}`")),
            "{err}"
        );
        let err = compile(
            "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"nothing__*\"]\n",
            &[],
            Some(&["echo"]),
        )
        .unwrap_err();
        assert!(err.contains("matches no tool"), "{err}");
    }

    #[test]
    fn arrays_of_strings_can_be_path_arguments() {
        let manifest = |items: &str| {
            format!(
                "name = \"many\"\ndescription = \"d\"\nimplementation = {{ exec = [\"true\"] }}\n\
                 [effects]\npaths = {{ files = \"read\" }}\n[parameters]\ntype = \"object\"\n\
                 properties.files = {{ type = \"array\", items = {{ type = \"{items}\" }} }}\n"
            )
        };
        let err = compile(POLICY, &[("many.toml", &manifest("number"))], None).unwrap_err();
        assert!(
            err.contains("must be strings or arrays of strings"),
            "{err}"
        );
        let policy = "version: 1\nextends: [builtin:default]\ntools:\n  active: [read, many]\n";
        let p = compile(policy, &[("many.toml", &manifest("string"))], None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let ws = crate::policy::Workspace::new(dir.path()).unwrap();
        let verdict = |name: &str, args: serde_json::Value| {
            p.evaluate(
                &ws,
                &crate::policy::ToolCall {
                    id: "1".into(),
                    name: name.into(),
                    arguments: args,
                },
            )
        };
        let ok = verdict("many", serde_json::json!({"files": ["a.txt", "b.txt"]}));
        assert_eq!(ok.decision, crate::policy::Decision::Allow, "{ok:?}");
        let out = verdict(
            "many",
            serde_json::json!({"files": ["a.txt", "/etc/passwd"]}),
        );
        assert_eq!(out.decision, crate::policy::Decision::Deny, "{out:?}");
        let env = verdict("many", serde_json::json!({"files": [".env"]}));
        assert_eq!(env.decision, crate::policy::Decision::Deny, "{env:?}");
        // A string path argument given an array is still not a path.
        let read = verdict("read", serde_json::json!({"path": ["a.txt"]}));
        assert_eq!(read.decision, crate::policy::Decision::Deny, "{read:?}");
        assert!(read.reason.contains("must be a string path"), "{read:?}");
    }
}
