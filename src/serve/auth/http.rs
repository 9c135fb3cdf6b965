//! The HTTP side of authentication: a middleware in front of every route
//! but `/healthz` and the metadata document, the 401 answer the MCP
//! authorization specification describes, and OAuth 2.0 Protected Resource
//! Metadata (RFC 9728) at `/.well-known/oauth-protected-resource`.
//!
//! A request with a valid token carries its [`Identity`] in the request's
//! extensions; the MCP handler and `/v1/eval` read it from there. Without
//! `auth:` in the policy nothing is checked. With `auth:` but
//! `required: false`, a request without `Authorization` is served
//! anonymously, and one with a bad token is still refused (a caller that
//! presents a credential expects it to count).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{Authenticator, Refused};
use crate::policy::auth::Identity;
use crate::serve::Gateway;

/// Where the Protected Resource Metadata is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Checks the caller of every request but `/healthz` and the metadata.
pub async fn check_identity(
    State(gateway): State<Arc<Gateway>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path == "/healthz" || path == METADATA_PATH || path.starts_with("/.well-known/") {
        return next.run(request).await;
    }
    let Some(auth) = gateway.authenticator() else {
        return next.run(request).await;
    };
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|h| h.as_bytes().to_vec());
    match auth.authenticate_refreshing(header).await {
        Ok(identity) => {
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        Err(Refused::Missing) if !auth.required() => next.run(request).await,
        Err(refused) => {
            if let Refused::Invalid(why) = &refused {
                tracing::info!(path = %request.uri().path(), reason = %why, "request refused: invalid token");
            }
            unauthorized(request.headers(), &auth, &refused)
        }
    }
}

/// The identity the middleware attached to a request, if any.
pub fn identity_of(extensions: &axum::http::Extensions) -> Option<Identity> {
    extensions.get::<Identity>().cloned()
}

/// 401 with `WWW-Authenticate: Bearer …, resource_metadata="…"` (and
/// `error="invalid_token"` when a token was presented).
fn unauthorized(headers: &HeaderMap, auth: &Authenticator, refused: &Refused) -> Response {
    let metadata = format!("{}{METADATA_PATH}", base_url(headers, auth));
    let mut challenge = format!("Bearer realm=\"toolgate\", resource_metadata=\"{metadata}\"");
    let scopes = &auth.config().resource_metadata.scopes_supported;
    if !scopes.is_empty() {
        challenge.push_str(&format!(", scope=\"{}\"", quoted(&scopes.join(" "))));
    }
    let body = match refused {
        Refused::Missing => {
            "Unauthorized: this gateway needs `Authorization: Bearer TOKEN`\n".to_string()
        }
        Refused::Invalid(why) => {
            challenge.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quoted(why)
            ));
            format!("Unauthorized: {why}\n")
        }
    };
    let value = HeaderValue::from_str(&challenge)
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer realm=\"toolgate\""));
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, value)],
        body,
    )
        .into_response()
}

/// `GET /.well-known/oauth-protected-resource`: the metadata document, or
/// 404 when the policy has no `auth:`.
pub async fn metadata(State(gateway): State<Arc<Gateway>>, headers: HeaderMap) -> Response {
    let Some(auth) = gateway.authenticator() else {
        return (StatusCode::NOT_FOUND, "no authentication is configured\n").into_response();
    };
    let rm = &auth.config().resource_metadata;
    let resource = rm
        .resource
        .clone()
        .unwrap_or_else(|| format!("{}/mcp", base_url(&headers, &auth)));
    let mut doc = serde_json::json!({
        "resource": resource,
        "authorization_servers": rm.authorization_servers,
        "bearer_methods_supported": ["header"],
        "resource_name": "toolgate",
    });
    if !rm.scopes_supported.is_empty() {
        doc["scopes_supported"] = serde_json::json!(rm.scopes_supported);
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        doc.to_string(),
    )
        .into_response()
}

/// `scheme://host[:port]` of the gateway: the configured resource's origin,
/// or `http://` and the request's `Host` (checked to be a host name).
fn base_url(headers: &HeaderMap, auth: &Authenticator) -> String {
    if let Some(resource) = &auth.config().resource_metadata.resource {
        if let Some((scheme, rest)) = resource.split_once("://") {
            let host = rest.split('/').next().unwrap_or("");
            return format!("{scheme}://{host}");
        }
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("localhost");
    format!("http://{host}")
}

/// Text safe inside a quoted header parameter.
fn quoted(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}
