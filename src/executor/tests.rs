//! The pipeline's behaviour with tools of known timing: Pi's event order,
//! immediate outcomes, termination votes, cancellation, progress redaction.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::config::ConfigPaths;
use crate::policy::CompileOptions;
use crate::tools::{ToolContext, ToolError, ToolFuture, ToolOutput};

/// A tool that sleeps, reports progress, then succeeds or fails.
#[derive(Debug)]
struct Scripted {
    delay_ms: u64,
    updates: Vec<&'static str>,
    fail: Option<&'static str>,
}

impl Tool for Scripted {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            for u in &self.updates {
                ctx.progress.update(ToolOutput::text(*u));
                tokio::task::yield_now().await;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(self.delay_ms)) => {}
                _ = ctx.cancel.cancelled() => return Err(ToolError::new("Operation aborted")),
            }
            match self.fail {
                Some(message) => Err(ToolError::new(message)),
                None => Ok(ToolOutput::text(format!("ok {args}"))),
            }
        })
    }
}

fn scripted(delay_ms: u64) -> Arc<dyn Tool> {
    Arc::new(Scripted {
        delay_ms,
        updates: vec![],
        fail: None,
    })
}

const TOOLS: &[&str] = &["slow", "fast", "throws", "seq", "submit", "leaky", "hang"];

/// A workspace with manifests for the scripted tools and a policy that
/// activates them, denies `fast` when x is 13 and terminates on `submit`.
fn executor(overrides: Vec<(&str, Arc<dyn Tool>)>) -> (tempfile::TempDir, Executor) {
    executor_with("", overrides)
}

/// [`executor`] with `extra` appended to the policy (e.g. a `limits:` section).
pub(super) fn executor_with(
    extra: &str,
    overrides: Vec<(&str, Arc<dyn Tool>)>,
) -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("tool-manifests");
    std::fs::create_dir(&manifests).unwrap();
    for name in TOOLS {
        let mode = if *name == "seq" {
            "sequential"
        } else {
            "parallel"
        };
        std::fs::write(
            manifests.join(format!("{name}.toml")),
            format!(
                "name = \"{name}\"\ndescription = \"test tool\"\nexecution_mode = \"{mode}\"\n\
                 implementation = {{ exec = [\"true\"] }}\n\
                 [parameters]\ntype = \"object\"\nproperties.x = {{ type = \"number\" }}\n"
            ),
        )
        .unwrap();
    }
    let policy = format!(
        "version: 1\ntools:\n  active: [{}]\npaths:\n  roots: [\".\"]\n\
         rules:\n  - id: no-13\n    tools: [fast]\n    when: {{ arg: x, equals: 13 }}\n    decision: deny\n    reason: thirteen is unlucky\n\
         terminate:\n  tools: [submit]\nredact:\n  defaults: true\n{extra}",
        TOOLS.join(", ")
    );
    std::fs::write(dir.path().join("policy.yaml"), policy).unwrap();
    let paths = ConfigPaths {
        policies: Some(dir.path().join("policy.yaml")),
        manifests: Some(manifests),
    };
    let compiled = crate::load_policy(&paths, &CompileOptions::default())
        .unwrap_or_else(|d| panic!("{}", d.to_human()));
    let mut map: HashMap<String, Arc<dyn Tool>> =
        TOOLS.iter().map(|n| (n.to_string(), scripted(1))).collect();
    for (name, tool) in overrides {
        map.insert(name.to_string(), tool);
    }
    let ws = Workspace::new(dir.path()).unwrap();
    let exec = Executor::with_tools(Arc::new(compiled), ws, map).unwrap();
    (dir, exec)
}

pub(super) fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }
}

/// Events as short strings: `start1`, `end2:ERR`, `result3`, `update1`.
fn recorder() -> (EventSink, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink_log = log.clone();
    let sink = EventSink::new(move |e| {
        let s = match e {
            Event::ToolExecutionStart { id, .. } => format!("start{id}"),
            Event::ToolExecutionUpdate { id, .. } => format!("update{id}"),
            Event::ToolExecutionEnd { id, result, .. } => {
                format!("end{id}{}", if result.is_error { ":ERR" } else { "" })
            }
            Event::ToolResult { result } => format!("result{}", result.id),
        };
        sink_log.lock().unwrap().push(s);
    });
    (sink, log)
}

