//! `toolgate hook claude|codex|gemini` and `toolgate hook install`: the
//! process around one hook answer.
//!
//! Deciding and writing the answer in the CLI's format is
//! [`crate::hooks::handle`]'s. What is here is the process: the agent CLIs
//! treat a hook that crashes, times out or exits with any other code as
//! "allow", so a panic anywhere and a missed deadline both end in a deny
//! (exit 2 with the reason on stderr), and the exit code is only ever 0 or 2.

use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use super::watchdog;
use crate::hooks::install::{self, InstallOptions};
use crate::hooks::{self, Agent, HookOptions, Reply};

/// `toolgate hook …`.
#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// Answer one Claude Code hook call (PreToolUse / PostToolUse JSON on stdin).
    Claude(HookArgs),
    /// Answer one Codex hook call (PreToolUse / PostToolUse JSON on stdin).
    Codex(HookArgs),
    /// Answer one Gemini CLI hook call (BeforeTool / AfterTool JSON on stdin).
    Gemini(HookArgs),
    /// Print the settings that register toolgate as a CLI's hook, or merge them in with --write.
    Install(InstallArgs),
}

/// Options of `toolgate hook claude|codex|gemini`.
#[derive(clap::Args, Clone, Debug)]
pub struct HookArgs {
    /// Policy folder (every *.yaml is a layer) or one policy file [default: ./policies, else embedded].
    #[arg(long)]
    policies: Option<PathBuf>,
    /// Manifest folder [default: ./tool-manifests, else embedded].
    #[arg(long)]
    manifests: Option<PathBuf>,
    /// The workspace paths are resolved against [default: the hook input's `cwd`].
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Deny when no answer is ready after this many milliseconds (keep it
    /// below the CLI's hook timeout, which would otherwise let the call run).
    #[arg(long, default_value_t = 5000)]
    deadline_ms: u64,
    /// Read the hook input from this file instead of stdin (to replay a
    /// saved call, or to time the hook without a shell).
    #[arg(long)]
    input: Option<PathBuf>,
}

/// The agent CLIs, as the command line names them.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum AgentName {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
}

impl From<AgentName> for Agent {
    fn from(a: AgentName) -> Agent {
        match a {
            AgentName::Claude => Agent::Claude,
            AgentName::Codex => Agent::Codex,
            AgentName::Gemini => Agent::Gemini,
        }
    }
}

/// Options of `toolgate hook install`.
#[derive(clap::Args, Debug, Clone)]
pub struct InstallArgs {
    /// The agent CLI.
    #[arg(value_enum)]
    agent: AgentName,
    /// Register for one project (.claude/, .codex/ or .gemini/ under --dir) [default].
    #[arg(long, conflicts_with = "user")]
    project: bool,
    /// Register for every project of this user (in the home folder).
    #[arg(long)]
    user: bool,
    /// Merge into the settings file (atomic, with a backup) instead of printing the snippet.
    #[arg(long)]
    write: bool,
    /// The project folder, for --project.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The toolgate command the CLI runs [default: this binary's absolute path].
    #[arg(long)]
    bin: Option<String>,
    /// Policy folder or file for the hook to load (written as an absolute path).
    #[arg(long)]
    policies: Option<PathBuf>,
    /// Manifest folder for the hook to load (written as an absolute path).
    #[arg(long)]
    manifests: Option<PathBuf>,
    /// The CLI's time limit for one hook run, in seconds (written in the CLI's unit).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    timeout: u64,
}

/// `toolgate hook …` on its own. A hook process starts for every tool call,
/// and building the whole command line (every subcommand's arguments) was a
/// tenth of its start. Same argument types, so the same parsing; whatever
/// this does not accept (`--help`, a typo) goes to the full parser, which
/// gives the usual message.
#[derive(Parser)]
#[command(name = "toolgate")]
struct HookCli {
    #[command(subcommand)]
    command: HookOnly,
}

#[derive(Subcommand)]
enum HookOnly {
    Hook {
        #[command(subcommand)]
        command: HookCommand,
    },
}

