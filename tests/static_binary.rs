//! The `toolgate` executable is linked statically on Linux
//! (.cargo/static-bin.sh; why: docs/performance.md, hook start), and what a
//! static glibc program can get wrong still works: host names resolve
//! through NSS (`/etc/hosts` and DNS are built into glibc's static archive,
//! but a broken link would fail only at run time).

#[path = "common/serve.rs"]
mod serve;

use std::process::Command;

use serve::{jwks_provider, toolgate};

/// Whether the ELF file has a `PT_INTERP` program header, i.e. needs the
/// dynamic loader.
fn has_interpreter(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3 // PT_INTERP
    })
}

/// Whether .cargo/static-bin.sh links statically on this machine: Linux,
/// no opt-out, no other rustc wrapper (which replaces ours), and the C
/// library's static archives present.
fn static_link_expected() -> bool {
    if !cfg!(target_os = "linux")
        || option_env!("TOOLGATE_PIE").is_some()
        || option_env!("TOOLGATE_DYNAMIC").is_some()
        || option_env!("RUSTC_WRAPPER").is_some_and(|w| !w.is_empty())
    {
        return false;
    }
    ["libc.a", "libgcc_eh.a"].iter().all(|archive| {
        Command::new("cc")
            .arg(format!("-print-file-name={archive}"))
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim().starts_with('/'))
    })
}

#[test]
fn the_executable_needs_no_dynamic_loader() {
    let elf = std::fs::read(toolgate()).unwrap();
    assert_eq!(
        has_interpreter(&elf),
        !static_link_expected(),
        "static link expected: {} (see .cargo/static-bin.sh)",
        static_link_expected()
    );
    // The check itself tells the two kinds apart.
    let dynamic = std::fs::read("/bin/sh").unwrap();
    assert!(has_interpreter(&dynamic), "/bin/sh is dynamically linked");
}

#[test]
fn host_names_resolve() {
    // A JWKS provider that answers 503 on 127.0.0.1, named as `localhost`:
    // the policy fails to load with the provider's answer (so `localhost`
    // was resolved and reached), not with "cannot resolve".
    let (port, _served) = jwks_provider();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("policies")).unwrap();
    std::fs::write(
        dir.path().join("policies/main.yaml"),
        format!(
            "version: 1\nauth:\n  required: true\n  jwt:\n    issuer: https://idp.test\n    audience: toolgate\n    jwks_url: http://localhost:{port}/jwks.json\n"
        ),
    )
    .unwrap();
    let out = Command::new(toolgate())
        .args(["serve", "--no-watch", "--workspace"])
        .arg(dir.path())
        .arg("--policies")
        .arg(dir.path().join("policies"))
        .args(["--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot fetch the JWKS") && err.contains("503"),
        "{err}"
    );
}
