//! JWT verification against the key set read when the policy loaded.
//!
//! Only asymmetric algorithms are accepted (RS256/384/512, PS256/384/512,
//! ES256, ES384), each only with a key of its own family: a token whose
//! header says `none` or `HS256` (the "sign with the public key as an HMAC
//! secret" confusion) is refused before any key is touched. Every token
//! must carry a `kid` that names a key of the set, `exp`, the configured
//! `iss` and `aud`, and not be used before its `nbf`.

use std::collections::HashMap;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use crate::policy::auth::{Identity, IdentitySource, JwtConfig};

/// One public key: what it verifies and with which algorithms.
struct Key {
    decoding: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// The identity provider's keys and the claims a token must carry.
pub struct JwtVerifier {
    keys: HashMap<String, Key>,
    issuer: String,
    audience: String,
    identity_claim: String,
    profile_claim: Option<String>,
    profiles: Vec<String>,
    leeway: u64,
}

/// Why a JWT was refused (said in `WWW-Authenticate`'s
/// `error_description`; never contains the token).
pub type Refusal = String;

impl JwtVerifier {
    /// Builds the verifier; fails when a key of the set cannot be used.
    pub fn new(config: &JwtConfig, profiles: &[String]) -> Result<JwtVerifier, String> {
        let set: JwkSet = serde_json::from_value(config.jwks.clone())
            .map_err(|e| format!("JWKS `{}`: {e}", config.jwks_source))?;
        let mut keys = HashMap::new();
        for jwk in &set.keys {
            let kid = jwk.common.key_id.clone().unwrap_or_default();
            let key = key_of(jwk).map_err(|e| {
                format!(
                    "JWKS `{}`: key `{kid}` cannot be used: {e}",
                    config.jwks_source
                )
            })?;
            if keys.insert(kid.clone(), key).is_some() {
                return Err(format!(
                    "JWKS `{}`: two keys have the `kid` `{kid}`",
                    config.jwks_source
                ));
            }
        }
        Ok(JwtVerifier {
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            identity_claim: config.identity_claim.clone(),
            profile_claim: config.profile_claim.clone(),
            profiles: profiles.to_vec(),
            leeway: config.leeway_seconds,
        })
    }

    /// Verifies `token`; `Ok` holds the identity and the token's `exp`
    /// (seconds since the epoch).
    pub fn verify(&self, token: &str) -> Result<(Identity, u64), Refusal> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| "the token is not a JWT with a supported algorithm".to_string())?;
        let kid = header
            .kid
            .as_deref()
            .ok_or_else(|| "the token has no `kid`".to_string())?;
        let key = self
            .keys
            .get(kid)
            .ok_or_else(|| "the token's `kid` names no known key".to_string())?;
        if !key.algorithms.contains(&header.alg) {
            return Err(format!(
                "algorithm {:?} is not accepted for this key",
                header.alg
            ));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = key.algorithms.clone();
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = self.leeway;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.decoding, &validation)
            .map_err(|e| refusal(e.kind()))?;
        let claims = data.claims;
        let id = claims
            .get(&self.identity_claim)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("the token has no `{}` claim", self.identity_claim))?;
        let profile = match &self.profile_claim {
            None => None,
            Some(claim) => match claims.get(claim) {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) if self.profiles.contains(p) => Some(p.clone()),
                Some(_) => return Err(format!("the token's `{claim}` names no profile")),
            },
        };
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
        Ok((
            Identity {
                id: id.to_string(),
                profile,
                source: IdentitySource::Jwt,
            },
            exp,
        ))
    }
}

fn refusal(kind: &jsonwebtoken::errors::ErrorKind) -> Refusal {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::ExpiredSignature => "the token has expired".into(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        K::InvalidIssuer => "the token's issuer is not accepted".into(),
        K::InvalidAudience => "the token's audience is not accepted".into(),
        K::InvalidSignature => "the token's signature does not verify".into(),
        K::InvalidAlgorithm => "the token's algorithm is not accepted".into(),
        K::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
        _ => "the token is invalid".into(),
    }
}

/// The decoding key of one JWK, with the algorithms its family allows (the
/// JWK's own `alg` narrows them to one).
fn key_of(jwk: &Jwk) -> Result<Key, String> {
    let family: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("only the P-256 and P-384 curves are supported".into()),
        },
        _ => return Err("only RSA and EC public keys are accepted".into()),
    };
    let algorithms = match jwk.common.key_algorithm {
        None => family,
        Some(alg) => {
            let named = match alg {
                KeyAlgorithm::RS256 => Algorithm::RS256,
                KeyAlgorithm::RS384 => Algorithm::RS384,
                KeyAlgorithm::RS512 => Algorithm::RS512,
                KeyAlgorithm::PS256 => Algorithm::PS256,
                KeyAlgorithm::PS384 => Algorithm::PS384,
                KeyAlgorithm::PS512 => Algorithm::PS512,
                KeyAlgorithm::ES256 => Algorithm::ES256,
                KeyAlgorithm::ES384 => Algorithm::ES384,
                other => return Err(format!("algorithm {other:?} is not accepted")),
            };
            if !family.contains(&named) {
                return Err(format!("`alg` {alg:?} does not fit the key's type"));
            }
            vec![named]
        }
    };
    let decoding = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
    Ok(Key {
        decoding,
        algorithms,
    })
}
