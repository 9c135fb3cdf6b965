//! "These exact policy bytes compiled and passed their examples under this
//! build": a record that lets a hook process skip re-checking examples and
//! compile rule regexes on first use.
//!
//! A hook is one process per tool call, so checking every rule's examples
//! (which compiles every rule's regex) on every start costs milliseconds on
//! every call. The first process that loads a given policy text checks
//! everything as always; when the compile succeeds it records a **stamp**,
//! and later processes that load exactly the same bytes find the stamp and
//! skip the examples (see `docs/performance.md` and `SECURITY.md`).
//!
//! **Why a stamp cannot widen a policy.** A stamp is an empty file in
//! `STATE/proven/` whose name is `HMAC-SHA256(key, build ‖ SHA-256 of every
//! policy, manifest and server file's name and text)`. The key is 32 random
//! bytes in `STATE/key`, made on first use, mode 0600, in a 0700 directory
//! outside the workspace (`$TOOLGATE_STATE_DIR`, else
//! `$XDG_STATE_HOME/toolgate`, else `~/.local/state/toolgate`); a state
//! directory inside the workspace, a key that is a symlink, not ours, or
//! readable by others is not used (then every start checks everything).
//! So:
//! - a stamp is only ever made by toolgate after these exact bytes passed,
//!   and names a digest of those bytes: any change to a policy file (an
//!   agent rewriting a rule or an example) is a different name, not found,
//!   so the next start checks everything and a failing example denies;
//! - a name cannot be computed without the key, which never leaves the
//!   state directory: a file written from the workspace, or a stamp made by
//!   another build (the build is part of the MAC), proves nothing;
//! - a stamp is only a skip of re-checking: the policy still decides with
//!   its own text, so the worst a stolen key allows is running a policy
//!   whose examples fail — never a rule the files do not contain.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Loaded;

/// What the stamp's MAC covers besides the files: this build — the version
/// and the running executable's file identity (device, inode, size,
/// modification time), so a rebuilt or reinstalled binary proves again.
pub fn build_id() -> Option<String> {
    build_id_of(&std::env::current_exe().ok()?)
}

/// [`build_id`] of the executable at `exe`.
pub fn build_id_of(exe: &Path) -> Option<String> {
    let m = fs::metadata(exe).ok()?;
    Some(format!(
        "toolgate {} {}:{}:{}:{}.{}",
        env!("CARGO_PKG_VERSION"),
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec()
    ))
}

/// A policy's stamp: where it would be, and whether it is there.
#[derive(Clone, Debug)]
pub struct Stamp {
    path: PathBuf,
    found: bool,
}

impl Stamp {
    /// Whether these exact files were proven by this build before.
    pub fn found(&self) -> bool {
        self.found
    }

    /// Records that the files passed. Errors are ignored: without a stamp the
    /// next start checks everything, which is only slower.
    pub fn record(&self) {
        if self.found {
            return;
        }
        let _ = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&self.path);
    }
}

/// The state directory: `$TOOLGATE_STATE_DIR`, else
/// `$XDG_STATE_HOME/toolgate`, else `$HOME/.local/state/toolgate`; `None`
/// when none is set to an absolute path.
pub fn state_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(dir) = std::env::var_os("TOOLGATE_STATE_DIR").and_then(abs) {
        return Some(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").and_then(abs) {
        return Some(dir.join("toolgate"));
    }
    std::env::var_os("HOME")
        .and_then(abs)
        .map(|h| h.join(".local/state/toolgate"))
}

/// The stamp for `loaded` in `dir`, making the key on first use. `None` when
/// the state directory cannot be used safely: inside `workspace`, not ours,
/// writable by others, or its key unreadable (then nothing is trusted).
pub fn stamp(loaded: &Loaded, dir: &Path, workspace: Option<&Path>) -> Option<Stamp> {
    let key = key(dir, workspace)?;
    let name = stamp_name(&key, &digest_for(&build_id()?, loaded));
    let path = dir.join("proven").join(name);
    let found = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
    Some(Stamp { path, found })
}

