//! A guard in front of rmcp's Streamable HTTP endpoint: a POST body that
//! is not a JSON-RPC message gets a JSON-RPC error.
//!
//! rmcp answers such bodies itself, but with `415 Unsupported Media Type`
//! and plain text (`fail to deserialize request body …`) for garbage, for
//! JSON nested past serde_json's limit and for a batch array, and with
//! plain text for an oversized body. The Streamable HTTP transport asks for
//! an HTTP error status whose body may be a JSON-RPC error without an id;
//! clients parse that, not rmcp's prose. So this guard reads the body (up
//! to rmcp's own limit), and answers what is not a JSON-RPC message with
//! `400` (`413` when too large) and a JSON-RPC error — the request's id
//! when it has one. Everything else goes on to rmcp unchanged. (Over stdio
//! rmcp already drops unparsable lines and answers wrong shapes with
//! -32600; `tests/mcp_robustness.rs` checks both transports.)

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// The largest body passed on: rmcp's own default limit.
pub const MAX_BODY_BYTES: usize = 4 << 20;

/// JSON-RPC's code for input that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
const INVALID_REQUEST: i64 = -32600;

/// Why a body was refused: status, JSON-RPC code, message, the id if known.
type Rejection = (StatusCode, i64, String, Value);

/// The middleware: passes JSON-RPC messages on, answers anything else.
pub async fn check_body(request: Request, next: Next) -> Response {
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        });
    // Other methods and media types are rmcp's to answer (405, 415).
    if request.method() != Method::POST || !is_json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return reject((
                StatusCode::PAYLOAD_TOO_LARGE,
                INVALID_REQUEST,
                format!(
                    "Invalid Request: the body is larger than {} MiB, or could not be read",
                    MAX_BODY_BYTES >> 20
                ),
                Value::Null,
            ))
        }
    };
    match inspect(&bytes) {
        Ok(()) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(rejection) => reject(rejection),
    }
}

/// Checks that `bytes` is one JSON-RPC message: an object with `jsonrpc:
/// "2.0"` and a method, result or error. Parsing stops at serde_json's
/// nesting limit (128), which is what rmcp itself would choke on.
fn inspect(bytes: &[u8]) -> Result<(), Rejection> {
    let bad =
        |code: i64, message: String, id: Value| Err((StatusCode::BAD_REQUEST, code, message, id));
    let message: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return bad(PARSE_ERROR, format!("Parse error: {e}"), Value::Null),
    };
    let Value::Object(map) = &message else {
        return bad(
            INVALID_REQUEST,
            "Invalid Request: a message must be one JSON object (batches are not supported)"
                .to_string(),
            Value::Null,
        );
    };
    let id = match map.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return bad(
            INVALID_REQUEST,
            "Invalid Request: `jsonrpc` must be \"2.0\"".to_string(),
            id,
        );
    }
    if !["method", "result", "error"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return bad(
            INVALID_REQUEST,
            "Invalid Request: a message needs a `method` (or a `result` or `error`)".to_string(),
            id,
        );
    }
    Ok(())
}

fn reject((status, code, message, id): Rejection) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &[u8]) -> Option<i64> {
        inspect(bytes).err().map(|(_, code, _, _)| code)
    }

    #[test]
    fn messages_pass_and_the_rest_is_named() {
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(b"garbage{"), Some(PARSE_ERROR));
        assert_eq!(code(b"\xff\xfe"), Some(PARSE_ERROR));
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(code(deep.as_bytes()), Some(PARSE_ERROR));
        let deep_params = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}1{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(code(deep_params.as_bytes()), Some(PARSE_ERROR));
        assert_eq!(code(b"[1, 2]"), Some(INVALID_REQUEST));
        assert_eq!(code(br#"{"id": 3, "method": "x"}"#), Some(INVALID_REQUEST));
        let (_, _, _, id) = inspect(br#"{"jsonrpc": "1.0", "id": 3, "method": "x"}"#).unwrap_err();
        assert_eq!(id, json!(3));
        assert_eq!(code(br#"{"jsonrpc":"2.0","id":4}"#), Some(INVALID_REQUEST));
    }
}
