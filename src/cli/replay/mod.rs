//! `toolgate replay`: decide recorded calls under a proposed policy and say
//! what would change — "what does this PR do?" answered with real calls.
//!
//! Every call is decided under the new policy exactly as it would be live:
//! toolgate's own calls (decision logs, `eval --calls` lines) by
//! [`Policy::evaluate`], an agent CLI's calls (hook payloads, Claude Code
//! transcripts, Codex rollouts) by [`hooks::judge`], the hook's own
//! before-event path. Each is compared with the `--baseline` policy's
//! decision, or without one with the decision recorded in a decision log.
//!
//! Inputs stream: one line at a time, so a log of any size replays in
//! constant memory (the report keeps counts and a few examples per group).

mod input;
mod memo;
mod report;

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use serde_json::Value;

use self::input::{Line, Record};
use self::memo::{Answer, Memo};
use self::report::{Example, Report};
use super::error::{load, load_with};
use super::identity::identity_for;
use super::input::open_workspace;
use super::{CliError, ConfigArgs};
use crate::config::ConfigPaths;
use crate::hooks::{self, CliVerdict};
use crate::policy::auth::Identity;
use crate::policy::Decision;
use crate::{CompileOptions, Policy, ToolCall, Workspace};

/// How the report is printed.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ReplayFormat {
    /// Text for a terminal.
    Human,
    /// One JSON document.
    Json,
    /// A pull-request comment.
    Markdown,
    /// GitHub workflow annotations.
    Github,
}

/// Which changes fail the run (exit 1).
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum FailOn {
    /// A call decided less strictly than before.
    Loosen,
    /// Any call decided differently.
    Any,
}

/// `replay`'s flags.
#[derive(clap::Args)]
pub(crate) struct Flags {
    #[command(flatten)]
    pub(crate) config: ConfigArgs,
    /// The current policy to compare with [default: the decision recorded in a decision log].
    #[arg(long, value_name = "OLD_POLICIES")]
    pub(crate) baseline: Option<PathBuf>,
    /// The workspace paths are resolved against.
    #[arg(long, default_value = ".")]
    pub(crate) workspace: PathBuf,
    /// Use this profile's active tools (both policies; with --identity:
    /// that caller's profile).
    #[arg(long)]
    pub(crate) profile: Option<String>,
    /// Decide calls that recorded no caller as this one (a token id or JWT
    /// identity; its profile: --profile, else its token's in each policy's
    /// `auth.tokens`). Decision-log lines with an `identity` are always
    /// decided as the caller they recorded.
    #[arg(long, value_name = "ID")]
    pub(crate) identity: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub(crate) format: ReplayFormat,
    /// Example calls shown per change.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) examples: usize,
    /// Fail (exit 1) on loosened calls only, or on any change.
    #[arg(long, value_enum, default_value = "loosen")]
    pub(crate) fail_on: FailOn,
    /// Count unreadable lines as not replayable instead of failing (exit 2).
    #[arg(long)]
    pub(crate) skip_invalid: bool,
    /// Decide with the new policy's audit entries (`mode: audit`) enforced:
    /// what switching them on would change.
    #[arg(long)]
    pub(crate) enforce_audit: bool,
    /// Decide every call afresh: by default a call recorded again (same
    /// tool, arguments and caller) gets the answer its first occurrence got
    /// in this run, the file system as it was then.
    #[arg(long)]
    pub(crate) no_memo: bool,
    /// Decision logs, `eval --calls` files, hook payloads, Claude Code
    /// transcripts or Codex rollouts (- for stdin); the format is told by content.
    #[arg(value_name = "INPUT")]
    pub(crate) inputs: Vec<PathBuf>,
}

/// A whole input read as one JSON value (a pretty-printed hook payload)
/// is refused beyond this size: larger inputs are logs, one call a line.
const MAX_WHOLE_FILE: u64 = 64 << 20;

/// How many bad lines are named on stderr before the rest are only counted.
const NAMED_ERRORS: usize = 10;

