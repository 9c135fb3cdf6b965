//! Decision speed, side by side with peer policy engines.
//!
//! One policy, written for each engine: reads are allowed under `src/` but
//! never a `.env` file; `cargo test` is allowed; `rm -rf` is denied; anything
//! else is denied. Each engine decides the same fixed mix of four requests per
//! iteration, on inputs prepared outside the timed loop:
//!
//! | request               | expected |
//! |-----------------------|----------|
//! | read `src/main.rs`    | allow    |
//! | read `src/config/.env`| deny     |
//! | bash `cargo test`     | allow    |
//! | bash `rm -rf build`   | deny     |
//!
//! - `decision/toolgate`: [`decide`] on facts from [`gather`] (paths resolved,
//!   shell parsed) — the pure half of a decision.
//! - `decision/cedar`: `Authorizer::is_authorized` on a prebuilt `Request` and
//!   `Entities`; `decision/cedar_from_json` also builds them from JSON.
//! - `decision/regorus`: `set_input` (prebuilt `Value`) + `eval_rule`.
//! - `decision_full/*`: `Policy::evaluate` (gather + decide: path
//!   resolution syscalls and tree-sitter parsing included), one call each:
//!   a compound script, a read, and an interpreter one-liner
//!   (`python3 -c "import os, sys; os.system('rm -rf build'); …"`, denied
//!   through the command its code runs).
//!
//! The peers get the facts toolgate gathered (the workspace-relative path; the
//! program, first positional word and short flags of the command), so every
//! engine judges the same pre-resolved input. The expected decisions are
//! asserted before timing so a wrong engine cannot look fast.
//!
//! Run: `cargo bench --features peers --bench decision` (peers included) or
//! `cargo bench --bench decision` (toolgate only).

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;
use toolgate::policy::decide::{decide, gather, CallFacts};
use toolgate::workspace::glob_key;
use toolgate::{load_policy, CompileOptions, ConfigPaths, Decision, Policy, ToolCall, Workspace};

/// The mix: (tool, arguments, expected decision).
fn requests() -> Vec<(ToolCall, Decision)> {
    let call = |id: &str, name: &str, arguments: serde_json::Value| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    };
    vec![
        (
            call("1", "read", json!({"path": "src/main.rs"})),
            Decision::Allow,
        ),
        (
            call("2", "read", json!({"path": "src/config/.env"})),
            Decision::Deny,
        ),
        (
            call("3", "bash", json!({"command": "cargo test"})),
            Decision::Allow,
        ),
        (
            call("4", "bash", json!({"command": "rm -rf build"})),
            Decision::Deny,
        ),
    ]
}

/// Everything the toolgate benches share: the compiled policy, a workspace
/// with the files the requests name, and the requests.
struct Setup {
    policy: Policy,
    ws: Workspace,
    _dir: tempfile::TempDir,
    requests: Vec<(ToolCall, Decision)>,
}

fn setup() -> Setup {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy = load_policy(
        &ConfigPaths {
            policies: Some(manifest_dir.join("benches/decision-policy.yaml")),
            manifests: None,
        },
        &CompileOptions::default(),
    )
    .expect("benches/decision-policy.yaml compiles");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("src/config")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("src/config/.env"), "SECRET=1\n").unwrap();
    let ws = Workspace::new(dir.path()).expect("workspace");
    Setup {
        policy,
        ws,
        _dir: dir,
        requests: requests(),
    }
}

/// The engine-neutral form of a gathered call, handed to the peers.
#[cfg_attr(not(feature = "peers"), allow(dead_code))]
#[derive(Clone, Debug)]
enum Input {
    /// A read of this workspace-relative path.
    Read { path: String },
    /// One simple command: program basename, first positional word (or ""),
    /// short flags.
    Bash {
        program: String,
        subcommand: String,
        flags: Vec<String>,
    },
}

