//! The compiled policy: what a set of policy files and manifests *means*.
//!
//! [`compile()`] turns loaded files into one immutable [`CompiledPolicy`]; the
//! before-hook asks it for a [`Verdict`] on each call, the after-hook uses its
//! [`Redactor`] and [`Limits`]. Each concern has its own module:
//!
//! - [`tools`]: manifests, the active set, profiles;
//! - [`paths`]: path resolution and confinement (roots, deny, read-only);
//! - [`shell`]: splitting a shell script into simple commands;
//! - [`commands`]: the allow / ask / deny command lists;
//! - [`rules`]: argument conditions with their examples;
//! - [`redact`]: secret redaction of output;
//! - [`limits`]: what one call, command or batch may cost;
//! - [`decide`]: combining all of the above into one verdict.

pub mod commands;
mod compile;
pub mod decide;
pub mod limits;
pub mod paths;
pub mod redact;
pub mod rules;
pub mod shell;
pub mod tools;

pub use crate::config::policy_file::{Decision, UnknownToolDecision};
pub use compile::{compile, CompileOptions};
pub use decide::{CallFacts, ToolCall, Verdict};
pub use limits::{LimitExceeded, Limits};
pub use paths::Workspace;
pub use redact::{LazyRedactor, Redactor};

/// How a tool argument or shell word touches a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads it.
    Read,
    /// Creates, changes or deletes it.
    Write,
}

/// One immutable, compiled policy: every rule of every layer, ready to decide.
///
/// It is shared behind an `Arc` and swapped whole on reload, so a batch keeps
/// the snapshot it started with.
#[derive(Debug)]
pub struct CompiledPolicy {
    /// A short hash of every source file, logged with each decision so an
    /// operator can tell which policy version made it.
    pub version: String,
    /// The files it was compiled from.
    pub files: Vec<String>,
    /// Manifests and the active set.
    pub tools: tools::ToolSet,
    /// Path confinement.
    pub paths: paths::PathRules,
    /// Command lists.
    pub commands: commands::CommandRules,
    /// Argument rules.
    pub rules: rules::RuleSet,
    /// Decision for tools no manifest describes.
    pub unknown_tools: UnknownToolDecision,
    /// Tools whose successful call ends the batch.
    pub terminate_tools: Vec<String>,
    /// Secret redaction for output, compiled on first use.
    pub redactor: LazyRedactor,
    /// Time, output and input limits.
    pub limits: Limits,
    /// Problems that did not stop the load (gitleaks rules that cannot run
    /// here, config parts that do not apply), for `toolgate check`.
    pub warnings: crate::config::Diagnostics,
}

impl CompiledPolicy {
    /// The load's warnings plus the imported redaction rules that fail the
    /// checks or cannot be built (they are checked and built on first use,
    /// so this does both now). For `toolgate check`; costs a full redactor
    /// compile.
    pub fn all_warnings(&self) -> crate::config::Diagnostics {
        let mut all = self.warnings.clone();
        let problems = self
            .redactor
            .dropped()
            .into_iter()
            .map(|e| (e, "is skipped"))
            .chain(self.redactor.unbuildable().into_iter().map(|e| {
                (
                    e,
                    "cannot run, so the text around its keywords is redacted whole",
                )
            }))
            .chain(
                self.redactor
                    .limits()
                    .into_iter()
                    .map(|e| (e, "is limited")),
            );
        for (e, what) in problems {
            all.push(crate::config::Diagnostic::new(
                "<redact>",
                crate::config::Position::default(),
                format!("redaction rule `{}` {what}: {}", e.id, e.message),
            ));
        }
        all
    }
}
