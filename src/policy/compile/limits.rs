//! `limits:` of every layer, combined: a layer that sets a limit replaces
//! the default, and where several layers set one the smallest wins (a layer
//! can only tighten what another allows).

use super::err_at;
use crate::config::policy_file::{parse_duration, ByteSize, LimitsSection};
use crate::config::{Diagnostics, PolicyLayer};
use crate::policy::limits::{
    ARGUMENT_DEPTH_CEILING, COMMAND_BYTES_CEILING, COMMAND_NESTING_CEILING,
};
use crate::policy::Limits;

/// One setting: its name, how to read it from a layer, its allowed range and
/// the example its help text gives.
struct Setting {
    name: &'static str,
    read: fn(&LimitsSection) -> Option<Result<u64, String>>,
    max: u64,
    example: &'static str,
}

fn size(b: &Option<ByteSize>) -> Option<Result<u64, String>> {
    b.as_ref().map(ByteSize::bytes)
}

fn count<T: Into<u64> + Copy>(n: &Option<T>) -> Option<Result<u64, String>> {
    n.map(|n| Ok(n.into()))
}

const SETTINGS: &[Setting] = &[
    Setting {
        name: "max_output_bytes",
        read: |l| size(&l.max_output_bytes),
        max: u64::MAX,
        example: "a size such as `50KB`",
    },
    Setting {
        name: "max_output_lines",
        read: |l| count(&l.max_output_lines),
        max: u64::MAX,
        example: "a number of lines such as 2000",
    },
    Setting {
        name: "max_argument_bytes",
        read: |l| size(&l.max_argument_bytes),
        max: u64::MAX,
        example: "a size such as `4MB`",
    },
    Setting {
        name: "max_argument_depth",
        read: |l| count(&l.max_argument_depth),
        max: ARGUMENT_DEPTH_CEILING as u64,
        example: "a depth such as 32",
    },
    Setting {
        name: "max_command_bytes",
        read: |l| size(&l.max_command_bytes),
        max: COMMAND_BYTES_CEILING,
        example: "a size such as `64KB`",
    },
    Setting {
        name: "max_command_nesting",
        read: |l| count(&l.max_command_nesting),
        max: COMMAND_NESTING_CEILING as u64,
        example: "a depth such as 16",
    },
    Setting {
        name: "max_batch_calls",
        read: |l| count(&l.max_batch_calls),
        max: u32::MAX as u64,
        example: "a number of calls such as 64",
    },
    Setting {
        name: "max_concurrent_calls",
        read: |l| count(&l.max_concurrent_calls),
        max: u32::MAX as u64,
        example: "a number of calls such as 16",
    },
];

/// The limits every layer sets, combined; problems go to `diags`.
pub(super) fn compile_limits(layers: &[PolicyLayer], diags: &mut Diagnostics) -> Limits {
    let mut limits = Limits::default();
    let mut timeout_set = false;
    let mut values: Vec<Option<u64>> = vec![None; SETTINGS.len()];
    for layer in layers {
        let Some(l) = &layer.policy.limits else {
            continue;
        };
        if let Some(t) = &l.timeout {
            match parse_duration(t) {
                Ok(d) => {
                    limits.timeout = if timeout_set {
                        limits.timeout.min(d)
                    } else {
                        d
                    };
                    timeout_set = true;
                }
                Err(e) => err_at(
                    diags,
                    layer,
                    "limits.timeout",
                    e,
                    "write a duration such as `120s`",
                ),
            }
        }
        for (setting, value) in SETTINGS.iter().zip(values.iter_mut()) {
            let path = format!("limits.{}", setting.name);
            let help = format!("write {}", setting.example);
            match (setting.read)(l) {
                None => {}
                Some(Err(e)) => err_at(diags, layer, &path, e, help),
                Some(Ok(0)) => err_at(
                    diags,
                    layer,
                    &path,
                    format!("`{}` must be more than 0", setting.name),
                    help,
                ),
                Some(Ok(n)) if n > setting.max => err_at(
                    diags,
                    layer,
                    &path,
                    format!("`{}` must be at most {}", setting.name, setting.max),
                    help,
                ),
                Some(Ok(n)) => *value = Some(value.map_or(n, |v| v.min(n))),
            }
        }
    }
    let get = |name: &str, default: u64| -> u64 {
        SETTINGS
            .iter()
            .position(|s| s.name == name)
            .and_then(|i| values[i])
            .unwrap_or(default)
    };
    let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let d = Limits::default();
    limits.max_output_bytes = get("max_output_bytes", d.max_output_bytes);
    limits.max_output_lines = get("max_output_lines", d.max_output_lines);
    limits.max_argument_bytes = get("max_argument_bytes", d.max_argument_bytes);
    limits.max_argument_depth = narrow(get("max_argument_depth", d.max_argument_depth.into()));
    limits.max_command_bytes = get("max_command_bytes", d.max_command_bytes);
    limits.max_command_nesting = narrow(get("max_command_nesting", d.max_command_nesting.into()));
    limits.max_batch_calls = narrow(get("max_batch_calls", d.max_batch_calls.into()));
    limits.max_concurrent_calls =
        narrow(get("max_concurrent_calls", d.max_concurrent_calls.into()));
    limits
}
