//! Build-time work that makes a hook process start faster (a hook starts once
//! per tool call, so its start-up is most of its cost; see
//! docs/performance.md):
//!
//! - the binaries are linked position-dependent (`-no-pie`): a PIE binary of
//!   this size spends about 0.3 ms at every start relocating its own data.
//!   Shared libraries, heap and stack stay randomized; set `TOOLGATE_PIE=1`
//!   when building to keep the default PIE link (SECURITY.md);
//! - the embedded default policy (YAML), the escape-hatch table
//!   (src/policy/shell/exec_table.yaml) and built-in manifests (TOML) are
//!   converted to JSON, which loads several times faster. The YAML and TOML
//!   stay the only sources; unit tests check that both forms load the same.

use std::path::PathBuf;

/// The built-in manifests, as listed in src/config/embedded.rs.
const MANIFESTS: &[&str] = &["bash", "edit", "find", "grep", "ls", "read", "write"];

fn main() {
    println!("cargo:rerun-if-changed=policies/default.yaml");
    println!("cargo:rerun-if-env-changed=TOOLGATE_PIE");
    let linux_x86_64 = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64");
    if linux_x86_64 && std::env::var_os("TOOLGATE_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }

    let yaml = std::fs::read_to_string("policies/default.yaml")
        .expect("policies/default.yaml is readable");
    let value: serde_yaml::Value =
        serde_yaml::from_str(&yaml).expect("policies/default.yaml is valid YAML");
    let json = serde_json::to_string(&value)
        .expect("policies/default.yaml converts to JSON (string keys only)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("default-policy.json"), json).expect("OUT_DIR is writable");

    let table_path = "src/policy/shell/exec_table.yaml";
    println!("cargo:rerun-if-changed={table_path}");
    let yaml = std::fs::read_to_string(table_path).expect("exec_table.yaml is readable");
    let value: serde_yaml::Value =
        serde_yaml::from_str(&yaml).expect("exec_table.yaml is valid YAML");
    let json = serde_json::to_string(&value).expect("exec_table.yaml converts to JSON");
    std::fs::write(out.join("exec-table.json"), json).expect("OUT_DIR is writable");

    for name in MANIFESTS {
        let path = format!("tool-manifests/{name}.toml");
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(&path).expect("built-in manifest is readable");
        let table: toml::Table = toml::from_str(&text).expect("built-in manifest is valid TOML");
        let json = serde_json::to_string(&table).expect("built-in manifest converts to JSON");
        std::fs::write(out.join(format!("{name}.manifest.json")), json)
            .expect("OUT_DIR is writable");
    }
}
