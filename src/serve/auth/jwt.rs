//! JWT verification against the key set read when the policy loaded.
//!
//! Only asymmetric algorithms are accepted (RS256/384/512, PS256/384/512,
//! ES256, ES384), each only with a key of its own family: a token whose
//! header says `none` or `HS256` (the "sign with the public key as an HMAC
//! secret" confusion) is refused before any key is touched. Every token
//! must carry a `kid` that names a key of the set, `exp`, the configured
//! `iss` and `aud`, and not be used before its `nbf`.
//!
//! Keys come from `jwks_file` (read when the policy loaded) or `jwks_url`
//! (fetched when the policy loads; again when a token names an unknown
//! `kid` or the keys are half their `jwks_max_age` old, at most once per
//! [`JwtVerifier::min_refresh_interval`]). Keys that could not be refreshed
//! for `jwks_max_age` are not used: every JWT is refused until a fetch
//! succeeds (fail closed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use crate::policy::auth::{Identity, IdentitySource, JwtConfig};

/// One public key: what it verifies and with which algorithms.
struct Key {
    decoding: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// One key set and when it was read.
struct KeyRing {
    keys: HashMap<String, Key>,
    fetched: Instant,
}

/// Where the keys come from.
enum Source {
    /// A file, read at load: never stale.
    File,
    /// A URL, refreshed.
    Url {
        url: String,
        max_age: Duration,
        last_attempt: Mutex<Instant>,
    },
}

/// How long a JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The identity provider's keys and the claims a token must carry.
pub struct JwtVerifier {
    ring: RwLock<Arc<KeyRing>>,
    source: Source,
    issuer: String,
    audience: String,
    identity_claim: String,
    profile_claim: Option<String>,
    profiles: Vec<String>,
    leeway: u64,
}

/// Why a JWT was refused: the text goes into `WWW-Authenticate`'s
/// `error_description` (it never contains the token); `refresh` when
/// fetching the keys again might change the answer (an unknown `kid`, keys
/// too old).
#[derive(Debug)]
pub struct Refusal {
    /// What was wrong.
    pub message: String,
    /// Whether a JWKS refresh could help.
    pub refresh: bool,
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal {
            message,
            refresh: false,
        }
    }
}

/// The usable keys of a JWKS, by `kid`.
fn keys_of(jwks: &Value, source: &str) -> Result<HashMap<String, Key>, String> {
    let set: JwkSet =
        serde_json::from_value(jwks.clone()).map_err(|e| format!("JWKS `{source}`: {e}"))?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let kid = jwk.common.key_id.clone().unwrap_or_default();
        let key =
            key_of(jwk).map_err(|e| format!("JWKS `{source}`: key `{kid}` cannot be used: {e}"))?;
        if keys.insert(kid.clone(), key).is_some() {
            return Err(format!("JWKS `{source}`: two keys have the `kid` `{kid}`"));
        }
    }
    Ok(keys)
}

impl JwtVerifier {
    /// Builds the verifier (fetching `jwks_url` now); fails when the keys
    /// cannot be read or a key of the set cannot be used.
    pub fn new(config: &JwtConfig, profiles: &[String]) -> Result<JwtVerifier, String> {
        let (jwks, source) = match &config.jwks_url {
            None => (config.jwks.clone(), Source::File),
            Some(url) => {
                let jwks = super::fetch::fetch_jwks(url, FETCH_TIMEOUT)
                    .map_err(|e| format!("cannot fetch the JWKS `{url}`: {e}"))?;
                let source = Source::Url {
                    url: url.clone(),
                    max_age: config.jwks_max_age,
                    last_attempt: Mutex::new(Instant::now()),
                };
                (jwks, source)
            }
        };
        let keys = keys_of(&jwks, &config.jwks_source)?;
        Ok(JwtVerifier {
            ring: RwLock::new(Arc::new(KeyRing {
                keys,
                fetched: Instant::now(),
            })),
            source,
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
        self.fresh()?;
        let ring = self.ring();
        let key = ring.keys.get(kid).ok_or_else(|| Refusal {
            message: "the token's `kid` names no known key".into(),
            refresh: matches!(self.source, Source::Url { .. }),
        })?;
        if !key.algorithms.contains(&header.alg) {
            return Err(format!("algorithm {:?} is not accepted for this key", header.alg).into());
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
            .map_err(|e| Refusal::from(refusal(e.kind())))?;
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
                Some(_) => return Err(format!("the token's `{claim}` names no profile").into()),
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

impl JwtVerifier {
    fn ring(&self) -> Arc<KeyRing> {
        self.ring.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `Err` when keys from `jwks_url` are older than `jwks_max_age`.
    pub fn fresh(&self) -> Result<(), Refusal> {
        match &self.source {
            Source::Url { max_age, .. } if self.ring().fetched.elapsed() > *max_age => {
                Err(Refusal {
                    message:
                        "the identity provider's keys could not be refreshed, so no JWT is accepted"
                            .into(),
                    refresh: true,
                })
            }
            _ => Ok(()),
        }
    }

    /// The least time between two fetches of `jwks_url`: a quarter of
    /// `jwks_max_age`, at most 30 s (so a stream of unknown `kid`s cannot
    /// make the gateway hammer the provider).
    pub fn min_refresh_interval(&self) -> Duration {
        match &self.source {
            Source::File => Duration::MAX,
            Source::Url { max_age, .. } => (*max_age / 4).min(Duration::from_secs(30)),
        }
    }

    /// Whether a background refresh is due: keys from `jwks_url` more than
    /// half their `jwks_max_age` old, but not yet too old.
    pub fn refresh_due(&self) -> bool {
        match &self.source {
            Source::File => false,
            Source::Url { max_age, .. } => {
                // Once too old, the request that finds it so fetches in
                // the foreground (and waits for the answer).
                let age = self.ring().fetched.elapsed();
                age > *max_age / 2 && age <= *max_age
            }
        }
    }

    /// Fetches `jwks_url` again (blocking; at most once per
    /// [`JwtVerifier::min_refresh_interval`]) and swaps the keys in when
    /// they are usable. True when new keys are in place.
    pub fn refresh(&self) -> bool {
        let Source::Url {
            url, last_attempt, ..
        } = &self.source
        else {
            return false;
        };
        {
            let mut last = last_attempt.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() < self.min_refresh_interval() {
                return false;
            }
            *last = Instant::now();
        }
        let fetched = super::fetch::fetch_jwks(url, FETCH_TIMEOUT).and_then(|j| keys_of(&j, url));
        match fetched {
            Ok(keys) => {
                *self.ring.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(KeyRing {
                    keys,
                    fetched: Instant::now(),
                });
                true
            }
            Err(e) => {
                tracing::warn!(url = %url, error = %e, "cannot refresh the JWKS; the last keys stay in use until jwks_max_age");
                false
            }
        }
    }
}

fn refusal(kind: &jsonwebtoken::errors::ErrorKind) -> String {
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
