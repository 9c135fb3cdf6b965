//! Recorded calls in, one [`Record`] per call: every input format `replay`
//! reads, recognized line by line from its content.
//!
//! | a JSON line with | is read as |
//! |---|---|
//! | `policy_version`, `tool`, `arguments` | a toolgate decision log line (its `decision` is the recorded one; its `identity` and `profile`, when set, the caller it is decided for) |
//! | `name`, `arguments` | an `eval --calls` line |
//! | `hook_event_name` | an agent CLI hook payload (Gemini for `BeforeTool`; Codex when it has `turn_id`; else Claude Code) |
//! | `type: "assistant"` with `tool_use` blocks | a Claude Code session transcript line |
//! | `type: "response_item"` with a `function_call`, `custom_tool_call` or `local_shell_call` | a Codex session rollout line |
//!
//! Other lines of transcripts and rollouts (user turns, tool results,
//! metadata) hold no call and are passed over. A file that is one JSON
//! value over several lines (a hook payload saved pretty-printed) is read
//! whole.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::hooks::Agent;
use crate::policy::auth::Identity;
use crate::policy::Decision;

/// One recorded call.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The tool, as the recorder named it (toolgate's name, or the CLI's).
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// Whose tool names these are: `None` for toolgate's own.
    pub agent: Option<Agent>,
    /// The decision recorded with the call (decision logs only).
    pub recorded: Option<Decision>,
    /// The caller recorded with the call (decision logs of an HTTP gateway
    /// with `auth:`: its `identity` and `profile`).
    pub identity: Option<Identity>,
}

/// What one line holds.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// Calls to replay (a transcript line may hold several).
    Calls(Vec<Record>),
    /// A line of a known format that holds no call to replay.
    Pass,
    /// A recorded call that never reached the policy (a decision-log line
    /// with no decision): counted as not replayable.
    NotReplayable,
    /// A JSON object of no known format.
    Unknown,
}

/// Reads one JSON value of an input.
pub fn read(value: Value) -> Line {
    let Value::Object(mut obj) = value else {
        return Line::Unknown;
    };
    if obj.contains_key("policy_version") && obj.contains_key("tool") {
        return decision_log(obj);
    }
    if obj.contains_key("hook_event_name") {
        return hook_payload(obj);
    }
    match obj.get("type").and_then(Value::as_str) {
        Some("response_item") => return codex_item(obj.remove("payload")),
        Some("session_meta" | "turn_context" | "event_msg" | "compacted") => return Line::Pass,
        Some("assistant") => return claude_line(obj),
        Some("user" | "system" | "summary" | "file-history-snapshot") => return Line::Pass,
        _ => {}
    }
    match (obj.remove("name"), obj.remove("arguments")) {
        (Some(Value::String(name)), Some(Value::Object(arguments))) => {
            one(name, arguments, None, None)
        }
        _ => Line::Unknown,
    }
}

/// Reads one line of an input: [`read`] of its JSON value, or `None` when it
/// is not JSON.
///
/// A decision-log line, the bulk of a large input, is read straight into
/// its fields rather than into a whole JSON value first (a decision log
/// line has a dozen fields the replay does not use); anything else, and
/// any line that is not exactly of that shape (a field of another type, a
/// repeated key), goes the general way, so both give the same [`Line`].
pub fn read_line(text: &str) -> Result<Line, serde_json::Error> {
    if text.starts_with('{') {
        if let Ok(line) = serde_json::from_str::<LogLine<'_>>(text) {
            if line.policy_version.0 {
                return Ok(line.into_line());
            }
        }
    }
    serde_json::from_str::<Value>(text).map(read)
}

/// Whether a field is there, whatever its value (even `null`).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Present, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// The fields of a decision-log line that [`decision_log`] reads.
#[derive(Deserialize)]
struct LogLine<'a> {
    #[serde(default)]
    policy_version: Present,
    #[serde(borrow)]
    tool: Cow<'a, str>,
    #[serde(default, borrow)]
    decision: Option<Cow<'a, str>>,
    #[serde(default)]
    identity: Option<String>,
    #[serde(default)]
    profile: Option<String>,
    arguments: Map<String, Value>,
}

