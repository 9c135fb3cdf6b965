//! `toolgate bridge --stdio`: flags into [`BridgeOptions`]; the protocol
//! itself is [`crate::bridge`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{CliError, ConfigArgs};
use crate::bridge::{self, BridgeOptions};

/// The flags of `toolgate bridge`.
#[derive(Args)]
pub struct Flags {
    #[command(flatten)]
    config: ConfigArgs,
    /// Speak the JSON-lines protocol on stdin/stdout (the only transport).
    #[arg(long)]
    stdio: bool,
    /// The workspace the host's tools run in.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Use this profile's active tools.
    #[arg(long)]
    profile: Option<String>,
    /// Do not reload on policy/manifest changes and SIGHUP.
    #[arg(long)]
    no_watch: bool,
}

/// Serves until stdin closes: 0; 2 when the policy did not load or the
/// workspace cannot be opened (nothing is served then); 1 when reading stdin
/// failed.
pub fn run(flags: Flags) -> Result<ExitCode, CliError> {
    let options = BridgeOptions {
        paths: flags.config.paths(),
        profile: flags.profile,
        workspace: flags.workspace,
        watch: !flags.no_watch,
    };
    let _ = flags.stdio;
    // Fail closed at start: a policy that does not compile serves nothing.
    let gateway = bridge::start(&options).map_err(CliError::Usage)?;
    let stdin = std::io::stdin().lock();
    bridge::serve(gateway, &options, stdin, std::io::stdout())
        .map(|()| ExitCode::SUCCESS)
        .map_err(CliError::Runtime)
}
