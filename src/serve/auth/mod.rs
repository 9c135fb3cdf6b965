//! Who is calling the HTTP gateway: bearer tokens checked against the
//! policy's `auth:` section.
//!
//! An [`Authenticator`] is built from each policy version (a reload builds a
//! new one; one that cannot be built keeps the last good policy). Checking a
//! request:
//!
//! - the `Authorization: Bearer TOKEN` header is parsed (a missing header
//!   is [`Refused::Missing`], anything else malformed [`Refused::Invalid`]);
//! - the token's SHA-256 is compared with every static token's hash, in
//!   constant time and without stopping at a match, so timing tells nothing
//!   about which hash or how much of it matched;
//! - otherwise a JWT is verified ([`jwt`]); a token verified before is found
//!   by its SHA-256 in a bounded cache until its `exp`, so a client that
//!   sends the same token on every request pays for one signature check.
//!
//! The token itself is never stored, logged or echoed: only its hash lives
//! in the cache, and refusals say what was wrong, not what was sent.

mod fetch;
pub mod http;
mod jwt;

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::policy::auth::{AuthConfig, Identity};

pub use jwt::JwtVerifier;

/// Tokens longer than this are refused unread (a JWT is a few KB).
const MAX_TOKEN_BYTES: usize = 16 << 10;
/// Verified JWTs remembered at once; the cache is emptied when full.
const MAX_CACHED_JWTS: usize = 4096;

/// Why a request has no identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No `Authorization` header.
    Missing,
    /// A header or token that is not accepted; the text says why (for
    /// `error_description`), never what the token was.
    Invalid(String),
}

/// Checks bearer tokens for one policy version.
pub struct Authenticator {
    config: std::sync::Arc<AuthConfig>,
    jwt: Option<JwtVerifier>,
    /// SHA-256 of a verified JWT -> its identity and `exp`.
    cache: Mutex<HashMap<[u8; 32], (Identity, u64)>>,
}

impl Authenticator {
    /// Builds the checker for `config`; fails when a JWKS key cannot be used.
    pub fn new(config: std::sync::Arc<AuthConfig>) -> Result<Authenticator, String> {
        let jwt = match &config.jwt {
            Some(j) => Some(JwtVerifier::new(j, &config.profiles)?),
            None => None,
        };
        Ok(Authenticator {
            config,
            jwt,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The configuration it checks against.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Whether every request must authenticate.
    pub fn required(&self) -> bool {
        self.config.required
    }

    /// The identity behind an `Authorization` header value.
    pub fn authenticate(&self, header: Option<&[u8]>) -> Result<Identity, Refused> {
        let Some(header) = header else {
            return Err(Refused::Missing);
        };
        let token = bearer_token(header)?;
        self.check_token(token)
    }

    /// [`Authenticator::authenticate`] for the HTTP server: with keys from
    /// `jwks_url`, a token whose `kid` is unknown (or keys too old) makes it
    /// fetch the JWKS again (off the async workers) and try once more, and
    /// keys half their `jwks_max_age` old are refreshed in the background.
    pub async fn authenticate_refreshing(
        self: &std::sync::Arc<Self>,
        header: Option<Vec<u8>>,
    ) -> Result<Identity, Refused> {
        if self.jwt.as_ref().is_some_and(JwtVerifier::refresh_due) {
            let me = self.clone();
            tokio::task::spawn_blocking(move || me.jwt.as_ref().map(JwtVerifier::refresh));
        }
        let Some(header) = header else {
            return Err(Refused::Missing);
        };
        let token = bearer_token(&header)?;
        match self.check(token) {
            Ok(identity) => Ok(identity),
            Err((refused, false)) => Err(refused),
            Err((_, true)) => {
                let me = self.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    me.jwt.as_ref().is_some_and(JwtVerifier::refresh)
                })
                .await;
                // Checked again even when this request did not fetch: a
                // fetch in flight elsewhere may have brought the keys.
                self.check(token).map_err(|(r, _)| r)
            }
        }
    }

    /// The identity behind a bearer token.
    pub fn check_token(&self, token: &str) -> Result<Identity, Refused> {
        self.check(token).map_err(|(r, _)| r)
    }

    /// `Err` holds the refusal and whether fetching the JWKS again might
    /// change it.
    fn check(&self, token: &str) -> Result<Identity, (Refused, bool)> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(identity) = self.static_token(&digest) {
            return Ok(identity);
        }
        let not_accepted = || (Refused::Invalid("the token is not accepted".into()), false);
        let Some(jwt) = &self.jwt else {
            return Err(not_accepted());
        };
        if token.split('.').count() != 3 {
            return Err(not_accepted());
        }
        let now = crate::serve::unix_now() as u64;
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((identity, exp)) = cache.get(&digest) {
                if now < *exp && jwt.fresh().is_ok() {
                    return Ok(identity.clone());
                }
            }
        }
        let (identity, exp) = jwt
            .verify(token)
            .map_err(|r| (Refused::Invalid(r.message), r.refresh))?;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_CACHED_JWTS {
            cache.retain(|_, (_, exp)| now < *exp);
            if cache.len() >= MAX_CACHED_JWTS {
                cache.clear();
            }
        }
        cache.insert(digest, (identity.clone(), exp));
        Ok(identity)
    }

    /// The static token whose hash is `digest`: every hash is compared, in
    /// constant time.
    fn static_token(&self, digest: &[u8; 32]) -> Option<Identity> {
        let mut found = None;
        for t in &self.config.tokens {
            let equal: bool = t.sha256.ct_eq(digest).into();
            if equal && found.is_none() {
                found = Some(Identity::new(t.id.clone(), t.profile.clone()));
            }
        }
        found
    }
}

