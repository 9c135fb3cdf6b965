//! Deciding one hook call with the compiled policy: the before-event through
//! the same verdict code as every other front-end, the after-event through
//! the policy's redaction rules, result rules and limits (`after.rs`).

use serde_json::Map;

use super::translate::{self, Translation};
use super::{Agent, Answer, Event, HookOptions, Payload};
use crate::config::ConfigPaths;
use crate::policy::auth::Identity;
use crate::policy::decide::{decide, gather_as};
use crate::policy::{Strictest, UnknownToolDecision};
use crate::{CompileOptions, Policy, Verdict, Workspace};

/// The answer to `payload`; every failure is a refusal in the event's format.
pub(super) fn answer(agent: Agent, args: &HookOptions, payload: &Payload) -> Answer {
    let refuse = |reason: String| Answer::refuse(payload.event, reason);
    let paths = ConfigPaths {
        policies: args.policies.clone(),
        manifests: args.manifests.clone(),
    };
    let loaded = crate::config::load(&paths);
    let compiled = match &loaded {
        Ok(l) => compile_proven(l, args, payload),
        Err(d) => Err(d.clone()),
    };
    // The hook process ends as soon as it has answered: freeing what it
    // loaded would be wasted work on every tool call.
    std::mem::forget(loaded);
    let policy = match compiled {
        Ok(p) => p,
        Err(d) => {
            let mut errors = d.to_human();
            if errors.len() > 2000 {
                let cut = (0..=2000)
                    .rev()
                    .find(|i| errors.is_char_boundary(*i))
                    .unwrap_or(0);
                errors.truncate(cut);
                errors.push('…');
            }
            return refuse(format!(
                "toolgate: the policy did not load, so every call is denied until it is fixed (run `toolgate check`): {}",
                errors.trim_end()
            ));
        }
    };
    let answer = match payload.event {
        Event::Before => before(agent, args, &policy, payload),
        Event::After => super::after::after(agent, args, &policy, payload),
    };
    std::mem::forget(policy);
    if crate::policy::rules::compile_failed() {
        // Cannot happen for proven files (the same build compiled the same
        // bytes); should it anyway, a rule that did not run must not decide.
        return refuse("toolgate: a rule's regex failed to compile when first used, so the call is denied; run `toolgate check`".to_string());
    }
    answer
}

/// Compiles `loaded`: files this build proved before (a stamp in the state
/// directory, [`crate::config::proven`]) skip their examples and compile
/// rule regexes on first use; others are checked in full and, when they
/// pass, stamped. The embedded default alone needs no stamp (its examples
/// are proven by this crate's tests, its rules have no regex).
fn compile_proven(
    loaded: &crate::config::Loaded,
    args: &HookOptions,
    payload: &Payload,
) -> Result<Policy, crate::config::diagnostics::Diagnostics> {
    let builtin = loaded
        .layers
        .iter()
        .all(|l| l.file.text == crate::config::embedded_default_policy());
    let stamp = if builtin {
        None
    } else {
        let workspace = args
            .workspace
            .clone()
            .or_else(|| payload.cwd.as_ref().map(std::path::PathBuf::from));
        crate::config::proven::state_dir()
            .and_then(|dir| crate::config::proven::stamp(loaded, &dir, workspace.as_deref()))
    };
    let proven = stamp.as_ref().is_some_and(|s| s.found());
    let options = CompileOptions {
        proven,
        skip_origins: true,
        ..CompileOptions::default()
    };
    let compiled = crate::compile(loaded, &options);
    if let (Ok(_), Some(stamp)) = (&compiled, &stamp) {
        stamp.record();
    }
    compiled
}

/// The workspace: `--workspace`, else the CLI's `cwd`.
fn workspace(args: &HookOptions, payload: &Payload) -> Result<Workspace, String> {
    let dir = match (&args.workspace, &payload.cwd) {
        (Some(dir), _) => dir.clone(),
        (None, Some(cwd)) if std::path::Path::new(cwd).is_absolute() => cwd.into(),
        (None, Some(cwd)) => {
            return Err(format!(
                "toolgate: `cwd` must be an absolute path, got `{cwd}`; the call is denied"
            ))
        }
        (None, None) => {
            return Err(
                "toolgate: the hook input has no `cwd` and no --workspace was given, so paths cannot be resolved; the call is denied"
                    .to_string(),
            )
        }
    };
    Workspace::new(&dir).map_err(|e| {
        format!(
            "toolgate: the workspace `{}` cannot be opened ({e}); the call is denied",
            dir.display()
        )
    })
}

