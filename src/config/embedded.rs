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

/// The default policy read from [`DEFAULT_POLICY_JSON`] straight into its
/// types; `None` when that fails or the result is not one
/// `crate::config::parse::policy` would accept (the caller then parses the
/// YAML, which reports why). The unit tests below prove both read the same.
pub fn default_policy_from_json() -> Option<super::PolicyFile> {
    policy_from_json(DEFAULT_POLICY_JSON)
}

fn policy_from_json(json: &str) -> Option<super::PolicyFile> {
    let policy: super::PolicyFile = serde_json::from_str(json).ok()?;
    (policy.version == 1).then_some(policy)
}

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
    fn the_default_policy_read_from_json_is_the_yaml_parsed() {
        let file = crate::config::SourceFile {
            name: "default.yaml".to_string(),
            path: None,
            text: DEFAULT_POLICY.to_string(),
        };
        let (from_yaml, _) = crate::config::parse::policy(&file).unwrap();
        let fast = default_policy_from_json().expect("the JSON form reads");
        // Every field, as data and as Rust sees it.
        assert_eq!(
            serde_json::to_value(&fast).unwrap(),
            serde_json::to_value(&from_yaml).unwrap()
        );
        assert_eq!(format!("{fast:?}"), format!("{from_yaml:?}"));
        assert!(fast.commands.as_ref().is_some_and(|c| c.allow.len() > 40));
        assert!(fast.paths.as_ref().is_some_and(|p| p.deny.len() > 5));
    }

    #[test]
    fn a_policy_json_that_the_parser_would_reject_is_not_read_fast() {
        // The fast reader is the derived one: unknown fields and other
        // versions are refused, as by `parse::policy`.
        assert!(policy_from_json(DEFAULT_POLICY_JSON).is_some());
        let with_unknown = DEFAULT_POLICY_JSON.replacen('{', "{\"bogus\":1,", 1);
        assert!(policy_from_json(&with_unknown).is_none());
        let v2 = DEFAULT_POLICY_JSON.replacen("\"version\":1", "\"version\":2", 1);
        assert_ne!(v2, DEFAULT_POLICY_JSON);
        assert!(policy_from_json(&v2).is_none());
        let no_version = DEFAULT_POLICY_JSON.replacen("\"version\":1,", "", 1);
        assert_ne!(no_version, DEFAULT_POLICY_JSON);
        assert!(policy_from_json(&no_version).is_none());
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