fn options(events: Option<EventSink>) -> BatchOptions {
    BatchOptions {
        events,
        ..BatchOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_parallel_batch_follows_pis_event_order() {
    let (_dir, exec) = executor(vec![
        ("slow", scripted(300)),
        ("fast", scripted(20)),
        (
            "throws",
            Arc::new(Scripted {
                delay_ms: 120,
                updates: vec![],
                fail: Some("boom"),
            }),
        ),
    ]);
    let (sink, log) = recorder();
    let outcome = exec
        .run_batch(
            vec![
                call("1", "slow", json!({})),
                call("2", "nope", json!({})),
                call("3", "fast", json!({})),
                call("4", "fast", json!({"x": "not a number"})),
                call("5", "throws", json!({})),
            ],
            options(Some(sink)),
        )
        .await;
    let log = log.lock().unwrap().join(" ");
    assert_eq!(
        log,
        "start1 start2 end2:ERR start3 start4 end4:ERR start5 end3 end5:ERR end1 \
         result1 result2 result3 result4 result5"
    );
    let r = &outcome.results;
    assert_eq!(
        r.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["1", "2", "3", "4", "5"]
    );
    assert_eq!(r[1].text(), "Tool nope not found");
    assert!(r[3].text().starts_with(
        "Validation failed for tool \"fast\":\n  - x: expected number, got string\n\nReceived arguments:\n{\n  \"x\": \"not a number\"\n}"
    ), "{}", r[3].text());
    assert_eq!(r[4].text(), "boom");
    assert!(r[4].is_error && !r[0].is_error);
    assert!(!outcome.terminate);
}

#[tokio::test]
async fn a_sequential_tool_makes_the_whole_batch_sequential() {
    let (_dir, exec) = executor(vec![("slow", scripted(50))]);
    let (sink, log) = recorder();
    exec.run_batch(
        vec![call("1", "slow", json!({})), call("2", "seq", json!({}))],
        options(Some(sink)),
    )
    .await;
    assert_eq!(
        log.lock().unwrap().join(" "),
        "start1 end1 result1 start2 end2 result2"
    );
}

#[tokio::test]
async fn coercion_happens_before_the_policy_sees_arguments() {
    let (_dir, exec) = executor(vec![]);
    // "13" coerces to 13, which rule no-13 denies.
    let r = exec
        .run_call(call("1", "fast", json!({"x": "13"})), options(None))
        .await;
    assert!(r.is_error);
    assert!(r.text().contains("thirteen is unlucky"), "{}", r.text());
    assert_eq!(r.verdict.unwrap().rule.as_deref(), Some("no-13"));
    let r = exec
        .run_call(call("2", "fast", json!({"x": "12"})), options(None))
        .await;
    assert_eq!(r.text(), "ok {\"x\":12}");
}

#[tokio::test]
async fn the_batch_terminates_only_when_every_result_votes_so() {
    let (_dir, exec) = executor(vec![]);
    let run = |calls: Vec<ToolCall>| exec.run_batch(calls, options(None));
    assert!(run(vec![call("1", "submit", json!({}))]).await.terminate);
    assert!(
        run(vec![
            call("1", "submit", json!({})),
            call("2", "submit", json!({}))
        ])
        .await
        .terminate
    );
    // One ordinary, failed or unknown call keeps the loop going.
    assert!(
        !run(vec![
            call("1", "submit", json!({})),
            call("2", "fast", json!({}))
        ])
        .await
        .terminate
    );
    assert!(
        !run(vec![
            call("1", "submit", json!({})),
            call("2", "nope", json!({}))
        ])
        .await
        .terminate
    );
    assert!(
        !run(vec![
            call("1", "submit", json!({})),
            call("2", "fast", json!({"x": 13}))
        ])
        .await
        .terminate
    );
    // A failed submit does not vote to terminate.
    assert!(
        !run(vec![call("1", "submit", json!({"x": "bad"}))])
            .await
            .terminate
    );
    // An empty batch never terminates.
    assert!(!run(vec![]).await.terminate);
}

#[tokio::test]
async fn a_message_stopped_for_length_runs_nothing() {
    let (_dir, exec) = executor(vec![]);
    let (sink, log) = recorder();
    let outcome = exec
        .run_batch(
            vec![call("1", "fast", json!({})), call("2", "submit", json!({}))],
            BatchOptions {
                stopped_for_length: true,
                ..options(Some(sink))
            },
        )
        .await;
    assert_eq!(
        outcome.results[1].text(),
        "Tool call \"submit\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments."
    );
    assert!(outcome.results.iter().all(|r| r.is_error));
    assert!(!outcome.terminate);
    assert_eq!(
        log.lock().unwrap().join(" "),
        "start1 end1:ERR result1 start2 end2:ERR result2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_gives_every_call_an_aborted_result() {
    let (_dir, exec) = executor(vec![("hang", scripted(60_000))]);
    let (sink, log) = recorder();
    let opts = options(Some(sink));
    let cancel = opts.cancel.clone();
    let batch = exec.run_batch(
        vec![call("1", "hang", json!({})), call("2", "hang", json!({}))],
        opts.clone(),
    );
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(batch, canceller);
    for r in &outcome.results {
        assert!(r.is_error);
        assert_eq!(r.text(), "Operation aborted");
    }
    // A batch that starts cancelled still reports every call.
    let outcome = exec
        .run_batch(vec![call("3", "fast", json!({}))], opts)
        .await;
    assert_eq!(outcome.results[0].text(), "Operation aborted");
    let log = log.lock().unwrap().join(" ");
    assert!(log.ends_with("start3 end3:ERR result3"), "{log}");
}

#[tokio::test]
async fn a_secret_split_across_two_updates_never_reaches_an_observer() {
    // Not AWS's documented `…EXAMPLE` key: redaction allowlists that one, as gitleaks does.
    let secret = concat!("AKIA", "IOSFODNN7TESTKEY");
    let (first, second) = secret.split_at(9);
    let u1: &'static str = Box::leak(format!("building\nkey={first}").into_boxed_str());
    let u2: &'static str =
        Box::leak(format!("building\nkey={first}{second}\ndone\n").into_boxed_str());
    let leaky = Arc::new(Scripted {
        delay_ms: 1,
        updates: vec![u1, u2],
        fail: None,
    });
    let (_dir, exec) = executor(vec![("leaky", leaky)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in_sink = seen.clone();
    let sink = EventSink::new(move |e| {
        seen_in_sink
            .lock()
            .unwrap()
            .push(serde_json::to_string(e).unwrap());
    });
    exec.run_call(call("1", "leaky", json!({})), options(Some(sink)))
        .await;
    let seen = seen.lock().unwrap();
    let updates: Vec<_> = seen.iter().filter(|e| e.contains("update")).collect();
    assert_eq!(updates.len(), 2, "{seen:?}");
    for event in seen.iter() {
        assert!(!event.contains(first), "part of the secret leaked: {event}");
    }
    assert!(updates[1].contains("[REDACTED"), "{}", updates[1]);
}

#[tokio::test]
async fn updates_after_the_tool_ends_are_dropped() {
    #[derive(Debug)]
    struct Late;
    impl Tool for Late {
        fn execute<'a>(&'a self, ctx: &'a ToolContext, _: Value) -> ToolFuture<'a> {
            let progress = ctx.progress.clone();
            Box::pin(async move {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    progress.update(ToolOutput::text("late\n"));
                });
                ctx.progress.update(ToolOutput::text("early\n"));
                Ok(ToolOutput::text("done"))
            })
        }
    }
    let (_dir, exec) = executor(vec![("fast", Arc::new(Late))]);
    let (sink, log) = recorder();
    exec.run_call(call("1", "fast", json!({})), options(Some(sink)))
        .await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(log.lock().unwrap().join(" "), "start1 update1 end1 result1");
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result() {
    #[derive(Debug)]
    struct Panics;
    impl Tool for Panics {
        fn execute<'a>(&'a self, _: &'a ToolContext, _: Value) -> ToolFuture<'a> {
            Box::pin(async move { panic!("bug") })
        }
    }
    let (_dir, exec) = executor(vec![("fast", Arc::new(Panics))]);
    let r = exec
        .run_call(call("1", "fast", json!({})), options(None))
        .await;
    assert!(r.is_error);
    assert!(r.text().contains("crashed"), "{}", r.text());
}

#[tokio::test]
async fn a_new_policy_applies_to_new_batches_only() {
    let (dir, exec) = executor(vec![("slow", scripted(100))]);
    let before = exec.snapshot();
    let pending = exec.run_call(call("1", "slow", json!({})), options(None));
    let swap = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The new policy deactivates every tool.
        std::fs::write(
            dir.path().join("policy.yaml"),
            "version: 1\ntools:\n  active: []\n",
        )
        .unwrap();
        let paths = ConfigPaths {
            policies: Some(dir.path().join("policy.yaml")),
            manifests: Some(dir.path().join("tool-manifests")),
        };
        let p = crate::load_policy(&paths, &CompileOptions::default()).unwrap();
        exec.set_policy(Arc::new(p)).unwrap();
    };
    let (r, ()) = tokio::join!(pending, swap);
    assert!(!r.is_error, "the running call kept its snapshot");
    assert_eq!(r.policy_version, before.policy.version);
    let r = exec
        .run_call(call("2", "slow", json!({})), options(None))
        .await;
    assert_eq!(r.text(), "Tool slow not found");
}

#[tokio::test]
async fn ask_without_an_approver_blocks_and_says_why() {
    struct Yes;
    impl Approver for Yes {
        fn approve<'a>(
            &'a self,
            _: &'a ToolCall,
            _: &'a Verdict,
        ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
            Box::pin(async { true })
        }
    }
    // `nope2` is not a tool; the default policy's `unknown: ask` does not
    // apply to calls (a tool that does not exist cannot run), so use bash's
    // `rm` (ask in the default policy) through the real embedded policy.
    let dir = tempfile::tempdir().unwrap();
    let policy = crate::load_policy(&ConfigPaths::default(), &CompileOptions::default()).unwrap();
    let exec = Executor::with_tools(
        Arc::new(policy),
        Workspace::new(dir.path()).unwrap(),
        [("bash".to_string(), scripted(1))].into_iter().collect(),
    )
    .unwrap();
    let rm = call("1", "bash", json!({"command": "rm notes.txt"}));
    let r = exec.run_call(rm.clone(), options(None)).await;
    assert!(r.is_error);
    assert!(r.text().starts_with("Approval required:"), "{}", r.text());
    let r = exec
        .run_call(
            rm,
            BatchOptions {
                approver: Some(Arc::new(Yes)),
                ..options(None)
            },
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
}

/// Every event of a batch as JSON, from a sink taking `kinds` (all: `None`).
async fn events_as_json(kinds: Option<&[EventKind]>) -> Vec<String> {
    let talky = Arc::new(Scripted {
        delay_ms: 1,
        updates: vec!["one\n", "two\n"],
        fail: None,
    });
    let (_dir, exec) = executor(vec![("slow", talky)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in_sink = seen.clone();
    let record = move |e: &Event| {
        let mut json = serde_json::to_value(e).unwrap();
        // Timing differs between runs; everything else must not.
        if let Some(ms) = json.as_object_mut().and_then(|o| o.remove("duration_ms")) {
            assert!(ms.is_u64(), "{ms}");
        }
        seen_in_sink.lock().unwrap().push(json.to_string());
    };
    let sink = match kinds {
        Some(kinds) => EventSink::only(kinds, record),
        None => EventSink::new(record),
    };
    // A denied call (ends in preflight) and one that runs with updates.
    let batch = vec![
        call("1", "fast", json!({"x": 13})),
        call("2", "slow", json!({"x": "7"})),
    ];
    let outcome = exec.run_batch(batch, options(Some(sink))).await;
    assert_eq!(outcome.results.len(), 2);
    let seen = seen.lock().unwrap().clone();
    seen
}

#[tokio::test]
async fn a_sink_gets_exactly_the_kinds_it_takes() {
    let all = events_as_json(None).await;
    let kinds = |e: &str| serde_json::from_str::<Value>(e).unwrap()["type"].clone();
    let types: Vec<_> = all.iter().map(|e| kinds(e)).collect();
    assert_eq!(
        types,
        [
            "tool_execution_start",
            "tool_execution_end",
            "tool_execution_start",
            "tool_execution_update",
            "tool_execution_update",
            "tool_execution_end",
            "tool_result",
            "tool_result"
        ]
    );
    for (taken, names) in [
        (&[EventKind::Update][..], &["tool_execution_update"][..]),
        (
            &[EventKind::Start, EventKind::Result][..],
            &["tool_execution_start", "tool_result"][..],
        ),
        (&[EventKind::End][..], &["tool_execution_end"][..]),
        (&[][..], &[][..]),
    ] {
        let only = events_as_json(Some(taken)).await;
        // The same events, byte for byte, minus the kinds not taken.
        let expected: Vec<_> = all
            .iter()
            .filter(|e| names.iter().any(|n| kinds(e) == *n))
            .cloned()
            .collect();
        assert_eq!(only, expected, "{taken:?}");
    }
}
