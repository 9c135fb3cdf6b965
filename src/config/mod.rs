//! Reading policy files and tool manifests: discovery, parsing with positions,
//! `extends` layering and diagnostics.
//!
//! Nothing here decides anything; [`crate::policy::compile`] turns what this
//! module loads into a [`crate::policy::Policy`].

pub mod auth_file;
pub mod condition;
pub mod diagnostics;
mod embedded;
pub mod manifest;
pub(crate) mod manifest_positions;
pub(crate) mod parse;
pub mod policy_file;
pub mod proven;
pub mod results_file;
pub mod server;
pub mod yaml;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use diagnostics::{Diagnostic, Diagnostics, Position};
pub use manifest::Manifest;
pub use policy_file::PolicyFile;
use yaml::SourceMap;

/// A policy file bigger than this is rejected before parsing: policy files
/// are input from people, and a parser should not be an amplifier.
pub const MAX_POLICY_BYTES: usize = 1 << 20;
/// A manifest bigger than this is rejected before parsing.
pub const MAX_MANIFEST_BYTES: usize = 256 << 10;
/// How deep `extends` chains may go.
pub const MAX_EXTENDS_DEPTH: usize = 16;

/// The text of one loaded file and the name diagnostics use for it.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The name shown in diagnostics: the path as found, or `<embedded>/NAME`.
    pub name: String,
    /// The file on disk; `None` for the embedded defaults.
    pub path: Option<PathBuf>,
    /// The file's contents.
    pub text: String,
}

/// One parsed policy file with its position index.
#[derive(Clone, Debug)]
pub struct PolicyLayer {
    /// Where it came from.
    pub file: SourceFile,
    /// Positions of its nodes, for diagnostics found after parsing.
    pub map: SourceMap,
    /// Its contents.
    pub policy: PolicyFile,
}

/// One parsed manifest.
#[derive(Clone, Debug)]
pub struct LoadedManifest {
    /// Where it came from.
    pub file: SourceFile,
    /// Its contents, shared with the compiled tool set.
    pub manifest: Arc<Manifest>,
}

/// Everything a compile needs: policy layers (parents before the files that
/// extend them) and manifests.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// Policy layers in the order they apply.
    pub layers: Vec<PolicyLayer>,
    /// Tool manifests, sorted by file name.
    pub manifests: Vec<LoadedManifest>,
    /// Upstream server manifests (`[server]`), sorted by file name.
    pub servers: Vec<server::LoadedServer>,
}

impl Loaded {
    /// Every file that went into this load, for `/status` and decision logs.
    pub fn file_names(&self) -> Vec<String> {
        self.layers
            .iter()
            .map(|l| l.file.name.clone())
            .chain(self.manifests.iter().map(|m| m.file.name.clone()))
            .chain(self.servers.iter().map(|s| s.file.name.clone()))
            .collect()
    }
}

/// Where to find policies and manifests. `None` means the defaults:
/// `./policies` and `./tool-manifests` when they exist, the embedded files
/// otherwise.
#[derive(Clone, Debug, Default)]
pub struct ConfigPaths {
    /// A policy folder (every `*.yaml` in it is a layer) or one policy file.
    pub policies: Option<PathBuf>,
    /// A folder of `*.toml` manifests.
    pub manifests: Option<PathBuf>,
}

/// The embedded default policy's text.
pub fn embedded_default_policy() -> &'static str {
    embedded::DEFAULT_POLICY
}

/// The built-in manifests: file name and text.
pub fn embedded_manifests() -> impl Iterator<Item = (&'static str, &'static str)> {
    embedded::MANIFESTS.iter().map(|m| (m.file, m.toml))
}

/// True when `text` is exactly one of the built-in manifests.
pub fn is_embedded_manifest_text(text: &str) -> bool {
    embedded::MANIFESTS.iter().any(|m| m.toml == text)
}

/// The `extends` entry that names the embedded default policy.
pub const BUILTIN_DEFAULT: &str = "builtin:default";

/// Parses the text of one policy file, without following its `extends`:
/// for callers that hold the text already (tests, fuzzing, editors).
pub fn parse_policy(file: SourceFile) -> Result<PolicyLayer, Diagnostics> {
    let (policy, map) = parse::policy(&file)?;
    Ok(PolicyLayer { file, map, policy })
}

