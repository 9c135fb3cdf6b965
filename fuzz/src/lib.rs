//! The bodies of the fuzz targets, one function per target.
//!
//! `fuzz_targets/*.rs` hand libFuzzer's input to these; the main crate's
//! `tests/fuzz_regressions.rs` includes this file too and replays every
//! input in `fuzz/regressions/<target>/` through the same function, so a
//! crash the fuzzer found stays fixed in the normal test suite. Only
//! `toolgate` and `serde_json` may be used here (the test build has no
//! libFuzzer).

use std::sync::OnceLock;

use serde_json::{json, Value};
use toolgate::config::{
    embedded_default_policy, embedded_manifests, parse_manifest, parse_policy, ConfigPaths, Loaded,
    SourceFile,
};
use toolgate::executor::{check_call_arguments, ArgumentSchema};
use toolgate::policy::shell::{analyze, CommandPattern, MatchMode};
use toolgate::policy::Redactor;
use toolgate::{compile, load_policy, CompileOptions, Policy, ToolCall, Workspace};

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The targets by name, for replaying saved inputs.
pub const TARGETS: &[(&str, Target)] = &[
    ("policy_loader", policy_loader),
    ("manifest_loader", manifest_loader),
    ("shell_analyzer", shell_analyzer),
    ("coerce_validate", coerce_validate),
    ("redact", redact),
];

fn source(name: &str, text: &str) -> SourceFile {
    SourceFile {
        name: name.to_string(),
        path: None,
        text: text.to_string(),
    }
}

/// The embedded default policy and built-in manifests, compiled once.
fn default_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| {
        let embedded = ConfigPaths {
            policies: None,
            manifests: None,
        };
        load_policy(&embedded, &CompileOptions::default()).expect("the default policy")
    })
}

fn builtin_manifests() -> &'static Loaded {
    static LOADED: OnceLock<Loaded> = OnceLock::new();
    LOADED.get_or_init(|| Loaded {
        layers: Vec::new(),
        manifests: embedded_manifests()
            .map(|(n, t)| parse_manifest(source(n, t)).expect("built-in manifests parse"))
            .collect(),
        ..Loaded::default()
    })
}

fn workspace() -> &'static Workspace {
    static WS: OnceLock<Workspace> = OnceLock::new();
    WS.get_or_init(|| {
        let dir = std::env::temp_dir().join("toolgate-fuzz-ws");
        let _ = std::fs::create_dir_all(dir.join("src"));
        let _ = std::fs::write(dir.join("src/main.rs"), "fn main() {}\n");
        Workspace::new(&dir).expect("workspace")
    })
}

/// Any text as a policy file, parsed and compiled with the built-in
/// manifests; a policy that compiles then decides a few calls and redacts.
pub fn policy_loader(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(layer) = parse_policy(source("fuzz.yaml", text)) else {
        return;
    };
    let mut loaded = builtin_manifests().clone();
    loaded.layers.push(layer);
    let Ok(policy) = compile(&loaded, &CompileOptions::default()) else {
        return;
    };
    let calls = [
        json!({"name": "read", "arguments": {"path": "src/main.rs"}}),
        json!({"name": "write", "arguments": {"path": ".env", "content": "x"}}),
        json!({"name": "bash", "arguments": {"command": "cat src/main.rs && rm -rf / | tee out"}}),
        json!({"name": "grep", "arguments": {"pattern": "x", "path": "../"}}),
    ];
    for call in calls {
        let call: ToolCall = serde_json::from_value(call).expect("a call");
        let _ = policy.evaluate(workspace(), &call);
    }
    let _ = policy
        .redactor()
        .redact("token ghp_0123456789abcdefghij0123456789abcdef");
}

/// Any text as a tool manifest, compiled beside the built-in ones under
/// the default policy; a tool that compiles gets its schema built and two
/// calls' arguments checked.
pub fn manifest_loader(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(fuzzed) = parse_manifest(source("fuzz.toml", text)) else {
        return;
    };
    let name = fuzzed.manifest.name.clone();
    let mut manifests: Vec<_> = builtin_manifests()
        .manifests
        .iter()
        .filter(|m| m.manifest.name != name)
        .cloned()
        .collect();
    manifests.push(fuzzed);
    let layer = parse_policy(source("default.yaml", embedded_default_policy()))
        .expect("the default policy parses");
    let loaded = Loaded {
        layers: vec![layer],
        manifests,
        ..Loaded::default()
    };
    let Ok(policy) = compile(&loaded, &CompileOptions::default()) else {
        return;
    };
    let Some(info) = policy.tool(&name) else {
        return;
    };
    let Ok(schema) = ArgumentSchema::compile(info.schema()) else {
        return;
    };
    for args in [json!({}), json!({"path": "a", "command": "ls", "n": "3"})] {
        let _ = check_call_arguments(
            &name,
            &info.manifest.prepare,
            info.schema(),
            &schema,
            policy.limits(),
            &args,
        );
    }
}