#[cfg_attr(not(feature = "peers"), allow(dead_code))]
fn peer_input(ws: &Workspace, facts: &CallFacts) -> Input {
    match facts.tool.as_str() {
        "read" => {
            let resolved = facts.paths[0].resolved.as_ref().expect("resolved path");
            Input::Read {
                path: glob_key(ws, &resolved.lexical),
            }
        }
        "bash" => {
            let shell = facts.shell.as_ref().expect("shell facts");
            assert!(shell.analysis.unparsed.is_empty());
            assert_eq!(
                shell.analysis.commands.len(),
                1,
                "the mix has one simple command per script"
            );
            let cmd = &shell.analysis.commands[0];
            let mut subcommand = String::new();
            let mut flags = Vec::new();
            for w in &cmd.words[1..] {
                if let Some(short) = w
                    .strip_prefix('-')
                    .filter(|s| !s.starts_with('-') && !s.is_empty())
                {
                    flags.extend(short.chars().map(String::from));
                } else if !w.starts_with('-') && subcommand.is_empty() {
                    subcommand = w.clone();
                }
            }
            Input::Bash {
                program: cmd.program().to_string(),
                subcommand,
                flags,
            }
        }
        other => panic!("no peer input for tool {other}"),
    }
}

fn bench_decision(c: &mut Criterion) {
    let s = setup();
    let facts: Vec<(CallFacts, Decision)> = s
        .requests
        .iter()
        .map(|(call, expected)| (gather(&s.policy, &s.ws, call), *expected))
        .collect();
    for (f, expected) in &facts {
        let v = decide(&s.policy, &s.ws, f);
        assert_eq!(
            v.decision, *expected,
            "toolgate on {}: {}",
            f.tool, v.reason
        );
    }

    let mut group = c.benchmark_group("decision");
    group.measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(facts.len() as u64));

    group.bench_function("toolgate", |b| {
        b.iter(|| {
            for (f, _) in &facts {
                black_box(decide(&s.policy, &s.ws, black_box(f)));
            }
        })
    });

    #[cfg(feature = "peers")]
    {
        let inputs: Vec<(Input, Decision)> = facts
            .iter()
            .map(|(f, d)| (peer_input(&s.ws, f), *d))
            .collect();
        peers::cedar(&mut group, &inputs);
        peers::cedar_from_json(&mut group, &inputs);
        peers::regorus(&mut group, &inputs);
    }
    group.finish();
}

fn bench_full(c: &mut Criterion) {
    let s = setup();
    let compound = ToolCall {
        id: "5".into(),
        name: "bash".into(),
        arguments: json!({"command": "cargo test && cargo test -- --ignored | tee /dev/null; rm -rf build"}),
    };
    // Interpreter code (issue 14): the one-liner is read for the shell
    // command it runs, which `rm -rf` denies.
    let interpreter = ToolCall {
        id: "6".into(),
        name: "bash".into(),
        arguments: json!({"command": "python3 -c \"import os, sys; os.system('rm -rf build'); print(sys.argv)\""}),
    };
    let v = s.policy.evaluate(&s.ws, &interpreter);
    assert_eq!(v.decision, Decision::Deny, "interpreter: {}", v.reason);
    assert!(
        v.reason.contains("rm -rf"),
        "the interpreter's command decides: {}",
        v.reason
    );
    let read = s.requests[0].0.clone();
    let v = s.policy.evaluate(&s.ws, &compound);
    assert_eq!(v.decision, Decision::Deny, "compound: {}", v.reason);
    let facts = gather(&s.policy, &s.ws, &compound);
    let parts = facts
        .shell
        .as_ref()
        .map_or(0, |sh| sh.analysis.commands.len());
    assert!(
        parts >= 3,
        "compound should split into 3+ simple commands, got {parts}"
    );
    let v = s.policy.evaluate(&s.ws, &read);
    assert_eq!(v.decision, Decision::Allow, "read: {}", v.reason);

    let mut group = c.benchmark_group("decision_full");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("toolgate_full_compound", |b| {
        b.iter(|| black_box(s.policy.evaluate(&s.ws, black_box(&compound))))
    });
    group.bench_function("toolgate_full_interpreter", |b| {
        b.iter(|| black_box(s.policy.evaluate(&s.ws, black_box(&interpreter))))
    });
    group.bench_function("toolgate_full_read", |b| {
        b.iter(|| black_box(s.policy.evaluate(&s.ws, black_box(&read))))
    });
    group.finish();
}

#[cfg(feature = "peers")]
mod peers {
    use std::collections::{HashMap, HashSet};
    use std::hint::black_box;
    use std::str::FromStr;

