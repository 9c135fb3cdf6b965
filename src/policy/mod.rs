//! The compiled policy: what a set of policy files and manifests *means*.
//!
//! [`compile()`] turns loaded files into one immutable [`Policy`]; the
//! before-hook asks it for a [`Verdict`] on each call, the after-hook uses its
//! [`Redactor`] and [`Limits`]. Each concern has its own module:
//!
//! - [`tools`]: manifests, the active set, profiles;
//! - [`paths`]: path resolution and confinement (roots, deny, read-only);
//! - [`shell`]: splitting a shell script into simple commands;
//! - [`commands`]: the allow / ask / deny command lists;
//! - [`rules`]: argument conditions with their examples;
//! - [`results`]: after-rules on what a call returned;
//! - [`redact`]: secret redaction of output;
//! - [`limits`]: what one call, command or batch may cost;
//! - [`sandbox`]: kernel confinement of the commands tools run;
//! - [`decide`]: combining all of the above into one verdict.

pub mod auth;
pub mod commands;
mod compile;
pub mod decide;
pub mod explain;
pub mod finding;
pub mod limits;
pub mod paths;
pub mod redact;
pub mod results;
pub mod rules;
mod rules_compile;
mod rules_prefilter;
mod rules_regex;
pub mod sandbox;
pub mod shell;
pub mod tools;

pub use crate::config::policy_file::{Decision, UnknownToolDecision};
pub use crate::workspace::{Access, Workspace};
pub use compile::{compile, CompileOptions};
pub use decide::{CallFacts, ToolCall};
pub use explain::Explanation;
pub use finding::{AuditFinding, Finding, RuleId, Strictest, Verdict};
pub use limits::{LimitExceeded, Limits};
pub use redact::{LazyRedactor, Redactor};
pub use tools::ToolNotFound;

/// One immutable, compiled policy: every rule of every layer, ready to decide.
///
/// It is shared behind an `Arc` and swapped whole on reload, so a batch keeps
/// the snapshot it started with.
#[derive(Debug)]
pub struct Policy {
    /// A short hash of every source file, logged with each decision so an
    /// operator can tell which policy version made it.
    pub(crate) version: String,
    /// The files it was compiled from.
    pub(crate) files: Vec<String>,
    /// Manifests and the active set.
    pub(crate) tools: tools::ToolSet,
    /// Path confinement.
    pub(crate) paths: paths::PathRules,
    /// Command lists.
    pub(crate) commands: commands::CommandRules,
    /// Argument rules.
    pub(crate) rules: rules::RuleSet,
    /// After-rules on results.
    pub(crate) results: results::ResultRules,
    /// Decision for tools no manifest describes.
    pub(crate) unknown_tools: UnknownToolDecision,
    /// Tools whose successful call ends the batch.
    pub(crate) terminate_tools: Vec<String>,
    /// Secret redaction for output, compiled on first use.
    pub(crate) redactor: LazyRedactor,
    /// Time, output and input limits.
    pub(crate) limits: Limits,
    /// `sandbox:`: kernel confinement of commands.
    pub(crate) sandbox: sandbox::SandboxSettings,
    /// Problems that did not stop the load (gitleaks rules that cannot run
    /// here, config parts that do not apply), for `toolgate check`.
    pub(crate) warnings: crate::config::Diagnostics,
    /// Who may call over HTTP (`auth:`); `None` when no layer has it.
    pub(crate) auth: Option<std::sync::Arc<auth::AuthConfig>>,
    /// Where each rule id is written, for `explain`.
    /// In the order recorded; the first entry for an id is where it is written.
    pub(crate) origins: Vec<(String, RuleOrigin)>,
}

/// Where a rule is written: a policy file and the key path within it
/// (`commands.deny.3`); [`crate::config::Loaded`] turns the path into a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleOrigin {
    /// The policy file's name as loaded.
    pub file: String,
    /// The dotted key path of the entry in that file.
    pub at: String,
}

impl Policy {
    /// Compiles a policy given as YAML text. Its `extends` are followed
    /// (`builtin:default` is the embedded default policy; other entries are
    /// files relative to the current directory), and the built-in tool
    /// manifests describe the tools.
    pub fn from_yaml(yaml: &str) -> Result<Policy, crate::Error> {
        let loaded = crate::config::load_text("<yaml>", yaml, std::path::Path::new("."), None)?;
        Ok(compile(&loaded, &CompileOptions::default())?)
    }

    /// Loads and compiles the policy at `policies` (a folder, whose every
    /// `*.yaml` is a layer, or one file) with the tool manifests in
    /// `manifests` (a folder of `*.toml`).
    pub fn load(
        policies: impl AsRef<std::path::Path>,
        manifests: impl AsRef<std::path::Path>,
    ) -> Result<Policy, crate::Error> {
        let paths = crate::config::ConfigPaths {
            policies: Some(policies.as_ref().to_path_buf()),
            manifests: Some(manifests.as_ref().to_path_buf()),
        };
        Ok(crate::load_policy(&paths, &CompileOptions::default())?)
    }

    /// A short hash of every source file: the policy version logged with
    /// each decision.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The files it was compiled from.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// The active tools' names, in the order the policy lists them.
    pub fn active_tools(&self) -> &[String] {
        &self.tools.active
    }

    /// Tool `name` as its manifest declares it, active or not.
    pub fn tool(&self, name: &str) -> Option<&tools::ToolInfo> {
        self.tools.get(name)
    }

    /// The compiled command lists (allow, ask, deny, default, unparsed).
    pub fn commands(&self) -> &commands::CommandRules {
        &self.commands
    }

    /// The manifest of tool `name`, active or not.
    pub fn manifest(&self, name: &str) -> Option<&crate::config::Manifest> {
        self.tools.get(name).map(|t| &*t.manifest)
    }

    /// The compiled `auth:` section, when a layer has one.
    pub fn auth(&self) -> Option<&std::sync::Arc<auth::AuthConfig>> {
        self.auth.as_ref()
    }

    /// The after-rules on results (`results:`), in order.
    pub fn results(&self) -> &results::ResultRules {
        &self.results
    }

    /// The policy's limits (time, output, input sizes).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The secret redactor for output (built on first use).
    pub fn redactor(&self) -> &Redactor {
        self.redactor.get()
    }

    /// One line for people: version, files, active tools and rule counts
    /// (what `toolgate check` prints after `ok: policy`).
    pub fn summary(&self) -> String {
        format!(
            "{} — {} files, active tools: {}; {} rules, {} result rules, {} command patterns, {} redaction rules{}",
            self.version,
            self.files.len(),
            self.tools.active.join(", "),
            self.rules.rules.len(),
            self.results.rules.len(),
            self.commands.allow.len() + self.commands.ask.len() + self.commands.deny.len(),
            self.redactor.len(),
            match self.audit_entries() {
                0 => String::new(),
                n => format!("; {n} audit-only (mode: audit)"),
            }
        )
    }

    /// Where the rule with `id` is written, when the policy's files hold it
    /// (built-in ids such as `tools.active` have none unless a file sets them).
    pub fn rule_origin(&self, id: &str) -> Option<&RuleOrigin> {
        self.origins.iter().find(|(k, _)| k == id).map(|(_, o)| o)
    }

    /// How many command entries and rules are audit-only (`mode: audit`).
    pub fn audit_entries(&self) -> usize {
        self.commands.audit_entries() + self.rules.rules.iter().filter(|r| r.audit).count()
    }

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
