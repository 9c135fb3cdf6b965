//! Operations endpoints, served beside `/mcp` with `--http`:
//!
//! - `GET /healthz`: `ok` while the gateway serves;
//! - `GET /status`: the active policy (version hash, when loaded, files,
//!   active tools) and the last reload error with `FILE:LINE:COL` — a
//!   rejected policy is never shown as active;
//! - `GET /metrics`: Prometheus text;
//! - `POST /v1/eval`: `{"name", "arguments"}` in, exactly what `toolgate
//!   eval` prints out — so any agent, not only MCP clients, can ask
//!   (as the authenticated caller: its profile, its scoped rules).
//!
//! With `auth:` in the policy, all but `/healthz` need a valid token
//! ([`super::auth::http`]).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::Router;

use super::Gateway;
use crate::policy::auth::Identity;
use crate::policy::ToolCall;

/// The operations routes, to be merged into the HTTP server's router.
pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .route("/v1/eval", post(eval))
        .with_state(gateway)
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn status(State(gateway): State<Arc<Gateway>>) -> Response {
    let body = serde_json::to_string_pretty(&gateway.status()).unwrap_or_default();
    json_response(StatusCode::OK, body)
}

async fn metrics(State(gateway): State<Arc<Gateway>>) -> Response {
    let body = gateway.metrics.render(&gateway.policy().version);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        body,
    )
        .into_response()
}

/// Body limit for `/v1/eval`: a call's arguments, not a file upload.
const MAX_EVAL_BODY: usize = 1 << 20;

async fn eval(
    State(gateway): State<Arc<Gateway>>,
    identity: Option<Extension<Identity>>,
    body: Bytes,
) -> Response {
    let identity = identity.map(|Extension(i)| i);
    let error = |status: StatusCode, message: String| {
        json_response(status, serde_json::json!({ "error": message }).to_string())
    };
    if body.len() > MAX_EVAL_BODY {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the call is over {MAX_EVAL_BODY} bytes"),
        );
    }
    let call: ToolCall = match serde_json::from_slice(&body) {
        Ok(c) => c,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("invalid call: {e}; expected {{\"name\": …, \"arguments\": {{…}}}}"),
            )
        }
    };
    if !call.arguments.is_object() {
        return error(
            StatusCode::BAD_REQUEST,
            "`arguments` must be a JSON object".into(),
        );
    }
    // Deciding resolves paths on disk: keep it off the async workers.
    let verdict =
        tokio::task::spawn_blocking(move || gateway.eval_as(&call, identity.as_ref())).await;
    match verdict {
        Ok(v) => json_response(
            StatusCode::OK,
            serde_json::to_string(&v).unwrap_or_default(),
        ),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the policy failed while deciding; treat the call as denied".into(),
        ),
    }
}
