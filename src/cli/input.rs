//! Reading calls from flags and files, shared by `eval` and `call`.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use super::CliError;
use crate::{ToolCall, Workspace};

/// The text of `path`, or stdin for `-`.
pub fn read_input(path: &Path) -> std::io::Result<String> {
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Ok(s)
    } else {
        std::fs::read_to_string(path)
    }
}

/// The text of `path` (or stdin for `-`), or a usage error naming it.
pub fn read_file(path: &Path) -> Result<String, CliError> {
    read_input(path).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
}

/// The `--workspace` folder, opened, or a usage error naming it.
pub fn open_workspace(dir: &Path) -> Result<Workspace, CliError> {
    Workspace::new(dir).map_err(|e| CliError::usage(format!("workspace `{}`: {e}", dir.display())))
}

/// One call as JSON: `{"name": …, "arguments": {…}}`.
pub fn parse_call(text: &str) -> Result<ToolCall, String> {
    let call: ToolCall = serde_json::from_str(text).map_err(|e| {
        format!("invalid call: {e}; expected {{\"name\": …, \"arguments\": {{…}}}}")
    })?;
    if !call.arguments.is_object() {
        return Err("`arguments` must be a JSON object".to_string());
    }
    Ok(call)
}

/// `--tool NAME --args JSON` as a call.
pub fn single_call(name: String, args: &str) -> Result<ToolCall, CliError> {
    match serde_json::from_str::<Value>(args) {
        Ok(arguments @ Value::Object(_)) => Ok(ToolCall {
            id: String::new(),
            name,
            arguments,
        }),
        Ok(_) => Err(CliError::usage(
            "--args must be a JSON object, e.g. '{\"path\": \"src/main.rs\"}'",
        )),
        Err(e) => Err(CliError::usage(format!("--args is not valid JSON: {e}"))),
    }
}