/// Parses the text of one tool manifest.
pub fn parse_manifest(file: SourceFile) -> Result<LoadedManifest, Diagnostics> {
    let manifest = parse::manifest(&file)?;
    Ok(LoadedManifest {
        file,
        manifest: Arc::new(manifest),
    })
}

/// Reads and parses every policy and manifest file, reporting all problems.
pub fn load(paths: &ConfigPaths) -> Result<Loaded, Diagnostics> {
    let (loaded, diags) = load_all(paths);
    if diags.is_empty() {
        Ok(loaded)
    } else {
        Err(diags)
    }
}

/// Loads one policy given as text (named `name` in diagnostics), following
/// its `extends` (`builtin:default`, or files relative to `base`), with the
/// manifests in the folder `manifests` (the built-in ones when `None`). For
/// embedders that hold a policy in memory.
pub fn load_text(
    name: &str,
    text: &str,
    base: &Path,
    manifests: Option<&Path>,
) -> Result<Loaded, Diagnostics> {
    let mut diags = Diagnostics::default();
    let mut layers = Vec::new();
    let file = SourceFile {
        name: name.to_string(),
        path: None,
        text: text.to_string(),
    };
    if text.len() > MAX_POLICY_BYTES {
        diags.push(
            Diagnostic::new(
                name,
                Position::default(),
                format!(
                    "the policy is {} bytes; the limit is {MAX_POLICY_BYTES}",
                    text.len()
                ),
            )
            .with_help("split it into smaller files joined with `extends`"),
        );
        return Err(diags);
    }
    load_layer(file, base, 0, &mut layers, &mut HashSet::new(), &mut diags);
    let manifests = match manifests {
        Some(dir) => {
            let paths = ConfigPaths {
                policies: None,
                manifests: Some(dir.to_path_buf()),
            };
            let (manifests, servers, manifest_diags) = load_manifests(&paths);
            diags.extend(manifest_diags);
            (manifests, servers)
        }
        None => {
            let mut manifests = Vec::new();
            load_embedded_manifests(&mut manifests, &mut diags);
            (manifests, Vec::new())
        }
    };
    let (manifests, servers) = manifests;
    if diags.is_empty() {
        Ok(Loaded {
            layers,
            manifests,
            servers,
        })
    } else {
        Err(diags)
    }
}

impl ConfigPaths {
    /// The same files named so that they are found from any directory:
    /// given paths made absolute, and the `./policies` and `./tool-manifests`
    /// the current directory would provide made explicit (a command that
    /// runs elsewhere, such as `toolgate sandbox` started by a hook, must load
    /// what the hook loaded).
    pub fn absolute(&self) -> ConfigPaths {
        let explicit = |given: &Option<PathBuf>, default: &str| {
            given
                .clone()
                .or_else(|| Path::new(default).is_dir().then(|| PathBuf::from(default)))
                .map(|p| std::path::absolute(&p).unwrap_or(p))
        };
        ConfigPaths {
            policies: explicit(&self.policies, "policies"),
            manifests: explicit(&self.manifests, "tool-manifests"),
        }
    }
}

/// Like [`load`], but also returns what did load next to the problems, so
/// `toolgate check` can go on to compile it and report the compile errors too.
pub fn load_all(paths: &ConfigPaths) -> (Loaded, Diagnostics) {
    // One thread on purpose: with the built-ins loading from JSON, a second
    // thread cost a hook more to start than the parsing it overlapped.
    let (layers, mut diags) = load_policies(paths);
    let (manifests, servers, manifest_diags) = load_manifests(paths);
    diags.extend(manifest_diags);
    (
        Loaded {
            layers,
            manifests,
            servers,
        },
        diags,
    )
}

fn load_policies(paths: &ConfigPaths) -> (Vec<PolicyLayer>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let mut layers = Vec::new();
    let policy_files = match &paths.policies {
        Some(p) => list_files(p, &["yaml", "yml"], &mut diags),
        None if Path::new("policies").is_dir() => {
            list_files(Path::new("policies"), &["yaml", "yml"], &mut diags)
        }
        None => Vec::new(),
    };
    let mut seen = HashSet::new();
    if paths.policies.is_none() && policy_files.is_empty() {
        load_embedded_policy(&mut layers, &mut seen, &mut diags);
    }
    for file in policy_files {
        load_policy_file(&file, 0, &mut layers, &mut seen, &mut diags);
    }
    (layers, diags)
}

