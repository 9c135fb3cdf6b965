//! How every subcommand fails, and the one place failures become exit codes
//! and messages.
//!
//! Exit codes are a contract for CI: 0 success, 1 when `check` finds errors,
//! `test` has failures or a call's result is an error (the subcommands say
//! so themselves with their `ExitCode`), 2 for usage and configuration
//! errors. A closed stdout (`toolgate eval … | head -1`) is not an error:
//! the reader has what it wanted, so the subcommand ends quietly with 0.

use std::fmt;
use std::io;
use std::process::ExitCode;

use crate::config::{ConfigPaths, Diagnostics};
use crate::{CompileOptions, Policy};

/// Exit code for usage and configuration errors.
pub const EXIT_USAGE: u8 = 2;

/// Why a subcommand stopped.
#[derive(Debug)]
pub enum CliError {
    /// Bad flags or input files: the message, exit 2.
    Usage(String),
    /// The policy did not load: every diagnostic, exit 2.
    Config(Diagnostics),
    /// Something failed after a good start (I/O, the transport): exit 1.
    Runtime(String),
    /// Writing to stdout failed; a closed pipe ends quietly with 0.
    Output(io::Error),
}

impl CliError {
    /// A usage error with `message`.
    pub fn usage(message: impl fmt::Display) -> CliError {
        CliError::Usage(message.to_string())
    }
}

impl From<io::Error> for CliError {
    /// Only writes to stdout are turned into errors with `?`; reads name
    /// their file with [`CliError::usage`].
    fn from(e: io::Error) -> CliError {
        CliError::Output(e)
    }
}

/// Prints `result`'s error, if any, and gives the process's exit code.
pub fn exit_code(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(CliError::Usage(message)) => {
            eprintln!("toolgate: {message}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(CliError::Config(d)) => {
            eprint!("{}", d.to_human());
            eprintln!(
                "toolgate: the policy did not load ({} error{})",
                d.len(),
                if d.len() == 1 { "" } else { "s" }
            );
            ExitCode::from(EXIT_USAGE)
        }
        Err(CliError::Runtime(message)) => {
            eprintln!("toolgate: {message}");
            ExitCode::from(1)
        }
        Err(CliError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(CliError::Output(e)) => {
            eprintln!("toolgate: cannot write the output: {e}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Loads and compiles the policy, or says why it did not load.
pub fn load(paths: &ConfigPaths, profile: Option<String>) -> Result<Policy, CliError> {
    crate::load_policy(
        paths,
        &CompileOptions {
            profile,
            ..Default::default()
        },
    )
    .map_err(CliError::Config)
}