    use cedar_policy::{
        Authorizer, Context, Entities, Entity, EntityUid, PolicySet, Request, RestrictedExpression,
    };
    use criterion::measurement::WallTime;
    use criterion::BenchmarkGroup;
    use serde_json::json;
    use toolgate::Decision;

    use super::Input;

    /// The bench policy in Cedar. Cedar's `*` in `like` crosses `/`, so
    /// `"*/.env"` is `**/.env`.
    const CEDAR_POLICY: &str = r#"
permit(principal, action == Action::"read", resource)
when { resource.path like "src/*" }
unless { resource.path like "*/.env" || resource.path == ".env" };

permit(principal, action == Action::"bash", resource)
when { context.program == "cargo" && context.subcommand == "test" };

forbid(principal, action == Action::"bash", resource)
when { context.program == "rm" && context.flags.containsAll(["r", "f"]) };
"#;

    /// The bench policy in Rego (v1 syntax).
    const REGO_POLICY: &str = r#"
package toolgate

default allow := false

env_file if input.path == ".env"
env_file if glob.match("**/.env", ["/"], input.path)

allow if {
    input.tool == "read"
    glob.match("src/**", ["/"], input.path)
    not env_file
}

denied if {
    input.tool == "bash"
    input.program == "rm"
    "r" in input.flags
    "f" in input.flags
}

allow if {
    input.tool == "bash"
    input.program == "cargo"
    input.subcommand == "test"
    not denied
}
"#;

    fn uid(s: &str) -> EntityUid {
        EntityUid::from_str(s).expect("entity uid")
    }