fn load_manifests(
    paths: &ConfigPaths,
) -> (Vec<LoadedManifest>, Vec<server::LoadedServer>, Diagnostics) {
    let mut diags = Diagnostics::default();
    let mut manifests = Vec::new();
    let mut servers = Vec::new();
    let manifest_files = match &paths.manifests {
        Some(p) => list_files(p, &["toml"], &mut diags),
        None if Path::new("tool-manifests").is_dir() => {
            list_files(Path::new("tool-manifests"), &["toml"], &mut diags)
        }
        None => Vec::new(),
    };
    if paths.manifests.is_none() && manifest_files.is_empty() {
        load_embedded_manifests(&mut manifests, &mut diags);
    }
    for path in manifest_files {
        if let Some(file) = read_file(&path, MAX_MANIFEST_BYTES, &mut diags) {
            if server::is_server_manifest(&file.text) {
                match parse::server_manifest(&file) {
                    Ok(manifest) => servers.push(server::LoadedServer {
                        file,
                        manifest: Arc::new(manifest),
                    }),
                    Err(d) => diags.extend(d),
                }
            } else {
                push_manifest(file, &mut manifests, &mut diags);
            }
        }
    }
    (manifests, servers, diags)
}

fn load_embedded_manifests(manifests: &mut Vec<LoadedManifest>, diags: &mut Diagnostics) {
    for m in embedded::MANIFESTS {
        let file = SourceFile {
            name: format!("<embedded>/tool-manifests/{}", m.file),
            path: None,
            text: m.toml.to_string(),
        };
        push_manifest(file, manifests, diags);
    }
}

fn push_manifest(file: SourceFile, out: &mut Vec<LoadedManifest>, diags: &mut Diagnostics) {
    // A built-in manifest (embedded, or a byte-identical copy on disk) loads
    // from build.rs's JSON of the same text; the TOML is the fallback.
    let built_in = embedded::MANIFESTS.iter().find(|m| m.toml == file.text);
    if let Some(manifest) = built_in.and_then(|m| serde_json::from_str(m.json).ok()) {
        out.push(LoadedManifest {
            file,
            manifest: Arc::new(manifest),
        });
        return;
    }
    match parse::manifest(&file) {
        Ok(manifest) => out.push(LoadedManifest {
            file,
            manifest: Arc::new(manifest),
        }),
        Err(d) => diags.extend(d),
    }
}

fn load_embedded_policy(
    layers: &mut Vec<PolicyLayer>,
    seen: &mut HashSet<PathBuf>,
    diags: &mut Diagnostics,
) {
    if !seen.insert(PathBuf::from(BUILTIN_DEFAULT)) {
        return;
    }
    let file = SourceFile {
        name: "<embedded>/policies/default.yaml".to_string(),
        path: None,
        text: embedded::DEFAULT_POLICY.to_string(),
    };
    // The JSON form is build.rs's conversion of the same text, read
    // straight into its types (no generic value, no path tracking: a test
    // proves it reads as the YAML does); should it ever fail to read, the
    // YAML is the source of truth and reports what is wrong.
    let parsed = match embedded::default_policy_from_json() {
        Some(policy) => Ok((policy, yaml::SourceMap::build(&file.text))),
        None => parse::policy(&file),
    };
    match parsed {
        Ok((policy, map)) => layers.push(PolicyLayer { file, map, policy }),
        Err(d) => diags.extend(d),
    }
}

fn load_policy_file(
    path: &Path,
    depth: usize,
    layers: &mut Vec<PolicyLayer>,
    seen: &mut HashSet<PathBuf>,
    diags: &mut Diagnostics,
) {
    let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if !seen.insert(key) {
        return; // already a layer (a diamond, or the folder also holds the parent)
    }
    let Some(file) = read_file(path, MAX_POLICY_BYTES, diags) else {
        return;
    };
    let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    load_layer(file, &base, depth, layers, seen, diags);
}