impl LogLine<'_> {
    /// What [`decision_log`] makes of the same fields.
    fn into_line(self) -> Line {
        let recorded = match self.decision.as_deref() {
            Some("allow") => Decision::Allow,
            Some("ask") => Decision::Ask,
            Some("deny") => Decision::Deny,
            Some(_) => return Line::Unknown,
            None => return Line::NotReplayable,
        };
        Line::Calls(vec![Record {
            name: self.tool.into_owned(),
            arguments: self.arguments,
            agent: None,
            recorded: Some(recorded),
            identity: self.identity.map(|id| Identity::new(id, self.profile)),
        }])
    }
}

fn one(
    name: String,
    arguments: Map<String, Value>,
    agent: Option<Agent>,
    recorded: Option<Decision>,
) -> Line {
    Line::Calls(vec![Record {
        name,
        arguments,
        agent,
        recorded,
        identity: None,
    }])
}

fn decision_log(mut obj: Map<String, Value>) -> Line {
    let recorded = match obj.get("decision") {
        Some(Value::String(d)) => match d.as_str() {
            "allow" => Decision::Allow,
            "ask" => Decision::Ask,
            "deny" => Decision::Deny,
            _ => return Line::Unknown,
        },
        // An unknown tool or invalid arguments: the call never reached the policy.
        Some(Value::Null) | None => return Line::NotReplayable,
        _ => return Line::Unknown,
    };
    // The caller, when the gateway authenticated one: `identity` (its id)
    // and `profile`, each a string or null.
    let identity = match (obj.get("identity"), obj.get("profile")) {
        (None | Some(Value::Null), _) => None,
        (Some(Value::String(id)), None | Some(Value::Null)) => Some(Identity::new(id, None)),
        (Some(Value::String(id)), Some(Value::String(p))) => {
            Some(Identity::new(id, Some(p.clone())))
        }
        _ => return Line::Unknown,
    };
    match (obj.remove("tool"), obj.remove("arguments")) {
        (Some(Value::String(name)), Some(Value::Object(arguments))) => Line::Calls(vec![Record {
            name,
            arguments,
            agent: None,
            recorded: Some(recorded),
            identity,
        }]),
        _ => Line::Unknown,
    }
}

fn hook_payload(mut obj: Map<String, Value>) -> Line {
    let event = obj
        .get("hook_event_name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let agent = match event {
        "BeforeTool" => Agent::Gemini,
        "PreToolUse" if obj.contains_key("turn_id") => Agent::Codex,
        "PreToolUse" => Agent::Claude,
        // After-events repeat a call already seen before it ran.
        "PostToolUse" | "AfterTool" => return Line::Pass,
        _ => return Line::Unknown,
    };
    match (obj.remove("tool_name"), obj.remove("tool_input")) {
        (Some(Value::String(name)), Some(Value::Object(input))) => {
            let input = relative_to(input, obj.get("cwd").and_then(Value::as_str));
            one(name, input, Some(agent), None)
        }
        _ => Line::Unknown,
    }
}

/// A Claude Code transcript line: an assistant message whose content holds
/// `tool_use` blocks.
fn claude_line(obj: Map<String, Value>) -> Line {
    let cwd = obj.get("cwd").and_then(Value::as_str);
    let Some(content) = obj
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
    else {
        return Line::Pass;
    };
    let calls: Vec<Record> = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|b| {
            let name = b.get("name")?.as_str()?.to_string();
            let input = b.get("input")?.as_object()?.clone();
            Some(Record {
                name,
                arguments: relative_to(input, cwd),
                agent: Some(Agent::Claude),
                recorded: None,
                identity: None,
            })
        })
        .collect();
    if calls.is_empty() {
        Line::Pass
    } else {
        Line::Calls(calls)
    }
}

