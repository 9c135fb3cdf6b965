//! The `toolgate` command line: one file per subcommand, clap types only
//! here, and one place ([`error::exit_code`]) that turns failures into exit
//! codes and messages.
//!
//! Exit codes are a contract for CI: 0 success, 1 when `check` finds errors or
//! `test` has failures, 2 for usage and configuration errors. Only requested
//! output goes to stdout; errors go to stderr.

mod auth;
mod bridge;
mod call;
mod check;
mod error;
mod eval;
mod explain;
mod hook;
mod identity;
mod input;
mod pin;
mod redact;
mod replay;
mod sandbox;
mod schema;
mod serve;
mod test;
mod watchdog;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::ConfigPaths;
pub use error::CliError;

#[derive(Parser)]
#[command(
    name = "toolgate",
    version,
    about = "A declarative policy-and-tool gateway for AI agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load and compile the policy and manifests; report every problem.
    Check {
        #[command(flatten)]
        config: ConfigArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
    },
    /// Run policy test files (default: every *.yaml in POLICIES/tests/).
    Test {
        #[command(flatten)]
        config: ConfigArgs,
        /// Workspace for test files that do not create their own.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Test files.
        tests: Vec<PathBuf>,
    },
    /// Decide calls without running them; prints one JSON verdict per call.
    Eval {
        #[command(flatten)]
        config: ConfigArgs,
        /// The workspace paths are resolved against.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Use this profile's active tools.
        #[arg(long)]
        profile: Option<String>,
        /// The tool called (with --args).
        #[arg(long, requires = "args", conflicts_with_all = ["call", "calls"])]
        tool: Option<String>,
        /// The arguments, a JSON object (with --tool).
        #[arg(long, requires = "tool")]
        args: Option<String>,
        /// A file (or - for stdin) holding one call: {"name": …, "arguments": {…}}.
        #[arg(long, conflicts_with = "calls")]
        call: Option<PathBuf>,
        /// A JSONL file (or - for stdin) with one call per line.
        #[arg(long)]
        calls: Option<PathBuf>,
    },
    /// Explain one call's verdict: the commands and paths the policy saw,
    /// every finding with its rule's file and line, and which one decided.
    Explain(explain::Flags),
    /// Run calls through the whole pipeline (policy, tools, redaction); prints
    /// one JSON result per call, in source order.
    Call {
        #[command(flatten)]
        config: ConfigArgs,
        /// The workspace tools run in.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Use this profile's active tools.
        #[arg(long)]
        profile: Option<String>,
        /// The tool called (with --args).
        #[arg(long, requires = "args", conflicts_with = "batch")]
        tool: Option<String>,
        /// The arguments, a JSON object (with --tool).
        #[arg(long, requires = "tool")]
        args: Option<String>,
        /// A JSON file (or - for stdin): an array of {"id", "name", "arguments"},
        /// or {"calls": [...], "stop_reason": "length"}.
        #[arg(long)]
        batch: Option<PathBuf>,
        /// Write events (start, update, end, result) as JSON lines to FILE (- for stderr).
        #[arg(long, value_name = "FILE")]
        events: Option<PathBuf>,
        /// Run the calls one at a time.
        #[arg(long)]
        sequential: bool,
    },
    /// Serve the active tools over MCP (stdio, or Streamable HTTP at /mcp
    /// with /status, /healthz, /metrics and /v1/eval), reloading on change.
    Serve {
        #[command(flatten)]
        config: ConfigArgs,
        /// MCP on stdin/stdout (the default).
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// MCP over Streamable HTTP on ADDR (e.g. 127.0.0.1:8080; loopback only
        /// unless --allow-remote).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Allow --http on a non-loopback address (the policy must set
        /// `auth.required: true`).
        #[arg(long, requires = "http")]
        allow_remote: bool,
        /// With --allow-remote: serve without requiring authentication
        /// (anyone who reaches the port can call every tool).
        #[arg(long, requires = "allow_remote")]
        insecure_no_auth: bool,
        /// A browser Origin allowed besides loopback ones (repeatable).
        #[arg(long, value_name = "ORIGIN", requires = "http")]
        allow_origin: Vec<String>,
        /// The workspace tools run in.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Use this profile's active tools.
        #[arg(long)]
        profile: Option<String>,
        /// Reload on policy/manifest changes and SIGHUP (default).
        #[arg(long, overrides_with = "no_watch")]
        watch: bool,
        /// Do not reload.
        #[arg(long)]
        no_watch: bool,
        /// Append decision lines (JSON) to FILE instead of stderr.
        #[arg(long, value_name = "FILE")]
        decision_log: Option<PathBuf>,
    },
    /// Decide recorded calls under a proposed policy and report what changes:
    /// exit 1 when any call would be decided less strictly.
    Replay(replay::Flags),
    /// Answer a host's before/after-tool requests (JSON lines on stdin/stdout)
    /// with the policy, reloading on change: for hosts that run their own
    /// tools, such as Pi's extension.
    Bridge(bridge::Flags),
    /// Accept an upstream server's tools as they are now: show the change, rewrite NAME.lock.
    Pin {
        #[command(flatten)]
        config: ConfigArgs,
        /// The directory the server runs in.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// The server's name (`[server] name`).
        name: String,
    },
    /// Redact secrets: stdin to stdout, with the policy's redaction rules.
    Redact {
        /// Policy folder or file.
        #[arg(long)]
        policies: Option<PathBuf>,
    },
    /// Answer an agent CLI's hook call (JSON on stdin), or install toolgate as its hook.
    Hook {
        #[command(subcommand)]
        command: hook::HookCommand,
    },
    /// Authentication helpers for `serve --http` (`auth:` in the policy).
    Auth {
        #[command(subcommand)]
        command: auth::AuthCommand,
    },
    /// Print the JSON Schema of a file format, for editors.
    /// Run a command confined by the policy's sandbox (`sandbox:` and
    /// `paths:`); exits with the command's status.
    Sandbox {
        #[command(flatten)]
        config: ConfigArgs,
        /// The workspace the policy's roots and globs are relative to.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
    Schema {
        /// Which format.
        #[arg(value_enum)]
        kind: SchemaKind,
    },
}

