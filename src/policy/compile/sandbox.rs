//! `sandbox:` of every layer, combined: enabled, `network: deny` and
//! `required` if any layer says so; `read` and `write` unioned.

use super::err_at;
use crate::config::{Diagnostics, PolicyLayer};
use crate::confine::Network;
use crate::policy::sandbox::SandboxSettings;

/// The combined settings; problems go to `diags`.
pub(super) fn compile_sandbox(layers: &[PolicyLayer], diags: &mut Diagnostics) -> SandboxSettings {
    let mut out = SandboxSettings::default();
    let (mut network, mut required) = (None::<Network>, None::<bool>);
    for layer in layers {
        let Some(s) = &layer.policy.sandbox else {
            continue;
        };
        out.enabled |= s.enabled.unwrap_or(false);
        network = match (network, s.network) {
            (Some(Network::Deny), _) | (_, Some(Network::Deny)) => Some(Network::Deny),
            (n, None) => n,
            (_, n) => n,
        };
        required = match (required, s.required) {
            (Some(a), Some(b)) => Some(a || b),
            (a, b) => a.or(b),
        };
        for (list, entries, into) in [
            ("read", &s.read, &mut out.read),
            ("write", &s.write, &mut out.write),
        ] {
            for (i, p) in entries.iter().enumerate() {
                if p.trim().is_empty() || p.contains('\0') || p.contains(['*', '?', '[']) {
                    err_at(
                        diags,
                        layer,
                        &format!("sandbox.{list}.{i}"),
                        format!("`sandbox.{list}` entry `{p}` must be a plain path, not a glob or an empty string"),
                        "write a directory or file such as `~/.cargo` or `/var/cache/app`",
                    );
                } else if p == "/" {
                    err_at(
                        diags,
                        layer,
                        &format!("sandbox.{list}.{i}"),
                        format!("`sandbox.{list}` entry `/` would open the whole file system"),
                        "name the directories the commands need",
                    );
                } else if !into.contains(p) {
                    into.push(p.clone());
                }
            }
        }
    }
    out.network = network.unwrap_or(Network::Deny);
    out.required = required.unwrap_or(true);
    out
}
