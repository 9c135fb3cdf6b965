//! `auth:` across layers: tokens are unioned (ids unique), `required` holds
//! when any layer says so (the strictest wins), one layer may configure
//! `jwt`, the last `resource_metadata` wins. Every problem is reported at
//! its `FILE:LINE:COL`: a malformed hash, a profile that does not exist, a
//! JWKS that cannot be read.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::Value;

use super::err_at;
use crate::config::diagnostics::Diagnostics;
use crate::config::policy_file::parse_duration;
use crate::config::PolicyLayer;
use crate::policy::auth::{
    check_jwks, parse_sha256, AuthConfig, JwtConfig, ResourceMetadata, StaticToken,
};

/// A JWKS file bigger than this is refused: key sets are a few KB.
const MAX_JWKS_BYTES: u64 = 1 << 20;

/// The compiled section (`None` when no layer has `auth:`) and the texts
/// that feed the policy's version hash (the JWKS files).
pub(super) fn compile(
    layers: &[PolicyLayer],
    profiles: &BTreeMap<String, Vec<String>>,
    diags: &mut Diagnostics,
) -> (Option<AuthConfig>, Vec<String>) {
    let mut out = AuthConfig {
        profiles: profiles.keys().cloned().collect(),
        ..AuthConfig::default()
    };
    let mut sources = Vec::new();
    let mut any = false;
    let mut ids = HashSet::new();
    let mut jwt_layer: Option<String> = None;
    for layer in layers {
        let Some(auth) = &layer.policy.auth else {
            continue;
        };
        any = true;
        out.required |= auth.required.unwrap_or(false);
        for (i, t) in auth.tokens.iter().enumerate() {
            let at = format!("auth.tokens.{i}");
            if t.id.trim().is_empty() {
                err_at(diags, layer, &format!("{at}.id"), "token id is empty", "give the token a short id such as `ci-bot`: logs, metrics and `rules[].identities` use it");
                continue;
            }
            if !ids.insert(t.id.clone()) {
                err_at(
                    diags,
                    layer,
                    &format!("{at}.id"),
                    format!("duplicate token id `{}`", t.id),
                    "give every token its own id",
                );
            }
            let Some(sha256) = parse_sha256(&t.sha256) else {
                err_at(
                    diags,
                    layer,
                    &format!("{at}.sha256"),
                    format!("token `{}`: `sha256` must be 64 hex digits (the SHA-256 of the token), got {} characters", t.id, t.sha256.trim().len()),
                    "run `toolgate auth hash-token` with the token on stdin and paste the line it prints",
                );
                continue;
            };
            if let Some(p) = &t.profile {
                let at = format!("{at}.profile");
                check_profile(diags, layer, &at, &t.id, p, profiles);
            }
            out.tokens.push(StaticToken {
                id: t.id.clone(),
                sha256,
                profile: t.profile.clone(),
            });
        }
        if let Some(jwt) = &auth.jwt {
            if let Some(first) = &jwt_layer {
                err_at(
                    diags,
                    layer,
                    "auth.jwt",
                    format!("`auth.jwt` is already configured in {first}"),
                    "configure one identity provider, in one policy file",
                );
                continue;
            }
            jwt_layer = Some(layer.file.name.clone());
            for (field, value) in [("issuer", &jwt.issuer), ("audience", &jwt.audience)] {
                if value.trim().is_empty() {
                    err_at(
                        diags,
                        layer,
                        &format!("auth.jwt.{field}"),
                        format!("`auth.jwt.{field}` is empty"),
                        "write the value your identity provider puts in its tokens",
                    );
                }
            }
            let max_age = match jwt.jwks_max_age.as_deref().map(parse_duration) {
                None => std::time::Duration::from_secs(3600),
                Some(Ok(d)) => d,
                Some(Err(e)) => {
                    err_at(
                        diags,
                        layer,
                        "auth.jwt.jwks_max_age",
                        e,
                        "write a duration such as `1h` or `10m`",
                    );
                    continue;
                }
            };
            let jwt_config = |jwks: Value, source: String, url: Option<String>| JwtConfig {
                issuer: jwt.issuer.clone(),
                audience: jwt.audience.clone(),
                jwks,
                jwks_source: source,
                jwks_url: url,
                jwks_max_age: max_age,
                identity_claim: jwt.identity_claim.clone().unwrap_or_else(|| "sub".into()),
                profile_claim: jwt.profile_claim.clone(),
                leeway_seconds: jwt.leeway_seconds.unwrap_or(30),
            };
            match (&jwt.jwks_file, &jwt.jwks_url) {
                (None, None) => err_at(diags, layer, "auth.jwt", "`auth.jwt` has neither `jwks_file` nor `jwks_url`", "name the identity provider's JWKS (its public keys): a file in `jwks_file`, or its `http://` address in `jwks_url`"),
                (Some(_), Some(_)) => err_at(diags, layer, "auth.jwt.jwks_url", "`auth.jwt` has both `jwks_file` and `jwks_url`", "keep one of them"),
                (None, Some(url)) => match check_url(url) {
                    Ok(()) => {
                        sources.push(url.clone());
                        out.jwt = Some(jwt_config(Value::Null, url.clone(), Some(url.clone())));
                    }
                    Err((message, help)) => err_at(diags, layer, "auth.jwt.jwks_url", message, help),
                },
                (Some(file), None) => {
                    let base = layer
                        .file
                        .path
                        .as_deref()
                        .and_then(Path::parent)
                        .unwrap_or(Path::new("."));
                    let path = base.join(file);
                    match read_jwks(&path) {
                        Ok((text, jwks)) => {
                            sources.push(text);
                            out.jwt = Some(jwt_config(jwks, path.display().to_string(), None));
                        }
                        Err(e) => err_at(
                            diags,
                            layer,
                            "auth.jwt.jwks_file",
                            format!("cannot use the JWKS `{}`: {e}", path.display()),
                            "the path is relative to this policy file; the file must be a JSON Web Key Set: {\"keys\": [{\"kty\": \"RSA\", \"kid\": …, \"n\": …, \"e\": …}]}",
                        ),
                    }
                }
            }
        }
        if let Some(rm) = &auth.resource_metadata {
            out.resource_metadata = ResourceMetadata {
                resource: rm.resource.clone(),
                authorization_servers: rm.authorization_servers.clone(),
                scopes_supported: rm.scopes_supported.clone(),
            };
        }
    }
    let last = layers.iter().rev().find(|l| l.policy.auth.is_some());
    if let (true, false, Some(layer)) = (out.required, out.has_credentials(), last) {
        if diags.is_empty() {
            err_at(
                diags,
                layer,
                "auth.required",
                "`auth.required` is true but no token or `jwt` is configured, so nobody could call",
                "add `auth.tokens` (see `toolgate auth hash-token`) or `auth.jwt`",
            );
        }
    }
    (any.then_some(out), sources)
}

