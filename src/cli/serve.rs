//! `toolgate serve`: flags into [`ServeOptions`]; the serving itself is
//! [`crate::serve::run`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{CliError, ConfigArgs};
use crate::serve::{GatewayConfig, HttpOptions, ServeError, ServeOptions, Transport};
use crate::CompileOptions;

/// The flags of `toolgate serve`.
pub struct Flags {
    pub config: ConfigArgs,
    pub http: Option<SocketAddr>,
    pub allow_remote: bool,
    pub allow_origin: Vec<String>,
    pub insecure_no_auth: bool,
    pub workspace: PathBuf,
    pub profile: Option<String>,
    pub watch: bool,
    pub decision_log: Option<PathBuf>,
}

/// Serves until stdin closes or SIGINT/SIGTERM: 0; 2 when the policy did not
/// load or the address is not allowed; 1 when serving failed.
pub fn run(flags: Flags) -> Result<ExitCode, CliError> {
    init_logging();
    let options = ServeOptions {
        gateway: GatewayConfig {
            paths: flags.config.paths(),
            options: CompileOptions {
                profile: flags.profile,
                ..CompileOptions::default()
            },
            workspace: flags.workspace,
            decision_log: flags.decision_log,
            require_auth: false,
        },
        transport: match flags.http {
            Some(addr) => Transport::Http(HttpOptions {
                addr,
                allow_remote: flags.allow_remote,
                allowed_origins: flags.allow_origin,
                insecure_no_auth: flags.insecure_no_auth,
            }),
            None => Transport::Stdio,
        },
        watch: flags.watch,
    };
    match crate::serve::run(options) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(ServeError::Config(e)) => Err(CliError::Usage(e)),
        Err(ServeError::Runtime(e)) => Err(CliError::Runtime(e)),
    }
}

/// Sends logs (rmcp's and ours) to stderr, never stdout: on stdio, stdout
/// carries only protocol messages. `TOOLGATE_LOG` takes an env-filter
/// directive such as `debug` or `toolgate=debug,rmcp=info`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLGATE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,rmcp=error,toolgate=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