/// Runs `replay`: 0 when nothing loosened, 1 when a call is decided less
/// strictly (or, with `--fail-on any`, differently), 2 for usage,
/// configuration or input errors.
pub(crate) fn run(flags: Flags) -> Result<ExitCode, CliError> {
    if flags.inputs.is_empty() {
        return Err(CliError::usage(
            "give at least one INPUT: a decision log, an `eval --calls` file, hook payloads, a Claude Code transcript or a Codex rollout (- for stdin)",
        ));
    }
    // Audit entries of the new policy count as enforced with
    // --enforce-audit; the baseline is taken as it runs.
    let new = load_with(
        &flags.config.paths(),
        &CompileOptions {
            profile: flags.profile.clone(),
            enforce_audit: flags.enforce_audit,
            ..CompileOptions::default()
        },
    )?;
    let old = match &flags.baseline {
        Some(dir) => Some(load(
            &ConfigPaths {
                policies: Some(dir.clone()),
                manifests: flags.config.manifests.clone(),
            },
            flags.profile.clone(),
        )?),
        None => None,
    };
    let ws = open_workspace(&flags.workspace)?;
    let caller = |policy: &Policy| {
        flags
            .identity
            .as_deref()
            .map(|id| identity_for(policy, id, flags.profile.as_deref()))
    };
    let mut replay = Replay {
        judge: Judge {
            new: (&new, caller(&new)),
            old: old.as_ref().map(|p| (p, caller(p))),
            ws: &ws,
            memo: (!flags.no_memo).then(Memo::new),
        },
        report: Report::new(flags.examples),
        errors: 0,
        skip_invalid: flags.skip_invalid,
        progress: io::stderr().is_terminal(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    for path in &flags.inputs {
        replay.file(path)?;
    }
    if replay.progress {
        eprint!("\r\x1b[K");
    }
    let report = &replay.report;
    let text = match flags.format {
        ReplayFormat::Human => report.to_human(),
        ReplayFormat::Json => format!("{}\n", report.to_json()),
        ReplayFormat::Markdown => report.to_markdown(),
        ReplayFormat::Github => report.to_github(),
    };
    io::stdout().lock().write_all(text.as_bytes())?;
    if replay.errors > 0 {
        return Err(CliError::usage(format!(
            "{} input line{} could not be read (see above); the report leaves them out. \
             Fix the input, or pass --skip-invalid to count them as not replayable",
            replay.errors,
            if replay.errors == 1 { "" } else { "s" }
        )));
    }
    let failed = match flags.fail_on {
        FailOn::Loosen => report.loosened() > 0,
        FailOn::Any => report.loosened() + report.tightened() > 0,
    };
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Lines decided together, split among the cores; a chunk is folded into
/// the report in input order, so examples are the first ones recorded.
const CHUNK: usize = 4096;

/// The policies a call is decided under: shared by the worker threads.
struct Judge<'a> {
    /// The new policy, and the `--identity` caller as it sees it.
    new: (&'a Policy, Option<Identity>),
    /// The baseline, likewise.
    old: Option<(&'a Policy, Option<Identity>)>,
    ws: &'a Workspace,
    /// Answers already given in this run (`None` with `--no-memo`).
    memo: Option<Memo>,
}

/// What one input line came to.
enum Judged {
    /// Its calls, each with its old and new decision.
    Calls(Vec<Judgement>),
    /// No call to replay.
    Pass,
    /// A call that cannot be replayed (counted).
    NotReplayable,
    /// JSON of no known format.
    Unknown,
    /// Not JSON.
    NotJson(String),
    /// A call with no recorded decision and no `--baseline`.
    NeedsBaseline,
}

struct Judgement {
    record: Record,
    from: Decision,
    to: Decision,
    rule: Option<String>,
}

impl Judge<'_> {
    fn line(&self, text: &str) -> Judged {
        match input::read_line(text) {
            Ok(line) => self.calls(line),
            Err(e) => Judged::NotJson(e.to_string()),
        }
    }

    fn value(&self, value: Value) -> Judged {
        self.calls(input::read(value))
    }

    fn calls(&self, line: Line) -> Judged {
        match line {
            Line::Calls(records) => {
                let mut out = Vec::with_capacity(records.len());
                for mut record in records {
                    // The call is lent to the policies, then handed back to
                    // the record (no copy of the arguments per decision).
                    let call = ToolCall {
                        id: String::new(),
                        name: std::mem::take(&mut record.name),
                        arguments: Value::Object(std::mem::take(&mut record.arguments)),
                    };
                    let key = self
                        .memo
                        .as_ref()
                        .and_then(|_| memo::key(&record, &call.name, &call.arguments));
                    let remembered = match (&self.memo, &key) {
                        (Some(memo), Some(key)) => memo.get(key),
                        _ => None,
                    };
                    let answer = remembered.unwrap_or_else(|| {
                        let answer = self.decide(&record, &call);
                        if let (Some(memo), Some(key)) = (&self.memo, key) {
                            memo.put(&key, &answer);
                        }
                        answer
                    });
                    let Answer { from, to, rule } = answer;
                    // Without a baseline, compared with the recorded decision.
                    let from = if self.old.is_some() {
                        from
                    } else {
                        record.recorded
                    };
                    record.name = call.name;
                    if let Value::Object(arguments) = call.arguments {
                        record.arguments = arguments;
                    }
                    let Some(from) = from else {
                        return Judged::NeedsBaseline;
                    };
                    out.push(Judgement {
                        record,
                        from,
                        to,
                        rule,
                    });
                }
                Judged::Calls(out)
            }
            Line::Pass => Judged::Pass,
            Line::NotReplayable => Judged::NotReplayable,
            Line::Unknown => Judged::Unknown,
        }
    }

    /// Decides `call` (what `record` recorded) under both policies.
    fn decide(&self, record: &Record, call: &ToolCall) -> Answer {
        let from = self
            .old
            .as_ref()
            .map(|(old, caller)| decide(old, self.ws, record, call, caller.as_ref()).0);
        let (new, caller) = &self.new;
        let (to, rule) = decide(new, self.ws, record, call, caller.as_ref());
        Answer { from, to, rule }
    }
}

struct Replay<'a> {
    judge: Judge<'a>,
    report: Report,
    errors: usize,
    skip_invalid: bool,
    progress: bool,
    threads: usize,
}

impl Replay<'_> {
    fn file(&mut self, path: &Path) -> Result<(), CliError> {
        let name = path.display().to_string();
        let open_error = |e: io::Error| CliError::usage(format!("{name}: {e}"));
        let reader: Box<dyn Read> = if path == Path::new("-") {
            Box::new(io::stdin().lock())
        } else {
            Box::new(File::open(path).map_err(open_error)?)
        };
        let mut reader = BufReader::with_capacity(1 << 16, reader);
        let mut chunk: Vec<(usize, String)> = Vec::with_capacity(CHUNK);
        let mut line = String::new();
        let mut number = 0usize;
        let mut first = true;
        loop {
            line.clear();
            let read = reader
                .read_line(&mut line)
                .map_err(|e| CliError::usage(format!("{name}:{}: {e}", number + 1)))?;
            if read == 0 {
                break;
            }
            number += 1;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            if std::mem::take(&mut first)
                && (text.starts_with('{') || text.starts_with('['))
                && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
            {
                // A pretty-printed JSON document: read it whole.
                let mut rest = line.clone();
                reader
                    .take(MAX_WHOLE_FILE)
                    .read_to_string(&mut rest)
                    .map_err(|e| CliError::usage(format!("{name}: {e}")))?;
                return self.document(&rest, &name);
            }
            if !line.ends_with('\n') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
            {
                // The last line of a log still being written.
                eprintln!("toolgate: {name}:{number}: the last line is incomplete (a log still being written?); left out");
                self.report.skip();
                break;
            }
            chunk.push((number, text.to_string()));
            if chunk.len() == CHUNK {
                self.flush(&mut chunk, &name)?;
            }
        }
        self.flush(&mut chunk, &name)
    }

    /// A whole file that is one JSON value: a call, or an array of them.
    fn document(&mut self, text: &str, name: &str) -> Result<(), CliError> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => {
                for item in items {
                    let judged = self.judge.value(item);
                    self.fold(judged, name, 1)?;
                }
                Ok(())
            }
            Ok(value) => {
                let judged = self.judge.value(value);
                self.fold(judged, name, 1)
            }
            Err(e) => {
                self.bad(
                    name,
                    1,
                    &format!("not JSON lines nor one JSON document ({e})"),
                );
                Ok(())
            }
        }
    }

    /// Decides a chunk of lines on every core, then counts them in order.
    fn flush(&mut self, chunk: &mut Vec<(usize, String)>, name: &str) -> Result<(), CliError> {
        let judge = &self.judge;
        let per_thread = chunk.len().div_ceil(self.threads).max(1);
        let run = |part: &[(usize, String)]| -> Vec<Judged> {
            part.iter().map(|(_, l)| judge.line(l)).collect()
        };
        let judged: Vec<Judged> = std::thread::scope(|scope| {
            let mut parts = chunk.chunks(per_thread);
            let head = parts.next().unwrap_or_default();
            // The other parts on threads of their own; a part whose thread
            // cannot be started (a process limit) runs here.
            let workers: Vec<_> = parts
                .map(|part| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || run(part))
                        .map_err(|_| part)
                })
                .collect();
            let mut all = run(head);
            for worker in workers {
                match worker {
                    Ok(handle) => all.extend(
                        handle
                            .join()
                            .unwrap_or_else(|p| std::panic::resume_unwind(p)),
                    ),
                    Err(part) => all.extend(run(part)),
                }
            }
            all
        });
        for ((number, _), judged) in chunk.iter().zip(judged) {
            self.fold(judged, name, *number)?;
        }
        chunk.clear();
        Ok(())
    }

    fn fold(&mut self, judged: Judged, name: &str, number: usize) -> Result<(), CliError> {
        match judged {
            Judged::Calls(calls) => {
                for j in calls {
                    let new = self.judge.new.0;
                    let record = j.record;
                    self.report.add(j.from, j.to, j.rule.as_deref(), || {
                        let mut arguments = record.arguments;
                        for value in arguments.values_mut() {
                            crate::executor::redact_value(new.redactor.get(), value);
                        }
                        Example {
                            name: record.name,
                            arguments,
                        }
                    });
                    if self.progress && self.report.total().is_multiple_of(1 << 16) {
                        eprint!("\rtoolgate replay: {} calls…", self.report.total());
                    }
                }
            }
            Judged::NotReplayable => self.report.skip(),
            Judged::Pass => {}
            Judged::Unknown => self.bad(
                name,
                number,
                "a JSON line of no known format (a decision log line, an `eval --calls` line {\"name\", \"arguments\"}, a hook payload, a Claude Code transcript or Codex rollout line)",
            ),
            Judged::NotJson(e) => self.bad(name, number, &format!("not JSON ({e})")),
            Judged::NeedsBaseline => {
                return Err(CliError::usage(format!(
                    "{name}:{number}: this call has no recorded decision (only toolgate's decision logs have one); give --baseline OLD_POLICIES to compare it with"
                )))
            }
        }
        Ok(())
    }

    fn bad(&mut self, name: &str, number: usize, what: &str) {
        if self.skip_invalid {
            self.report.skip();
            return;
        }
        self.errors += 1;
        if self.errors <= NAMED_ERRORS {
            eprintln!("toolgate: {name}:{number}: {what}");
        }
    }
}

/// The decision `policy` makes on `call` (what `record` recorded), and the
/// rule that made it: as the caller the record names, else as `caller`
/// (`--identity`).
fn decide(
    policy: &Policy,
    ws: &Workspace,
    record: &Record,
    call: &ToolCall,
    caller: Option<&Identity>,
) -> (Decision, Option<String>) {
    let identity = record.identity.as_ref().or(caller);
    match record.agent {
        None => {
            let v = policy.evaluate_as(ws, call, identity);
            (v.decision, v.rule)
        }
        Some(agent) => match hooks::judge_as(
            agent,
            policy,
            ws,
            &call.name,
            call.arguments
                .as_object()
                .unwrap_or(&serde_json::Map::new()),
            "",
            identity,
        ) {
            CliVerdict::Decided(v) => (v.decision, v.rule),
            // The CLI's own permission flow decides, which asks by default.
            CliVerdict::Deferred => (Decision::Ask, Some("tools.unknown".to_string())),
            CliVerdict::Refused { rule, .. } => (Decision::Deny, rule.map(str::to_string)),
        },
    }
}
