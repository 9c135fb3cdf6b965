//! The `auth:` section of a policy file: who may call the HTTP gateway.
//!
//! It is policy data like every other section (parsed with positions,
//! compiled, hot-reloaded, the last good policy kept when it breaks); the
//! HTTP front-end checks each request's bearer token against it. Static
//! tokens are stored as SHA-256 hashes only, never in clear.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `auth:` — authentication of HTTP callers (stdio is unaffected).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// Every HTTP request (but `/healthz`) needs a valid identity. Required
    /// for `serve --http --allow-remote`.
    #[serde(default)]
    pub required: Option<bool>,
    /// Static bearer tokens, each stored as the SHA-256 of the token
    /// (`toolgate auth hash-token` prints the entry to paste).
    #[serde(default)]
    pub tokens: Vec<TokenSpec>,
    /// Tokens (JWTs) issued by an identity provider.
    #[serde(default)]
    pub jwt: Option<JwtSpec>,
    /// OAuth 2.0 Protected Resource Metadata (RFC 9728), served at
    /// `/.well-known/oauth-protected-resource` and named in every 401's
    /// `WWW-Authenticate` header.
    #[serde(default)]
    pub resource_metadata: Option<ResourceMetadataSpec>,
}

/// One static bearer token.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenSpec {
    /// The identity the token stands for, in logs, metrics and
    /// `rules[].identities`.
    pub id: String,
    /// The token's SHA-256, as 64 hex digits.
    pub sha256: String,
    /// One of `tools.profiles`: the tools this caller sees. Absent: the
    /// active set.
    #[serde(default)]
    pub profile: Option<String>,
}

/// JWTs from an identity provider, verified with its public keys (RS256 or
/// ES256; `alg: none` and HMAC algorithms are always refused).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JwtSpec {
    /// The required `iss` claim.
    pub issuer: String,
    /// The required `aud` claim (one of the token's audiences).
    pub audience: String,
    /// A JWKS (JSON Web Key Set) file with the provider's public keys,
    /// relative to the policy file; read when the policy loads.
    #[serde(default)]
    pub jwks_file: Option<String>,
    /// Instead of `jwks_file`: where the provider publishes its JWKS
    /// (`http://` only in this version; put a TLS-terminating proxy or a
    /// file in between for `https://`). Fetched when the policy loads,
    /// again for a token whose `kid` is unknown and in the background; when
    /// refreshing fails the last keys are used for `jwks_max_age`, then
    /// every JWT is refused.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// How long keys fetched from `jwks_url` stay usable when they cannot
    /// be refreshed, e.g. `1h` (the default), `10m`.
    #[serde(default)]
    pub jwks_max_age: Option<String>,
    /// The claim that names the caller (default `sub`).
    #[serde(default)]
    pub identity_claim: Option<String>,
    /// A claim naming one of `tools.profiles`; absent from a token: the
    /// active set.
    #[serde(default)]
    pub profile_claim: Option<String>,
    /// Clock skew allowed for `exp` and `nbf`, in seconds (default 30).
    #[serde(default)]
    pub leeway_seconds: Option<u64>,
}

/// What `/.well-known/oauth-protected-resource` says.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceMetadataSpec {
    /// The resource identifier (default: the gateway's own `/mcp` URL as
    /// the request named it).
    #[serde(default)]
    pub resource: Option<String>,
    /// Authorization servers that issue tokens for this resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes clients may request.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}
