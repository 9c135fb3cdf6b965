//! The `toolgate` command line: check, test, eval, call, redact, serve, hook,
//! schema.
//!
//! Exit codes are a contract for CI: 0 success, 1 when `check` finds errors or
//! `test` has failures, 2 for usage and configuration errors. Only requested
//! output goes to stdout; errors go to stderr.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "cli/call.rs"]
mod call;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::Value;
use toolgate::config::{self, ConfigPaths};
use toolgate::{compile, CompileOptions, CompiledPolicy, ToolCall, Workspace};

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
        /// Allow --http on a non-loopback address (the endpoint has no authentication).
        #[arg(long, requires = "http")]
        allow_remote: bool,
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
    /// Redact secrets: stdin to stdout, with the policy's redaction rules.
    Redact {
        /// Policy folder or file.
        #[arg(long)]
        policies: Option<PathBuf>,
    },
    /// Answer an agent CLI's hook call (JSON on stdin), or install toolgate as its hook.
    Hook {
        #[command(subcommand)]
        command: toolgate::hooks::HookCommand,
    },
    /// Print the JSON Schema of a file format, for editors.
    Schema {
        /// Which format.
        #[arg(value_enum)]
        kind: SchemaKind,
    },
}

#[derive(Args)]
struct ConfigArgs {
    /// Policy folder (every *.yaml is a layer) or one policy file [default: ./policies, else embedded].
    #[arg(long)]
    policies: Option<PathBuf>,
    /// Manifest folder [default: ./tool-manifests, else embedded].
    #[arg(long)]
    manifests: Option<PathBuf>,
}

impl ConfigArgs {
    fn paths(&self) -> ConfigPaths {
        ConfigPaths {
            policies: self.policies.clone(),
            manifests: self.manifests.clone(),
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Human,
    Json,
    Github,
}

#[derive(Clone, Copy, ValueEnum)]
enum SchemaKind {
    Policy,
    Manifest,
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
        command: toolgate::hooks::HookCommand,
    },
}

const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == "hook") {
        if let Ok(HookCli {
            command: HookOnly::Hook { command },
        }) = HookCli::try_parse()
        {
            return toolgate::hooks::main(command);
        }
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Check { config, format } => check(&config, format),
        Command::Test {
            config,
            workspace,
            tests,
        } => test(&config, &workspace, &tests),
        Command::Eval {
            config,
            workspace,
            profile,
            tool,
            args,
            call,
            calls,
        } => eval(&config, &workspace, profile, tool, args, call, calls),
        Command::Call {
            config,
            workspace,
            profile,
            tool,
            args,
            batch,
            events,
            sequential,
        } => {
            let request = match (tool, args, batch) {
                (Some(name), Some(args), None) => call::single(name, &args),
                (None, None, Some(file)) => read_input(&file)
                    .map_err(|e| format!("{}: {e}", file.display()))
                    .and_then(|t| {
                        call::parse_batch(&t).map_err(|e| format!("{}: {e}", file.display()))
                    }),
                _ => Err("give --tool NAME --args JSON, or --batch FILE".to_string()),
            };
            let request = match request {
                Ok(r) => r,
                Err(e) => return usage_error(e),
            };
            match load(&config, profile) {
                Ok(policy) => call::run(policy, &workspace, request, events, sequential),
                Err(code) => code,
            }
        }
        Command::Serve {
            config,
            stdio: _,
            http,
            allow_remote,
            allow_origin,
            workspace,
            profile,
            watch: _,
            no_watch,
            decision_log,
        } => serve(toolgate::serve::command::ServeOptions {
            gateway: toolgate::serve::GatewayConfig {
                paths: config.paths(),
                options: CompileOptions { profile },
                workspace,
                decision_log,
            },
            transport: match http {
                Some(addr) => {
                    toolgate::serve::command::Transport::Http(toolgate::serve::http::HttpOptions {
                        addr,
                        allow_remote,
                        allowed_origins: allow_origin,
                    })
                }
                None => toolgate::serve::command::Transport::Stdio,
            },
            watch: !no_watch,
        }),
        Command::Redact { policies } => redact(policies),
        Command::Hook { command } => toolgate::hooks::main(command),
        Command::Schema { kind } => schema(kind),
    }
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("toolgate: {message}");
    ExitCode::from(EXIT_USAGE)
}