/// SHA-256 over the build ([`build_id`]) and every file's name and text,
/// each length-prefixed so that no two different sets of files feed the
/// same bytes.
pub fn digest_for(build: &str, loaded: &Loaded) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut feed = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    feed(build.as_bytes());
    for (kind, files) in [
        (
            "policy",
            loaded.layers.iter().map(|l| &l.file).collect::<Vec<_>>(),
        ),
        (
            "manifest",
            loaded.manifests.iter().map(|m| &m.file).collect(),
        ),
        ("server", loaded.servers.iter().map(|s| &s.file).collect()),
    ] {
        feed(kind.as_bytes());
        feed(&(files.len() as u64).to_le_bytes());
        for f in files {
            feed(f.name.as_bytes());
            feed(f.text.as_bytes());
        }
    }
    h.finalize().into()
}

/// The stamp's file name for `digest` under `key`.
pub fn stamp_name(key: &[u8; 32], digest: &[u8; 32]) -> String {
    hex(&hmac_sha256(key, digest))
}

/// HMAC-SHA256 (RFC 2104) with a 32-byte key.
fn hmac_sha256(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (i, k) in key.iter().enumerate() {
        inner_pad[i] ^= k;
        outer_pad[i] ^= k;
    }
    let mut inner = Sha256::new();
    inner.update(inner_pad);
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(outer_pad);
    outer.update(inner);
    outer.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads `dir/key`, making the directory and key on first use.
pub fn key(dir: &Path, workspace: Option<&Path>) -> Option<[u8; 32]> {
    if let Some(ws) = workspace {
        // An agent can write its workspace: a key there proves nothing.
        let dir_real = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let ws_real = fs::canonicalize(ws).unwrap_or_else(|_| ws.to_path_buf());
        if dir_real.starts_with(&ws_real) || dir.starts_with(ws) {
            return None;
        }
    }
    let proven = dir.join("proven");
    if !proven.is_dir() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&proven)
            .ok()?;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    for d in [dir, proven.as_path()] {
        let m = fs::symlink_metadata(d).ok()?;
        if !m.is_dir() || m.uid() != me || m.permissions().mode() & 0o022 != 0 {
            return None;
        }
    }
    let path = dir.join("key");
    match read_key(&path, me) {
        Some(key) => Some(key),
        None if fs::symlink_metadata(&path).is_err() => {
            let mut key = [0u8; 32];
            fs::File::open("/dev/urandom")
                .ok()?
                .read_exact(&mut key)
                .ok()?;
            // Another process may make it at the same moment: the first wins.
            if let Ok(mut f) = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                f.write_all(&key).ok()?;
            }
            read_key(&path, me)
        }
        None => None,
    }
}

fn read_key(path: &Path, me: u32) -> Option<[u8; 32]> {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let m = f.metadata().ok()?;
    if !m.is_file() || m.uid() != me || m.permissions().mode() & 0o077 != 0 || m.len() != 32 {
        return None;
    }
    let mut key = [0u8; 32];
    f.read_exact(&mut key).ok()?;
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_shape() {
        // RFC 4231 test case 2 uses a short key; with a 32-byte key padded
        // by zeros HMAC is the same as with the key itself.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        let mac = hmac_sha256(&key, b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn key_is_made_once_and_refused_when_others_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let a = key(&state, None).unwrap();
        assert_eq!(key(&state, None).unwrap(), a, "the same key on every start");
        let k = state.join("key");
        fs::set_permissions(&k, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(key(&state, None).is_none(), "a readable key is not trusted");
        fs::set_permissions(&k, fs::Permissions::from_mode(0o600)).unwrap();
        // A state directory inside the workspace is never used.
        assert!(key(&state, Some(dir.path())).is_none());
    }
}
