//! Who is calling: the compiled `auth:` section and the [`Identity`] a
//! front-end attaches to a call.
//!
//! The library only holds the data: token hashes, the JWT settings with the
//! keys read at load, and which profile each identity gets. Checking a
//! presented token (hashing, constant-time comparison, JWT signatures) is the
//! HTTP front-end's work (`serve`), so the library needs no crypto.

use std::collections::BTreeMap;

use serde_json::Value;

/// The caller of one request, as authentication established it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The token's id, or the JWT's identity claim: what logs show and
    /// `rules[].identities` match.
    pub id: String,
    /// The profile (one of `tools.profiles`) whose tools this caller sees;
    /// `None`: the policy's active set.
    pub profile: Option<String>,
    /// How it was established.
    pub source: IdentitySource,
}

/// How an identity was established.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IdentitySource {
    /// A static token of `auth.tokens` (the id is the token's id).
    #[default]
    Token,
    /// A JWT (the id is its identity claim).
    Jwt,
}

impl Identity {
    /// A static token's identity, with an optional profile.
    pub fn new(id: impl Into<String>, profile: Option<String>) -> Identity {
        Identity {
            id: id.into(),
            profile,
            source: IdentitySource::Token,
        }
    }
}

/// One static token: its id, the SHA-256 of its text, its profile.
#[derive(Clone, Debug)]
pub struct StaticToken {
    /// The identity it stands for.
    pub id: String,
    /// SHA-256 of the token.
    pub sha256: [u8; 32],
    /// Its profile, checked to exist when the policy compiled.
    pub profile: Option<String>,
}

/// JWT verification settings, with the key set read at load.
#[derive(Clone, Debug)]
pub struct JwtConfig {
    /// Required `iss`.
    pub issuer: String,
    /// Required audience.
    pub audience: String,
    /// The JWKS as read from `jwks_file` (an object with a `keys` array);
    /// `Null` with `jwks_url` (the HTTP front-end fetches it).
    pub jwks: Value,
    /// Where it came from, for messages.
    pub jwks_source: String,
    /// `http://` URL of the provider's JWKS, when configured instead of a file.
    pub jwks_url: Option<String>,
    /// How long fetched keys stay usable when they cannot be refreshed.
    pub jwks_max_age: std::time::Duration,
    /// The claim naming the caller.
    pub identity_claim: String,
    /// The claim naming a profile, if any.
    pub profile_claim: Option<String>,
    /// Clock skew allowed for `exp` and `nbf`, in seconds.
    pub leeway_seconds: u64,
}

/// What `/.well-known/oauth-protected-resource` serves.
#[derive(Clone, Debug, Default)]
pub struct ResourceMetadata {
    /// The resource identifier; `None`: the request's own `/mcp` URL.
    pub resource: Option<String>,
    /// Authorization servers.
    pub authorization_servers: Vec<String>,
    /// Scopes clients may request.
    pub scopes_supported: Vec<String>,
}

/// The compiled `auth:` section of every layer.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// Every HTTP request (but `/healthz`) needs a valid identity.
    pub required: bool,
    /// Static tokens, in file order.
    pub tokens: Vec<StaticToken>,
    /// JWT settings.
    pub jwt: Option<JwtConfig>,
    /// Protected Resource Metadata.
    pub resource_metadata: ResourceMetadata,
    /// Every profile name, so a JWT's profile claim can be checked.
    pub profiles: Vec<String>,
}

impl AuthConfig {
    /// Whether the section configures any way to authenticate.
    pub fn has_credentials(&self) -> bool {
        !self.tokens.is_empty() || self.jwt.is_some()
    }
}

/// Checks a JWKS: a JSON object whose `keys` is a non-empty array of RSA or
/// EC public keys, each with a `kid`.
pub fn check_jwks(jwks: &Value) -> Result<(), String> {
    let keys = jwks
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("it has no `keys` array")?;
    if keys.is_empty() {
        return Err("its `keys` array is empty".into());
    }
    for (i, key) in keys.iter().enumerate() {
        let kty = key.get("kty").and_then(Value::as_str).unwrap_or("");
        if !matches!(kty, "RSA" | "EC") {
            return Err(format!(
                "key {i} has `kty` {kty:?}; only RSA and EC public keys are accepted"
            ));
        }
        if key.get("kid").and_then(Value::as_str).is_none() {
            return Err(format!("key {i} has no `kid`"));
        }
        if key.get("d").is_some() {
            return Err(format!(
                "key {i} is a private key (it has `d`); publish only public keys"
            ));
        }
    }
    Ok(())
}

/// Parses 64 hex digits into a SHA-256 digest.
pub fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The named profiles' active sets, as compiled (kept beside the active set
/// so that a caller's profile can be served without another compile).
pub type Profiles = BTreeMap<String, Vec<String>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_hex_is_64_digits() {
        let h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let d = parse_sha256(h).unwrap();
        assert_eq!(d[0], 0x9f);
        assert_eq!(d[31], 0x08);
        assert!(parse_sha256(&h[..63]).is_none());
        assert!(parse_sha256(&format!("{}g", &h[..63])).is_none());
        assert!(parse_sha256(&h.replace('9', "é")).is_none());
    }
}
