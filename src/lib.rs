//! toolgate: a declarative policy-and-tool gateway for AI agents.
//!
//! Tool manifests (TOML) and policies (YAML) are loaded by [`config`] and
//! compiled by [`policy::compile`] into one immutable [`Policy`]. Its
//! before-hook judges each [`ToolCall`] — allow, ask or deny, with the rule
//! that decided and a reason — and its after-hook redacts secrets from output.
//!
//! ```no_run
//! use toolgate::{load_policy, ConfigPaths, CompileOptions, ToolCall, Workspace};
//! let policy = load_policy(&ConfigPaths::default(), &CompileOptions::default()).unwrap();
//! let ws = Workspace::new(".").unwrap();
//! let call = ToolCall { id: "1".into(), name: "bash".into(), arguments: serde_json::json!({"command": "rm -fr /"}) };
//! assert_eq!(policy.evaluate(&ws, &call).decision, toolgate::Decision::Deny);
//! ```

#![warn(missing_docs)]

pub mod arena;
#[cfg(feature = "bridge")]
pub mod bridge;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
pub mod confine;
mod error;
pub mod executor;
#[cfg(feature = "hooks")]
pub mod hooks;
pub mod lines;
pub mod policy;
#[cfg(feature = "serve")]
pub mod serve;
pub mod testing;
pub mod text;
pub mod tools;
#[cfg(feature = "serve")]
pub mod upstream;
pub mod workspace;

pub use config::{ConfigPaths, Diagnostic, Diagnostics};
pub use error::Error;
pub use executor::{Executor, ToolResult};
pub use policy::{compile, CompileOptions, Decision, Policy, ToolCall, Verdict, Workspace};

/// Loads and compiles in one step: what every front-end does at start-up and
/// on reload.
pub fn load_policy(paths: &ConfigPaths, options: &CompileOptions) -> Result<Policy, Diagnostics> {
    let loaded = config::load(paths)?;
    compile(&loaded, options)
}
