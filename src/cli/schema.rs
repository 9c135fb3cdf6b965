//! `toolgate schema`: the JSON Schema of a file format, for editors.

use std::io::Write;
use std::process::ExitCode;

use super::{CliError, SchemaKind};

/// Prints the schema of `kind`.
pub fn run(kind: SchemaKind) -> Result<ExitCode, CliError> {
    let schema = match kind {
        SchemaKind::Policy => schemars::schema_for!(crate::config::PolicyFile),
        SchemaKind::Manifest => schemars::schema_for!(crate::config::Manifest),
    };
    writeln!(
        std::io::stdout().lock(),
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    )?;
    Ok(ExitCode::SUCCESS)
}