fn load(config: &ConfigArgs, profile: Option<String>) -> Result<CompiledPolicy, ExitCode> {
    toolgate::load_policy(&config.paths(), &CompileOptions { profile }).map_err(|d| {
        eprint!("{}", d.to_human());
        eprintln!(
            "toolgate: the policy did not load ({} error{})",
            d.len(),
            if d.len() == 1 { "" } else { "s" }
        );
        ExitCode::from(EXIT_USAGE)
    })
}

fn check(config: &ConfigArgs, format: Format) -> ExitCode {
    // Compile whatever loaded even when some files did not, so one run shows
    // every problem of every file.
    let (loaded, mut diags) = config::load_all(&config.paths());
    let result = match compile(&loaded, &CompileOptions::default()) {
        Ok(p) if diags.is_empty() => Ok(p),
        Ok(_) => Err(diags),
        Err(more) => {
            diags.extend(more);
            Err(diags)
        }
    };
    // Imported rules are built lazily; `check` builds them to list any that fail.
    let warnings = result
        .as_ref()
        .map(|p| p.all_warnings())
        .unwrap_or_default();
    let mut out = std::io::stdout().lock();
    match format {
        Format::Human => {
            let _ = write!(out, "{}", warnings.to_human_warnings());
        }
        Format::Github => {
            let _ = write!(out, "{}", warnings.to_github_warnings());
        }
        Format::Json => {}
    }
    match (&result, format) {
        (Ok(p), Format::Human | Format::Github) => {
            let _ = writeln!(
                out,
                "ok: policy {} — {} files, active tools: {}; {} rules, {} command patterns, {} redaction rules",
                p.version,
                p.files.len(),
                p.tools.active.join(", "),
                p.rules.rules.len(),
                p.commands.allow.len() + p.commands.ask.len() + p.commands.deny.len(),
                p.redactor.len()
            );
        }
        (Err(d), Format::Human) => {
            let _ = write!(out, "{}", d.to_human());
            let _ = writeln!(
                out,
                "{} error{}",
                d.len(),
                if d.len() == 1 { "" } else { "s" }
            );
        }
        (Err(d), Format::Github) => {
            let _ = write!(out, "{}", d.to_github());
        }
        (_, Format::Json) => {
            let json = match &result {
                Ok(p) => {
                    serde_json::json!({"ok": true, "version": p.version, "files": p.files, "active_tools": p.tools.active, "errors": [], "warnings": warnings.0})
                }
                Err(d) => serde_json::json!({"ok": false, "errors": d.0}),
            };
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json).unwrap_or_default()
            );
        }
    }
    if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn test(config: &ConfigArgs, workspace: &Path, tests: &[PathBuf]) -> ExitCode {
    let policy = match load(config, None) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let files: Vec<PathBuf> = if tests.is_empty() {
        let dir = config
            .policies
            .clone()
            .unwrap_or_else(|| PathBuf::from("policies"))
            .join("tests");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        if found.is_empty() {
            return usage_error(format!(
                "no test files given and none found in {}",
                dir.display()
            ));
        }
        found
    } else {
        tests.to_vec()
    };
    let (mut passed, mut failed) = (0, 0);
    for path in &files {
        let file = match toolgate::testing::read_test_file(path) {
            Ok(f) => f,
            Err(e) => return usage_error(e),
        };
        let results = match toolgate::testing::run_test_file(
            &policy,
            &path.display().to_string(),
            &file,
            workspace,
        ) {
            Ok(r) => r,
            Err(e) => return usage_error(e),
        };
        for r in results {
            match r.failure {
                None => passed += 1,
                Some(why) => {
                    failed += 1;
                    println!("FAIL {}: {}: {why}", r.file, r.name);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn read_input(path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(path)
    }
}

fn parse_call(text: &str) -> Result<ToolCall, String> {
    let call: ToolCall = serde_json::from_str(text).map_err(|e| {
        format!("invalid call: {e}; expected {{\"name\": …, \"arguments\": {{…}}}}")
    })?;
    if !call.arguments.is_object() {
        return Err("`arguments` must be a JSON object".to_string());
    }
    Ok(call)
}

fn eval(
    config: &ConfigArgs,
    workspace: &Path,
    profile: Option<String>,
    tool: Option<String>,
    args: Option<String>,
    call: Option<PathBuf>,
    calls: Option<PathBuf>,
) -> ExitCode {
    // Parse every call before deciding any, so a bad line never leaves half an answer.
    let parsed: Vec<ToolCall> = match (tool, args, call, calls) {
        (Some(name), Some(args), None, None) => match serde_json::from_str::<Value>(&args) {
            Ok(arguments @ Value::Object(_)) => vec![ToolCall {
                id: String::new(),
                name,
                arguments,
            }],
            Ok(_) => {
                return usage_error(
                    "--args must be a JSON object, e.g. '{\"path\": \"src/main.rs\"}'",
                )
            }
            Err(e) => return usage_error(format!("--args is not valid JSON: {e}")),
        },
        (None, None, Some(file), None) => match read_input(&file)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_call(&t))
        {
            Ok(c) => vec![c],
            Err(e) => return usage_error(format!("{}: {e}", file.display())),
        },
        (None, None, None, Some(file)) => {
            let text = match read_input(&file) {
                Ok(t) => t,
                Err(e) => return usage_error(format!("{}: {e}", file.display())),
            };
            let mut out = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                match parse_call(line) {
                    Ok(c) => out.push(c),
                    Err(e) => return usage_error(format!("{}:{}: {e}", file.display(), i + 1)),
                }
            }
            out
        }
        _ => {
            return usage_error(
                "give one of --tool NAME --args JSON, --call FILE or --calls FILE.jsonl",
            )
        }
    };
    let policy = match load(config, profile) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let ws = match Workspace::new(workspace) {
        Ok(ws) => ws,
        Err(e) => return usage_error(format!("workspace `{}`: {e}", workspace.display())),
    };
    let mut out = std::io::stdout().lock();
    for call in &parsed {
        let verdict = policy.evaluate(&ws, call);
        let line = serde_json::to_string(&verdict).unwrap_or_default();
        if writeln!(out, "{line}").is_err() {
            return ExitCode::from(EXIT_USAGE);
        }
    }
    ExitCode::SUCCESS
}

fn serve(options: toolgate::serve::command::ServeOptions) -> ExitCode {
    use toolgate::serve::command::{self, ServeError};
    command::init_logging();
    match command::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(ServeError::Config(e)) => usage_error(e),
        Err(ServeError::Runtime(e)) => {
            eprintln!("toolgate: {e}");
            ExitCode::from(1)
        }
    }
}

fn redact(policies: Option<PathBuf>) -> ExitCode {
    let config = ConfigArgs {
        policies,
        manifests: None,
    };
    let policy = match load(&config, None) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let redactor = policy.redactor.get();
    match toolgate::policy::redact::redact_io(
        redactor,
        std::io::stdin().lock(),
        std::io::stdout().lock(),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => usage_error(format!("redact: {e}")),
    }
}

fn schema(kind: SchemaKind) -> ExitCode {
    let schema = match kind {
        SchemaKind::Policy => schemars::schema_for!(toolgate::config::PolicyFile),
        SchemaKind::Manifest => schemars::schema_for!(toolgate::config::Manifest),
    };
    println!(
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    );
    ExitCode::SUCCESS
}