fn check_profile(
    diags: &mut Diagnostics,
    layer: &PolicyLayer,
    at: &str,
    token: &str,
    profile: &str,
    profiles: &BTreeMap<String, Vec<String>>,
) {
    if profiles.contains_key(profile) {
        return;
    }
    let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
    let help = match crate::config::diagnostics::did_you_mean(profile, &known) {
        Some(s) => format!("did you mean `{s}`?"),
        None if known.is_empty() => "define it under `tools.profiles`".to_string(),
        None => format!(
            "use one of: {}, or define it under `tools.profiles`",
            known.join(", ")
        ),
    };
    err_at(
        diags,
        layer,
        at,
        format!("token `{token}`: unknown profile `{profile}`"),
        help,
    );
}

/// Reads and checks a JWKS file: a JSON object whose `keys` is a non-empty
/// array of RSA or EC public keys, each with a `kid`.
fn read_jwks(path: &Path) -> Result<(String, Value), String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_JWKS_BYTES {
        return Err(format!("it is over {MAX_JWKS_BYTES} bytes"));
    }
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let jwks: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    check_jwks(&jwks)?;
    Ok((text, jwks))
}

/// `jwks_url` must be `http://HOST[:PORT]/…` in this version.
fn check_url(url: &str) -> Result<(), (String, String)> {
    if url.starts_with("https://") {
        return Err((
            format!("`jwks_url` `{url}`: https is not supported by this version"),
            "save the JWKS to a file and use `jwks_file` (reload when the provider rotates its keys), or fetch it through a local `http://` proxy".into(),
        ));
    }
    let host = url
        .strip_prefix("http://")
        .map(|rest| rest.split('/').next().unwrap_or(""))
        .unwrap_or("");
    if host.is_empty() || host.contains('@') || host.contains(char::is_whitespace) {
        return Err((
            format!("`jwks_url` `{url}` is not an `http://HOST[:PORT]/PATH` URL"),
            "write e.g. `http://idp.internal:8080/.well-known/jwks.json`".into(),
        ));
    }
    Ok(())
}