/// The hook command, when the command line is a well-formed `toolgate hook …`.
pub fn fast_parse() -> Option<HookCommand> {
    if std::env::args_os().nth(1).is_none_or(|a| a != "hook") {
        return None;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(command) = plain_hook_args(&args) {
        return Some(command);
    }
    match HookCli::try_parse() {
        Ok(HookCli {
            command: HookOnly::Hook { command },
        }) => Some(command),
        Err(_) => None,
    }
}

/// The command line an agent CLI runs, read without building clap's
/// command (a tenth of what was left of a hook's own work): `hook`, the
/// agent, then `--flag value` pairs of [`HookArgs`]' flags, each at most
/// once, with UTF-8 values that are not empty and do not start with `-`
/// (`--deadline-ms` digits only). Anything else is `None` and goes to clap,
/// which gives the same result or the usual message; a test checks both
/// agree.
fn plain_hook_args(args: &[std::ffi::OsString]) -> Option<HookCommand> {
    let mut it = args.iter();
    if it.next()? != "hook" {
        return None;
    }
    let agent = it.next()?;
    let mut parsed = HookArgs {
        policies: None,
        manifests: None,
        workspace: None,
        deadline_ms: 5000,
        input: None,
    };
    let mut deadline_given = false;
    while let Some(flag) = it.next() {
        let value = it.next()?;
        let text = value.to_str()?;
        if text.is_empty() || text.starts_with('-') {
            return None;
        }
        let slot = match flag.to_str()? {
            "--policies" => &mut parsed.policies,
            "--manifests" => &mut parsed.manifests,
            "--workspace" => &mut parsed.workspace,
            "--input" => &mut parsed.input,
            "--deadline-ms" if !deadline_given => {
                if text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                parsed.deadline_ms = text.parse().ok()?;
                deadline_given = true;
                continue;
            }
            _ => return None,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(PathBuf::from(value));
    }
    match agent.to_str()? {
        "claude" => Some(HookCommand::Claude(parsed)),
        "codex" => Some(HookCommand::Codex(parsed)),
        "gemini" => Some(HookCommand::Gemini(parsed)),
        _ => None,
    }
}

/// Runs `toolgate hook …`.
pub fn run(command: HookCommand) -> ExitCode {
    let (agent, args) = match command {
        HookCommand::Claude(a) => (Agent::Claude, a),
        HookCommand::Codex(a) => (Agent::Codex, a),
        HookCommand::Gemini(a) => (Agent::Gemini, a),
        HookCommand::Install(a) => return run_install(&a),
    };
    // This process decides one call and exits: small blocks need no
    // bookkeeping from here on (used when the binary's allocator is
    // `toolgate::arena::Arena`).
    crate::arena::enable();
    ExitCode::from(answer(agent, &args))
}

fn run_install(args: &InstallArgs) -> ExitCode {
    let options = InstallOptions {
        agent: args.agent.into(),
        user: args.user,
        write: args.write,
        dir: args.dir.clone(),
        bin: args.bin.clone(),
        policies: args.policies.clone(),
        manifests: args.manifests.clone(),
        timeout: args.timeout,
    };
    match install::install(&options) {
        Ok(done) => {
            if let Some(snippet) = done.snippet {
                // A closed stdout loses nothing the user asked to keep.
                let _ = writeln!(std::io::stdout().lock(), "{snippet}");
            }
            if !done.note.is_empty() {
                eprintln!("{}", done.note);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolgate: {e}");
            ExitCode::from(2)
        }
    }
}

/// Answers one hook call: reads stdin, writes the answer, returns the exit
/// code. Never panics and never returns anything but 0 or 2.
fn answer(agent: Agent, args: &HookArgs) -> u8 {
    // A panic anywhere, in any thread, denies: the hook prints the reason and
    // exits 2 before the default handler could end the process with 101.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "toolgate: internal error ({info}); the call is denied"
        );
        std::process::exit(2);
    }));
    watchdog::start(args.deadline_ms);
    let options = HookOptions {
        policies: args.policies.clone(),
        manifests: args.manifests.clone(),
        workspace: args.workspace.clone(),
    };
    let reply = std::panic::catch_unwind(AssertUnwindSafe(|| {
        inject_fault(args.deadline_ms);
        let input = match &args.input {
            None => hooks::read_input(&mut std::io::stdin().lock()),
            Some(path) => std::fs::File::open(path)
                .map_err(|e| {
                    format!(
                        "toolgate: the hook input {} cannot be opened ({e}); the call is denied",
                        path.display()
                    )
                })
                .and_then(|mut f| hooks::read_input(&mut f)),
        };
        match input {
            Ok(input) => hooks::handle(agent, &options, &input),
            Err(reason) => Reply::block(&reason),
        }
    }))
    .unwrap_or_else(|_| Reply::block("toolgate: internal error; the call is denied"));
    if !watchdog::claim_answer() {
        // The watchdog has answered and is ending the process.
        loop {
            std::thread::park();
        }
    }
    emit(&reply)
}