    fn quoted(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    /// The request as Cedar JSON: principal/action/resource, context, entities.
    fn cedar_json(input: &Input) -> serde_json::Value {
        match input {
            Input::Read { path } => json!({
                "principal": {"type": "Agent", "id": "agent"},
                "action": {"type": "Action", "id": "read"},
                "resource": {"type": "File", "id": path},
                "context": {},
                "entities": [{"uid": {"type": "File", "id": path}, "attrs": {"path": path}, "parents": []}],
            }),
            Input::Bash {
                program,
                subcommand,
                flags,
            } => json!({
                "principal": {"type": "Agent", "id": "agent"},
                "action": {"type": "Action", "id": "bash"},
                "resource": {"type": "Shell", "id": "shell"},
                "context": {"program": program, "subcommand": subcommand, "flags": flags},
                "entities": [],
            }),
        }
    }

    fn cedar_from_json_value(v: &serde_json::Value) -> (Request, Entities) {
        let principal = EntityUid::from_json(v["principal"].clone()).expect("principal");
        let action = EntityUid::from_json(v["action"].clone()).expect("action");
        let resource = EntityUid::from_json(v["resource"].clone()).expect("resource");
        let context = Context::from_json_value(v["context"].clone(), None).expect("context");
        let request = Request::new(principal, action, resource, context, None).expect("request");
        let entities = Entities::from_json_value(v["entities"].clone(), None).expect("entities");
        (request, entities)
    }

    fn cedar_built(input: &Input) -> (Request, Entities) {
        let principal = uid(r#"Agent::"agent""#);
        match input {
            Input::Read { path } => {
                let resource = uid(&format!("File::{}", quoted(path)));
                let file = Entity::new(
                    resource.clone(),
                    HashMap::from([(
                        "path".to_string(),
                        RestrictedExpression::new_string(path.clone()),
                    )]),
                    HashSet::new(),
                )
                .expect("entity");
                let request = Request::new(
                    principal,
                    uid(r#"Action::"read""#),
                    resource,
                    Context::empty(),
                    None,
                )
                .expect("request");
                (
                    request,
                    Entities::from_entities([file], None).expect("entities"),
                )
            }
            Input::Bash {
                program,
                subcommand,
                flags,
            } => {
                let context = Context::from_pairs([
                    (
                        "program".to_string(),
                        RestrictedExpression::new_string(program.clone()),
                    ),
                    (
                        "subcommand".to_string(),
                        RestrictedExpression::new_string(subcommand.clone()),
                    ),
                    (
                        "flags".to_string(),
                        RestrictedExpression::new_set(
                            flags.iter().cloned().map(RestrictedExpression::new_string),
                        ),
                    ),
                ])
                .expect("context");
                let request = Request::new(
                    principal,
                    uid(r#"Action::"bash""#),
                    uid(r#"Shell::"shell""#),
                    context,
                    None,
                )
                .expect("request");
                (request, Entities::empty())
            }
        }
    }

    fn cedar_decision(d: cedar_policy::Decision) -> Decision {
        match d {
            cedar_policy::Decision::Allow => Decision::Allow,
            cedar_policy::Decision::Deny => Decision::Deny,
        }
    }

    fn cedar_policies() -> PolicySet {
        CEDAR_POLICY.parse().expect("cedar policy parses")
    }

    pub fn cedar(group: &mut BenchmarkGroup<'_, WallTime>, inputs: &[(Input, Decision)]) {
        let policies = cedar_policies();
        let authorizer = Authorizer::new();
        let prepared: Vec<(Request, Entities)> =
            inputs.iter().map(|(i, _)| cedar_built(i)).collect();
        for ((request, entities), (input, expected)) in prepared.iter().zip(inputs) {
            let response = authorizer.is_authorized(request, &policies, entities);
            assert_eq!(
                cedar_decision(response.decision()),
                *expected,
                "cedar on {input:?}"
            );
            assert!(
                response.diagnostics().errors().next().is_none(),
                "cedar errors on {input:?}"
            );
        }
        group.bench_function("cedar", |b| {
            b.iter(|| {
                for (request, entities) in &prepared {
                    black_box(authorizer.is_authorized(
                        black_box(request),
                        &policies,
                        black_box(entities),
                    ));
                }
            })
        });
    }

    pub fn cedar_from_json(group: &mut BenchmarkGroup<'_, WallTime>, inputs: &[(Input, Decision)]) {
        let policies = cedar_policies();
        let authorizer = Authorizer::new();
        let jsons: Vec<serde_json::Value> = inputs.iter().map(|(i, _)| cedar_json(i)).collect();
        for (v, (input, expected)) in jsons.iter().zip(inputs) {
            let (request, entities) = cedar_from_json_value(v);
            let response = authorizer.is_authorized(&request, &policies, &entities);
            assert_eq!(
                cedar_decision(response.decision()),
                *expected,
                "cedar_from_json on {input:?}"
            );
        }
        group.bench_function("cedar_from_json", |b| {
            b.iter(|| {
                for v in &jsons {
                    let (request, entities) = cedar_from_json_value(black_box(v));
                    black_box(authorizer.is_authorized(&request, &policies, &entities));
                }
            })
        });
    }

    fn rego_input(input: &Input) -> regorus::Value {
        let v = match input {
            Input::Read { path } => json!({"tool": "read", "path": path}),
            Input::Bash {
                program,
                subcommand,
                flags,
            } => {
                json!({"tool": "bash", "program": program, "subcommand": subcommand, "flags": flags})
            }
        };
        regorus::Value::from(v)
    }

    pub fn regorus(group: &mut BenchmarkGroup<'_, WallTime>, inputs: &[(Input, Decision)]) {
        let mut engine = regorus::Engine::new();
        engine
            .add_policy("toolgate.rego".to_string(), REGO_POLICY.to_string())
            .expect("rego policy parses");
        let prepared: Vec<regorus::Value> = inputs.iter().map(|(i, _)| rego_input(i)).collect();
        let rule = "data.toolgate.allow".to_string();
        for (value, (input, expected)) in prepared.iter().zip(inputs) {
            engine.set_input(value.clone());
            let allowed = engine.eval_rule(rule.clone()).expect("rego evaluates");
            let got = if allowed == regorus::Value::from(true) {
                Decision::Allow
            } else {
                Decision::Deny
            };
            assert!(
                allowed == regorus::Value::from(true) || allowed == regorus::Value::from(false),
                "{allowed:?}"
            );
            assert_eq!(got, *expected, "regorus on {input:?}");
        }
        group.bench_function("regorus", |b| {
            b.iter(|| {
                for value in &prepared {
                    engine.set_input(value.clone());
                    black_box(engine.eval_rule(rule.clone()).unwrap());
                }
            })
        });
    }
}

criterion_group!(benches, bench_decision, bench_full);
criterion_main!(benches);