#[derive(Args)]
pub(crate) struct ConfigArgs {
    /// Policy folder (every *.yaml is a layer) or one policy file [default: ./policies, else embedded].
    #[arg(long)]
    pub(crate) policies: Option<PathBuf>,
    /// Manifest folder [default: ./tool-manifests, else embedded].
    #[arg(long)]
    pub(crate) manifests: Option<PathBuf>,
}

impl ConfigArgs {
    pub(crate) fn paths(&self) -> ConfigPaths {
        ConfigPaths {
            policies: self.policies.clone(),
            manifests: self.manifests.clone(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Human,
    Json,
    Github,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SchemaKind {
    Policy,
    Manifest,
}

/// Runs the command line: parse, run one subcommand, exit code.
pub fn main() -> ExitCode {
    // A hook process starts for every tool call: parse `toolgate hook …` with
    // its own arguments only (see `hook::fast_parse`).
    if let Some(command) = hook::fast_parse() {
        return hook::run(command);
    }
    let cli = Cli::parse();
    let code = error::exit_code(run(cli.command));
    // Confined commands' empty TMPDIRs kept for reuse (serve, call, eval):
    // none stays behind.
    crate::confine::remove_pooled_tmpdirs();
    code
}

fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Check { config, format } => check::run(&config, format),
        Command::Test {
            config,
            workspace,
            tests,
        } => test::run(&config, &workspace, &tests),
        Command::Eval {
            config,
            workspace,
            profile,
            tool,
            args,
            call,
            calls,
        } => eval::run(&config, &workspace, profile, tool, args, call, calls),
        Command::Explain(flags) => explain::run(flags),
        Command::Call {
            config,
            workspace,
            profile,
            tool,
            args,
            batch,
            events,
            sequential,
        } => call::run(
            &config, &workspace, profile, tool, args, batch, events, sequential,
        ),
        Command::Serve {
            config,
            stdio: _,
            http,
            allow_remote,
            allow_origin,
            insecure_no_auth,
            workspace,
            profile,
            watch: _,
            no_watch,
            decision_log,
        } => serve::run(serve::Flags {
            config,
            http,
            allow_remote,
            allow_origin,
            insecure_no_auth,
            workspace,
            profile,
            watch: !no_watch,
            decision_log,
        }),
        Command::Replay(flags) => replay::run(flags),
        Command::Bridge(flags) => bridge::run(flags),
        Command::Pin {
            config,
            workspace,
            name,
        } => pin::run(&config, &workspace, &name),
        Command::Redact { policies } => redact::run(policies),
        Command::Hook { command } => Ok(hook::run(command)),
        Command::Auth { command } => auth::run(command),
        Command::Sandbox {
            config,
            workspace,
            command,
        } => sandbox::run(&config, &workspace, &command),
        Command::Schema { kind } => schema::run(kind),
    }
}