fn emit(reply: &Reply) -> u8 {
    let mut out = std::io::stdout().lock();
    if out
        .write_all(reply.stdout.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        let _ = writeln!(
            std::io::stderr(),
            "toolgate: the answer could not be written to stdout; the call is denied"
        );
        return 2;
    }
    if !reply.stderr.is_empty() {
        let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    }
    reply.code
}

/// Test hook for the fail-closed paths: `TOOLGATE_HOOK_FAULT=panic` panics
/// and `=stall` hangs while deciding. Either can only ever end in a deny.
fn inject_fault(deadline_ms: u64) {
    match std::env::var("TOOLGATE_HOOK_FAULT").as_deref() {
        Ok("panic") => panic!("injected fault (TOOLGATE_HOOK_FAULT=panic)"),
        Ok("stall") => std::thread::sleep(Duration::from_millis(deadline_ms.saturating_mul(10))),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clap(args: &[&str]) -> Option<String> {
        let argv = std::iter::once("toolgate").chain(args.iter().copied());
        match HookCli::try_parse_from(argv) {
            Ok(HookCli {
                command: HookOnly::Hook { command },
            }) => Some(format!("{command:?}")),
            Err(_) => None,
        }
    }

    fn plain(args: &[&str]) -> Option<String> {
        let args: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
        plain_hook_args(&args).map(|c| format!("{c:?}"))
    }

    #[test]
    fn plain_hook_arguments_read_as_clap_reads_them() {
        let common: &[&[&str]] = &[
            &["hook", "claude"],
            &["hook", "codex"],
            &["hook", "gemini"],
            &["hook", "claude", "--policies", "/p/x.yaml"],
            &["hook", "gemini", "--manifests", "m", "--workspace", "/w"],
            &[
                "hook",
                "codex",
                "--input",
                "in.json",
                "--deadline-ms",
                "250",
            ],
            &[
                "hook",
                "claude",
                "--deadline-ms",
                "0",
                "--policies",
                "a b",
                "--input",
                "i",
            ],
            &[
                "hook",
                "claude",
                "--workspace",
                "/w",
                "--manifests",
                "m",
                "--policies",
                "p",
            ],
            &["hook", "claude", "--deadline-ms", "18446744073709551615"],
        ];
        for args in common {
            let ours = plain(args);
            assert!(ours.is_some(), "{args:?} is read without clap");
            assert_eq!(ours, clap(args), "{args:?}");
        }
        // Left to clap (which reads some and refuses others).
        let others: &[&[&str]] = &[
            &[],
            &["hook"],
            &["check"],
            &["hook", "install", "claude"],
            &["hook", "claud"],
            &["hook", "claude", "--help"],
            &["hook", "claude", "--policies"],
            &["hook", "claude", "--policies", ""],
            &["hook", "claude", "--policies", "-x"],
            &["hook", "claude", "--policies=p"],
            &["hook", "claude", "--policies", "a", "--policies", "b"],
            &["hook", "claude", "--deadline-ms", "+5"],
            &["hook", "claude", "--deadline-ms", "5ms"],
            &["hook", "claude", "--deadline-ms", "1", "--deadline-ms", "2"],
            &["hook", "claude", "--deadline-ms", "18446744073709551616"],
            &["hook", "claude", "extra"],
            &["hook", "claude", "--input", "x", "--", "y"],
        ];
        for args in others {
            assert_eq!(plain(args), None, "{args:?}");
        }
    }
}