/// A Codex rollout `response_item`: its shell and patch calls become the
/// Codex hook's `Bash` and `apply_patch` calls, which the manifests'
/// `[dialects.codex]` map; other function calls keep their names.
fn codex_item(payload: Option<Value>) -> Line {
    let Some(Value::Object(item)) = payload else {
        return Line::Unknown;
    };
    let codex = |name: &str, input: Map<String, Value>| {
        one(name.to_string(), input, Some(Agent::Codex), None)
    };
    let bash = |command: String| {
        let mut input = Map::new();
        input.insert("command".into(), Value::String(command));
        codex("Bash", input)
    };
    match item.get("type").and_then(Value::as_str) {
        Some("local_shell_call") => match item.get("action").and_then(|a| a.get("command")) {
            Some(argv) => match shell_text(argv) {
                Some(command) => bash(command),
                None => Line::Unknown,
            },
            None => Line::Unknown,
        },
        Some("custom_tool_call") => {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("");
            match item.get("input") {
                Some(Value::String(text)) if name == "apply_patch" => {
                    let mut input = Map::new();
                    input.insert("command".into(), Value::String(text.clone()));
                    codex("apply_patch", input)
                }
                Some(Value::String(text)) => {
                    let mut input = Map::new();
                    input.insert("input".into(), Value::String(text.clone()));
                    codex(name, input)
                }
                _ => Line::Unknown,
            }
        }
        Some("function_call") => {
            let name = item.get("name").and_then(Value::as_str).unwrap_or("");
            // Function-call arguments are a JSON text.
            let args: Map<String, Value> = match item.get("arguments") {
                Some(Value::String(text)) => match serde_json::from_str(text) {
                    Ok(Value::Object(map)) => map,
                    _ => return Line::Unknown,
                },
                Some(Value::Object(map)) => map.clone(),
                _ => return Line::Unknown,
            };
            match name {
                "shell" | "container.exec" | "local_shell" => {
                    match args.get("command").and_then(shell_text) {
                        Some(command) => bash(command),
                        None => Line::Unknown,
                    }
                }
                "shell_command" | "exec_command" => {
                    match args.get("command").or_else(|| args.get("cmd")) {
                        Some(Value::String(command)) => bash(command.clone()),
                        _ => Line::Unknown,
                    }
                }
                "apply_patch" => match args.get("input").or_else(|| args.get("patch")) {
                    Some(Value::String(text)) => {
                        let mut input = Map::new();
                        input.insert("command".into(), Value::String(text.clone()));
                        codex("apply_patch", input)
                    }
                    _ => Line::Unknown,
                },
                _ => codex(name, args),
            }
        }
        Some(_) => Line::Pass,
        None => Line::Unknown,
    }
}