/// Parses one policy file's text and loads what it extends first (paths
/// relative to `base`).
fn load_layer(
    file: SourceFile,
    base: &Path,
    depth: usize,
    layers: &mut Vec<PolicyLayer>,
    seen: &mut HashSet<PathBuf>,
    diags: &mut Diagnostics,
) {
    let (policy, map) = match parse::policy(&file) {
        Ok(parsed) => parsed,
        Err(d) => {
            diags.extend(d);
            return;
        }
    };
    for (i, parent) in policy.extends.iter().enumerate() {
        let at = map.value(&format!("extends.{i}"));
        if parent == BUILTIN_DEFAULT {
            load_embedded_policy(layers, seen, diags);
            continue;
        }
        let parent_path = base.join(parent);
        if depth + 1 >= MAX_EXTENDS_DEPTH {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    at,
                    format!("`extends` chain deeper than {MAX_EXTENDS_DEPTH} files at `{parent}`"),
                )
                .with_help("flatten the chain, or check it for a cycle"),
            );
            continue;
        }
        if !parent_path.is_file() {
            diags.push(
                Diagnostic::new(&file.name, at, format!("`extends` names `{parent}`, which does not exist ({})", parent_path.display()))
                    .with_help(format!("give a path relative to this file, or `{BUILTIN_DEFAULT}` for the embedded default policy")),
            );
            continue;
        }
        let canonical = parent_path.canonicalize().unwrap_or(parent_path.clone());
        if seen.contains(&canonical)
            && !layers.iter().any(|l| {
                l.file
                    .path
                    .as_deref()
                    .and_then(|p| p.canonicalize().ok())
                    .as_ref()
                    == Some(&canonical)
            })
        {
            diags.push(
                Diagnostic::new(
                    &file.name,
                    at,
                    format!("`extends` cycle: `{parent}` extends this file again"),
                )
                .with_help("remove one of the `extends` entries that form the cycle"),
            );
            continue;
        }
        load_policy_file(&parent_path, depth + 1, layers, seen, diags);
    }
    layers.push(PolicyLayer { file, map, policy });
}

fn list_files(dir_or_file: &Path, extensions: &[&str], diags: &mut Diagnostics) -> Vec<PathBuf> {
    if dir_or_file.is_file() {
        return vec![dir_or_file.to_path_buf()];
    }
    let entries = match std::fs::read_dir(dir_or_file) {
        Ok(e) => e,
        Err(e) => {
            diags.push(
                Diagnostic::new(&dir_or_file.display().to_string(), Position::default(), format!("cannot read `{}`: {e}", dir_or_file.display()))
                    .with_help("pass an existing folder or file, or leave the flag out to use the embedded defaults"),
            );
            return Vec::new();
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| extensions.contains(&e))
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        diags.push(
            Diagnostic::new(
                &dir_or_file.display().to_string(),
                Position::default(),
                format!(
                    "no `*.{}` files in `{}`",
                    extensions[0],
                    dir_or_file.display()
                ),
            )
            .with_help("add files, or leave the flag out to use the embedded defaults"),
        );
    }
    files
}

fn read_file(path: &Path, max: usize, diags: &mut Diagnostics) -> Option<SourceFile> {
    let name = path.display().to_string();
    let too_big = |len: u64| {
        Diagnostic::new(
            &name,
            Position::default(),
            format!("file is {len} bytes; the limit is {max}"),
        )
        .with_help("split it into smaller files joined with `extends`")
    };
    match std::fs::metadata(path) {
        Ok(m) if m.len() > max as u64 => {
            diags.push(too_big(m.len()));
            return None;
        }
        Err(e) => {
            diags.push(Diagnostic::new(
                &name,
                Position::default(),
                format!("cannot read: {e}"),
            ));
            return None;
        }
        Ok(_) => {}
    }
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Some(SourceFile {
                name,
                path: Some(path.to_path_buf()),
                text,
            }),
            Err(e) => {
                let pos = parse::position_of(
                    &String::from_utf8_lossy(e.as_bytes()),
                    e.utf8_error().valid_up_to(),
                );
                diags.push(
                    Diagnostic::new(&name, pos, "file is not valid UTF-8")
                        .with_help("save it as UTF-8"),
                );
                None
            }
        },
        Err(e) => {
            diags.push(Diagnostic::new(
                &name,
                Position::default(),
                format!("cannot read: {e}"),
            ));
            None
        }
    }
}