fn before(agent: Agent, args: &HookOptions, policy: &Policy, payload: &Payload) -> Answer {
    let answer = decide_before(agent, args, policy, payload);
    let Answer::Decide { decision, reason } = &answer else {
        return answer;
    };
    if *decision == crate::Decision::Deny || !policy.sandbox_settings().enabled {
        return answer;
    }
    let ws = match workspace(args, payload) {
        Ok(ws) => ws,
        Err(reason) => return Answer::refuse(Event::Before, reason),
    };
    let empty = Map::new();
    let input = payload.tool_input.as_ref().unwrap_or(&empty);
    match super::confine::rewrite(agent, args, ws.root(), &payload.tool_name, input) {
        Ok(Some(input)) => Answer::Confine {
            decision: *decision,
            reason: reason.clone(),
            input,
        },
        Ok(None) => answer,
        Err(reason) => Answer::refuse(Event::Before, reason),
    }
}

fn decide_before(agent: Agent, args: &HookOptions, policy: &Policy, payload: &Payload) -> Answer {
    let refuse = |reason: String| Answer::refuse(Event::Before, reason);
    let ws = match workspace(args, payload) {
        Ok(ws) => ws,
        Err(reason) => return refuse(reason),
    };
    let empty = Map::new();
    let input = payload.tool_input.as_ref().unwrap_or(&empty);
    match judge(
        agent,
        policy,
        &ws,
        &payload.tool_name,
        input,
        &payload.tool_use_id,
    ) {
        CliVerdict::Decided(v) => from_verdict(v),
        CliVerdict::Deferred => Answer::Silent,
        CliVerdict::Refused {
            rule: Some(rule),
            reason,
        } => refuse(format!("toolgate rule {rule}: {reason}")),
        CliVerdict::Refused { rule: None, reason } => refuse(format!("toolgate: {reason}")),
    }
}

/// How the policy judges an agent CLI's tool call before it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum CliVerdict {
    /// The policy's verdict: for a patch, the strictest over the files it writes.
    Decided(Verdict),
    /// No manifest maps the tool and `tools.unknown` is `defer`: the CLI's
    /// own permission flow decides.
    Deferred,
    /// The call cannot be judged as sent, so it is denied.
    Refused {
        /// The rule id, when one applies (`hooks.dialect`, `hooks.patch`, …).
        rule: Option<&'static str>,
        /// Why, and what to change.
        reason: String,
    },
}

/// Judges `agent`'s call of its tool `name` with `input` in `ws`: the
/// manifests' dialects map it onto toolgate calls, each decided by
/// [`Policy::evaluate_in`]. The hook's before-event and `toolgate replay`
/// both ask this.
pub fn judge(
    agent: Agent,
    policy: &Policy,
    ws: &Workspace,
    name: &str,
    input: &Map<String, serde_json::Value>,
    id: &str,
) -> CliVerdict {
    judge_as(agent, policy, ws, name, input, id, None)
}

/// [`judge`] for a call made by `identity` (`toolgate replay --identity`):
/// its profile's tools are the active ones, and rules scoped to it apply.
pub fn judge_as(
    agent: Agent,
    policy: &Policy,
    ws: &Workspace,
    name: &str,
    input: &Map<String, serde_json::Value>,
    id: &str,
    identity: Option<&Identity>,
) -> CliVerdict {
    match translate::translate(policy, agent.key(), name, input, id) {
        Translation::Refused { rule, reason } => CliVerdict::Refused {
            rule: Some(rule),
            reason,
        },
        Translation::Unknown if policy.unknown_tools == UnknownToolDecision::Defer => {
            CliVerdict::Deferred
        }
        // The CLI's own tool (TodoWrite, web_fetch, …) or an MCP tool no
        // manifest describes: the policy's `tools.unknown` decides.
        Translation::Unknown => CliVerdict::Decided(policy.unknown_tool_verdict(name)),
        Translation::Calls(calls) => {
            // A patch is one call per file: the strictest verdict stands, as
            // within one call.
            let mut strictest = Strictest::new();
            for mapped in &calls {
                let facts = gather_as(
                    policy,
                    ws,
                    &mapped.call,
                    mapped.workdir.as_deref(),
                    identity,
                );
                strictest.offer(decide(policy, ws, &facts));
            }
            match strictest.into_inner() {
                Some(v) => CliVerdict::Decided(v),
                None => CliVerdict::Refused {
                    rule: None,
                    reason: format!("{name} names nothing to check; the call is denied"),
                },
            }
        }
    }
}

/// A verdict as the CLI sees it: the reason always names the rule.
fn from_verdict(v: Verdict) -> Answer {
    let reason = match &v.rule {
        // Command rules with an id already name it in their reason.
        Some(rule) if !v.reason.contains(rule.as_str()) => {
            format!("toolgate rule {rule}: {}", v.reason)
        }
        _ => format!("toolgate: {}", v.reason),
    };
    Answer::Decide {
        decision: v.decision,
        reason,
    }
}
