//! The compiled `sandbox:` section: whether bash and exec tools run
//! confined, and the [`Plan`] a workspace gets from it and `paths:`.

use std::path::PathBuf;

use crate::confine::{Network, Plan};
use crate::workspace::{resolve, Workspace};

/// `sandbox:` of every layer, combined (the strictest value of each
/// setting; `read` and `write` unioned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSettings {
    /// bash and exec tools run confined.
    pub enabled: bool,
    /// Which sockets a command may open.
    pub network: Network,
    /// Extra readable paths, as written.
    pub read: Vec<String>,
    /// Extra writable paths, as written.
    pub write: Vec<String>,
    /// Fail closed without kernel support.
    pub required: bool,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: false,
            network: Network::Deny,
            read: Vec::new(),
            write: Vec::new(),
            required: true,
        }
    }
}

fn absolute(ws: &Workspace, raw: &str) -> Option<PathBuf> {
    resolve(ws, raw).ok().map(|r| r.real)
}

impl crate::Policy {
    /// The compiled `sandbox:` settings.
    pub fn sandbox_settings(&self) -> &SandboxSettings {
        &self.sandbox
    }

    /// True when neither `paths.deny` nor `paths.read_only` has a glob, so a
    /// confined command needs no mount namespace.
    pub fn paths_deny_is_empty_for_sandbox(&self) -> bool {
        self.paths.deny.is_empty() && self.paths.read_only.is_empty()
    }

    /// What a confined command may do in `ws`; `None` when the sandbox is
    /// not enabled. A root lies inside every layer's root set (the roots of
    /// the first set that every other set contains).
    pub fn sandbox_plan(&self, ws: &Workspace) -> Option<Plan> {
        self.sandbox.enabled.then(|| self.sandbox_plan_always(ws))
    }

    /// [`Policy::sandbox_plan`](crate::Policy::sandbox_plan) whether or not
    /// `sandbox.enabled` is set (`toolgate sandbox` confines what it is asked
    /// to run either way).
    pub fn sandbox_plan_always(&self, ws: &Workspace) -> Plan {
        let sets = self.paths.resolved_roots(ws);
        let mut roots: Vec<PathBuf> = sets
            .first()
            .into_iter()
            .flatten()
            .filter(|r| sets.iter().all(|set| set.iter().any(|s| r.starts_with(s))))
            .cloned()
            .collect();
        roots.sort();
        roots.dedup();
        let list = |raw: &[String]| -> Vec<PathBuf> {
            raw.iter().filter_map(|r| absolute(ws, r)).collect()
        };
        Plan {
            workspace: ws.clone(),
            roots,
            read: list(&self.sandbox.read),
            write: list(&self.sandbox.write),
            deny: self.paths.deny.clone(),
            read_only: self.paths.read_only.clone(),
            network: self.sandbox.network,
            required: self.sandbox.required,
        }
    }
}