/// A command given as an argv array as one shell string: `bash -lc SCRIPT`
/// is its script; anything else is its words, quoted where needed.
fn shell_text(argv: &Value) -> Option<String> {
    match argv {
        Value::String(s) => Some(s.clone()),
        Value::Array(words) => {
            let words: Vec<&str> = words.iter().map(Value::as_str).collect::<Option<_>>()?;
            match words.as_slice() {
                [shell, flag, script]
                    if matches!(*shell, "bash" | "sh" | "zsh" | "/bin/bash" | "/bin/sh")
                        && matches!(*flag, "-c" | "-lc") =>
                {
                    Some(script.to_string())
                }
                _ => Some(words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")),
            }
        }
        _ => None,
    }
}

fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Agent CLIs send absolute paths under their working directory; replayed
/// elsewhere (CI), those are made relative to it so they resolve inside
/// `--workspace` as they did inside the recorded one.
fn relative_to(mut input: Map<String, Value>, cwd: Option<&str>) -> Map<String, Value> {
    let Some(cwd) = cwd
        .map(|c| c.trim_end_matches('/'))
        .filter(|c| !c.is_empty())
    else {
        return input;
    };
    for value in input.values_mut() {
        if let Value::String(s) = value {
            if s == cwd {
                *s = ".".to_string();
            } else if let Some(rest) = s.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
                *s = rest.to_string();
            }
        }
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn calls(v: Value) -> Vec<Record> {
        match read(v) {
            Line::Calls(c) => c,
            other => panic!("expected calls, got {other:?}"),
        }
    }

    #[test]
    fn argv_commands_become_shell_text() {
        assert_eq!(
            shell_text(&json!(["bash", "-lc", "ls && rm -rf x"])).unwrap(),
            "ls && rm -rf x"
        );
        assert_eq!(
            shell_text(&json!(["rm", "-rf", "a b"])).unwrap(),
            "rm -rf 'a b'"
        );
        assert_eq!(
            shell_text(&json!(["echo", "it's"])).unwrap(),
            r"echo 'it'\''s'"
        );
        assert_eq!(shell_text(&json!([1])), None);
    }

    #[test]
    fn absolute_paths_under_the_recorded_cwd_become_relative() {
        let c = calls(
            json!({"type":"assistant","cwd":"/home/dev/app","message":{"content":[
            {"type":"text","text":"reading"},
            {"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/home/dev/app/src/main.rs"}},
            {"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/home/dev/application/x"}}]}}),
        );
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].arguments["file_path"], "src/main.rs");
        // A sibling folder sharing the prefix is not under the cwd.
        assert_eq!(c[1].arguments["file_path"], "/home/dev/application/x");
    }

    #[test]
    fn hook_payloads_name_their_agent() {
        let base = json!({"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}});
        assert_eq!(calls(base.clone())[0].agent, Some(Agent::Claude));
        let mut codex = base.clone();
        codex["turn_id"] = json!("t");
        assert_eq!(calls(codex)[0].agent, Some(Agent::Codex));
        let gemini = json!({"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}});
        assert_eq!(calls(gemini)[0].agent, Some(Agent::Gemini));
        let after = json!({"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"tool_response":{}});
        assert_eq!(read(after), Line::Pass);
    }

    #[test]
    fn decision_logs_carry_the_recorded_decision() {
        let c = calls(
            json!({"time":"t","tool":"bash","decision":"ask","policy_version":"v","arguments":{"command":"ls"}}),
        );
        assert_eq!(c[0].recorded, Some(Decision::Ask));
        assert_eq!(c[0].agent, None);
        let never = json!({"tool":"nope","decision":null,"policy_version":"v","arguments":{}});
        assert!(read(never) == Line::NotReplayable);
    }

    #[test]
    fn a_line_read_directly_is_read_as_its_json_value() {
        let lines = [
            r#"{"time":"t","tool":"bash","decision":"ask","policy_version":"v","arguments":{"command":"ls"}}"#,
            r#"{"tool":"b\u0061sh","decision":"deny","policy_version":null,"arguments":{"command":"l\ns","n":[1,{"a":null}]}}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v","identity":"alice","profile":"ro","arguments":{"path":"a"}}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v","identity":"alice","profile":null,"arguments":{}}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v","identity":null,"profile":7,"arguments":{}}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v","identity":7,"arguments":{}}"#,
            r#"{"tool":"read","decision":"maybe","policy_version":"v","arguments":{}}"#,
            r#"{"tool":"read","decision":5,"policy_version":"v","arguments":{}}"#,
            r#"{"tool":"nope","decision":null,"policy_version":"v","arguments":{}}"#,
            r#"{"tool":"nope","policy_version":"v","arguments":{}}"#,
            r#"{"tool":7,"decision":"allow","policy_version":"v","arguments":{}}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v","arguments":"x"}"#,
            r#"{"tool":"read","decision":"allow","policy_version":"v"}"#,
            r#"{"tool":"read","decision":"allow","arguments":{}}"#,
            r#"{"tool":"read","tool":"bash","decision":"allow","policy_version":"v","arguments":{"command":"ls"}}"#,
            r#"{"tool":"read","decision":"deny","decision":"allow","policy_version":"v","arguments":{}}"#,
            r#"{"name":"read","arguments":{"path":"a"}}"#,
            r#"["read",null,"allow",null,null,{}]"#,
            r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"policy_version":"v"}"#,
        ];
        for text in lines {
            let general = read(serde_json::from_str(text).unwrap());
            assert_eq!(read_line(text).unwrap(), general, "{text}");
        }
        assert!(read_line(r#"{"tool":"read","#).is_err());
    }

    #[test]
    fn codex_rollout_items_become_codex_hook_calls() {
        let shell = json!({"type":"response_item","payload":{"type":"function_call","name":"shell",
            "arguments":"{\"command\":[\"bash\",\"-lc\",\"git push --force\"],\"workdir\":\"/x\"}","call_id":"c1"}});
        let c = calls(shell);
        assert_eq!(
            (c[0].name.as_str(), c[0].arguments["command"].as_str()),
            ("Bash", Some("git push --force"))
        );
        let patch = json!({"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** End Patch"}});
        assert_eq!(calls(patch)[0].name, "apply_patch");
        let message =
            json!({"type":"response_item","payload":{"type":"message","role":"user","content":[]}});
        assert_eq!(read(message), Line::Pass);
    }

    #[test]
    fn eval_lines_and_unknown_objects() {
        let c = calls(json!({"name":"read","arguments":{"path":"a"}}));
        assert_eq!((c[0].name.as_str(), c[0].agent), ("read", None));
        assert_eq!(read(json!({"hello":1})), Line::Unknown);
        assert_eq!(read(json!([1, 2])), Line::Unknown);
    }
}