/// The token of `Bearer TOKEN` (scheme case-insensitive), checked to be
/// RFC 6750's `b64token` characters.
fn bearer_token(header: &[u8]) -> Result<&str, Refused> {
    let malformed = || Refused::Invalid("the Authorization header is not `Bearer TOKEN`".into());
    let text = std::str::from_utf8(header).map_err(|_| malformed())?;
    let (scheme, token) = text.trim().split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(malformed());
    }
    let token = token.trim();
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES {
        return Err(malformed());
    }
    let b64token = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
    if !token.chars().all(b64token) {
        return Err(malformed());
    }
    Ok(token)
}

/// The SHA-256 of a token as 64 hex digits (what `auth.tokens[].sha256`
/// holds; `toolgate auth hash-token` prints it).
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::auth::{parse_sha256, StaticToken};

    fn with_tokens() -> Authenticator {
        let config = AuthConfig {
            required: true,
            tokens: vec![
                StaticToken {
                    id: "ci-bot".into(),
                    sha256: parse_sha256(&hash_token("ci-secret")).unwrap(),
                    profile: Some("readonly".into()),
                },
                StaticToken {
                    id: "dev".into(),
                    sha256: parse_sha256(&hash_token("dev-secret")).unwrap(),
                    profile: None,
                },
            ],
            ..AuthConfig::default()
        };
        Authenticator::new(std::sync::Arc::new(config)).unwrap()
    }

    #[test]
    fn static_tokens_name_their_identity_and_profile() {
        let a = with_tokens();
        let ci = a.authenticate(Some(b"Bearer ci-secret")).unwrap();
        assert_eq!(
            (ci.id.as_str(), ci.profile.as_deref()),
            ("ci-bot", Some("readonly"))
        );
        let dev = a.authenticate(Some(b"bearer  dev-secret ")).unwrap();
        assert_eq!((dev.id.as_str(), dev.profile), ("dev", None));
    }

    #[test]
    fn anything_else_is_refused_without_echoing_the_token() {
        let a = with_tokens();
        assert_eq!(a.authenticate(None), Err(Refused::Missing));
        for bad in [
            &b"Bearer wrong-secret"[..],
            b"Basic Y2ktc2VjcmV0",
            b"Bearer",
            b"ci-secret",
            b"Bearer ci-secret\x01",
            b"Bearer ci secret",
        ] {
            match a.authenticate(Some(bad)) {
                Err(Refused::Invalid(why)) => assert!(!why.contains("secret"), "{why}"),
                other => panic!("{:?} got {other:?}", String::from_utf8_lossy(bad)),
            }
        }
    }

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(
            hash_token("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
    }
}
