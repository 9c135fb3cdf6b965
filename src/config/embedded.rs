//! The default policy and built-in manifests, compiled into the binary so
//! toolgate works with no folders at all.

/// `policies/default.yaml`.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.yaml");

/// `tool-manifests/*.toml`, by file name.
pub const MANIFESTS: &[(&str, &str)] = &[
    ("bash.toml", include_str!("../../tool-manifests/bash.toml")),
    ("edit.toml", include_str!("../../tool-manifests/edit.toml")),
    ("find.toml", include_str!("../../tool-manifests/find.toml")),
    ("grep.toml", include_str!("../../tool-manifests/grep.toml")),
    ("ls.toml", include_str!("../../tool-manifests/ls.toml")),
    ("read.toml", include_str!("../../tool-manifests/read.toml")),
    (
        "write.toml",
        include_str!("../../tool-manifests/write.toml"),
    ),
];