/// Any text as a `bash` command: split into simple commands and judged by
/// the default policy's lists; the same text as a command pattern, matched
/// against what was found.
pub fn shell_analyzer(data: &[u8]) {
    let Ok(script) = std::str::from_utf8(data) else {
        return;
    };
    let analysis = analyze(script);
    let policy = default_policy();
    for cmd in &analysis.commands {
        let _ = policy.commands().judge(cmd, workspace(), &[]);
        let _ = cmd.file_operands();
    }
    if !analysis.unparsed.is_empty() {
        let _ = policy.commands().judge_unparsed(&analysis.unparsed);
    }
    if let Ok(pattern) = CommandPattern::parse(script) {
        for cmd in &analysis.commands {
            let _ = pattern.matches(cmd, MatchMode::Prefix);
            let _ = pattern.matches(cmd, MatchMode::Anywhere);
        }
    }
}

const TOOLS: &[&str] = &["read", "write", "edit", "bash", "grep", "find", "ls"];

fn builtin_schemas() -> &'static Vec<ArgumentSchema> {
    static SCHEMAS: OnceLock<Vec<ArgumentSchema>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        TOOLS
            .iter()
            .map(|t| {
                let info = default_policy().tool(t).expect("built-in tool");
                ArgumentSchema::compile(info.schema()).expect("built-in schema")
            })
            .collect()
    })
}

/// Argument checks as the executor's preflight runs them (limits, prepare,
/// limits, coerce, validate, Pi's error text). The first byte picks a
/// built-in tool's schema (the rest is the arguments as JSON) or, for the
/// last value, a schema of the input's own: `SCHEMA 0xFF ARGUMENTS` (0xFF
/// never occurs in UTF-8, so it cannot be part of either).
pub fn coerce_validate(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let policy = default_policy();
    let index = usize::from(pick) % (TOOLS.len() + 1);
    if let Some(name) = TOOLS.get(index) {
        let Ok(args) = serde_json::from_slice::<Value>(rest) else {
            return;
        };
        let info = policy.tool(name).expect("built-in tool");
        let _ = check_call_arguments(
            name,
            &info.manifest.prepare,
            info.schema(),
            &builtin_schemas()[index],
            policy.limits(),
            &args,
        );
        return;
    }
    let mut parts = rest.splitn(2, |b| *b == 0xFF);
    let (Some(schema), Some(args)) = (parts.next(), parts.next()) else {
        return;
    };
    let (Ok(schema), Ok(args)) = (
        serde_json::from_slice::<Value>(schema),
        serde_json::from_slice::<Value>(args),
    ) else {
        return;
    };
    let Ok(compiled) = ArgumentSchema::compile(&schema) else {
        return;
    };
    let _ = check_call_arguments("fuzz", &[], &schema, &compiled, policy.limits(), &args);
}

fn redactor() -> &'static Redactor {
    static REDACTOR: OnceLock<Redactor> = OnceLock::new();
    REDACTOR.get_or_init(|| Redactor::compile(true, &[]).expect("built-in rules"))
}

/// Secret redaction with the built-in rules, whole and streamed. The first
/// byte sets the chunk sizes (1 to 256 bytes, cut back to a character
/// boundary), the rest is the text (lossy UTF-8). Redacting in chunks must
/// give exactly what redacting the whole text gives, and redacting the
/// result again must change nothing.
pub fn redact(data: &[u8]) {
    let Some((&seed, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let redactor = redactor();
    let whole = redactor.redact(&text).into_owned();
    let mut stream = redactor.stream();
    let mut streamed = String::new();
    let mut at = 0;
    let mut step = usize::from(seed) + 1;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        streamed.push_str(&stream.push(&text[at..end]));
        at = end;
        // Vary the chunk size: a fixed stride misses boundary cases.
        step = step * 7 % 251 + 1;
    }
    streamed.push_str(&stream.finish());
    assert_eq!(streamed, whole, "streamed redaction equals whole redaction");
    let twice = redactor.redact(&whole).into_owned();
    assert_eq!(twice, whole, "redaction is idempotent");
}
