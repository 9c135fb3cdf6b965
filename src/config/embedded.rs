//! The default policy and built-in manifests, compiled into the binary so
//! toolgate works with no folders at all.
//!
//! Each comes twice: as written (the source of truth, shown in diagnostics
//! and compared with files on disk) and as JSON made by build.rs from that
//! text. The JSON loads several times faster, and a hook loads both on
//! every tool call.

/// `policies/default.yaml`.
pub const DEFAULT_POLICY: &str = include_str!("../../policies/default.yaml");

/// The same policy as JSON.
pub const DEFAULT_POLICY_JSON: &str =
    include_str!(concat!(env!("OUT_DIR"), "/default-policy.json"));

/// One built-in manifest.
pub struct EmbeddedManifest {
    /// File name in `tool-manifests/`.
    pub file: &'static str,
    /// The TOML text.
    pub toml: &'static str,
    /// The same manifest as JSON.
    pub json: &'static str,
}

macro_rules! manifest {
    ($name:literal) => {
        EmbeddedManifest {
            file: concat!($name, ".toml"),
            toml: include_str!(concat!("../../tool-manifests/", $name, ".toml")),
            json: include_str!(concat!(env!("OUT_DIR"), "/", $name, ".manifest.json")),
        }
    };
}

/// `tool-manifests/*.toml` (build.rs lists the same names).
pub const MANIFESTS: &[EmbeddedManifest] = &[
    manifest!("bash"),
    manifest!("edit"),
    manifest!("find"),
    manifest!("grep"),
    manifest!("ls"),
    manifest!("read"),
    manifest!("write"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::manifest::Manifest;

    #[test]
    fn the_default_policy_json_is_the_yaml() {
        let from_yaml: serde_yaml::Value = serde_yaml::from_str(DEFAULT_POLICY).unwrap();
        let from_json: serde_yaml::Value = serde_json::from_str(DEFAULT_POLICY_JSON).unwrap();
        assert_eq!(from_json, from_yaml);
    }

    #[test]
    fn each_manifest_json_is_its_toml() {
        assert_eq!(MANIFESTS.len(), 7);
        for m in MANIFESTS {
            let from_toml: Manifest = toml::from_str(m.toml).unwrap();
            let from_json: Manifest =
                serde_json::from_str(m.json).unwrap_or_else(|e| panic!("{}: {e}", m.file));
            assert_eq!(
                serde_json::to_value(&from_json).unwrap(),
                serde_json::to_value(&from_toml).unwrap(),
                "{}",
                m.file
            );
            assert!(
                m.toml.contains(&format!("name = \"{}\"", from_toml.name)),
                "{}",
                m.file
            );
        }
    }
}
