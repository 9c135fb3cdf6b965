//! MCP over Streamable HTTP, with the operations endpoints on the same
//! listener: `/mcp` (rmcp's Streamable HTTP service, both protocol eras),
//! `/healthz`, `/status`, `/metrics`, `/v1/eval`.
//!
//! It is careful about who can reach it:
//! - it binds loopback addresses only, unless the operator says
//!   `--allow-remote`, which needs `auth.required: true` in the policy
//!   (bearer tokens, [`super::auth`]) unless `--insecure-no-auth` says
//!   otherwise, loudly;
//! - with `auth:` in the policy, every route but `/healthz` and the
//!   Protected Resource Metadata needs a valid token (401 with
//!   `WWW-Authenticate` otherwise);
//! - every request's `Origin` is checked: absent (non-browser clients) and
//!   loopback origins pass, listed origins pass, anything else gets 403 — a
//!   web page in the user's browser must not drive the user's tools (DNS
//!   rebinding, cross-site requests);
//! - rmcp checks `Host` against loopback names while bound to loopback.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::approve::PendingApprovals;
use super::mcp::McpServer;
use super::{admin, auth, guard, Gateway};

/// How the HTTP server listens.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// The address to bind (port 0 picks a free port).
    pub addr: SocketAddr,
    /// Allow a non-loopback address.
    pub allow_remote: bool,
    /// Browser origins allowed besides loopback ones, e.g.
    /// `https://agent.example.com` (scheme, host and port must match).
    pub allowed_origins: Vec<String>,
    /// Serve other hosts (`allow_remote`) without `auth.required` in the
    /// policy. Anyone who reaches the port can then call every tool.
    pub insecure_no_auth: bool,
}

/// Refuses a non-loopback address unless remote access was asked for.
pub fn check_bind(options: &HttpOptions) -> Result<(), String> {
    if options.addr.ip().is_loopback() || options.allow_remote {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {}: it is not a loopback address. Bind 127.0.0.1 \
         (or [::1]), or pass --allow-remote to serve other hosts (the policy must \
         then set `auth.required: true`, see `toolgate auth hash-token`).",
        options.addr
    ))
}

/// Which `Origin` headers may reach the server.
#[derive(Debug)]
struct OriginPolicy {
    allowed: Vec<String>,
}

impl OriginPolicy {
    fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.allowed.contains(&origin) {
            return true;
        }
        is_loopback_origin(&origin)
    }
}

/// `http(s)://localhost`, `127.x.y.z` or `[::1]`, any port.
fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        match v6.split_once(']') {
            Some((host, port)) if port.is_empty() || is_port(port) => host,
            _ => return false,
        }
    } else {
        match rest.split_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return false,
            None => rest,
        }
    };
    if host == "localhost" {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

fn is_port(s: &str) -> bool {
    s.strip_prefix(':').unwrap_or(s).parse::<u16>().is_ok()
}

async fn check_origin(
    State(policy): State<Arc<OriginPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|o| policy.allows(o));
        if !allowed {
            tracing::warn!(origin = ?origin, "request from a foreign origin refused");
            return (
                StatusCode::FORBIDDEN,
                "Forbidden: this Origin may not use toolgate (only loopback origins and \
                 those given with --allow-origin may)\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// The whole HTTP application: `/mcp` plus the operations endpoints, behind
/// the Origin check. `shutdown` ends the MCP sessions.
pub fn app(gateway: Arc<Gateway>, options: &HttpOptions, shutdown: CancellationToken) -> Router {
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    if options.allow_remote {
        // Remote clients name the server by its public host name, which only
        // the operator knows; Origin is still checked below.
        config = config.disable_allowed_hosts();
    }
    let factory_gateway = gateway.clone();
    // One store of stateless-era approval questions: the answer comes back
    // in a later request, served by another handler.
    let approvals = Arc::new(PendingApprovals::default());
    let mcp = StreamableHttpService::new(
        move || {
            Ok(McpServer::with_approvals(
                factory_gateway.clone(),
                approvals.clone(),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let origins = Arc::new(OriginPolicy {
        allowed: options
            .allowed_origins
            .iter()
            .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
            .collect(),
    });
    let metadata = Router::new()
        .route(auth::http::METADATA_PATH, get(auth::http::metadata))
        .route(
            &format!("{}/mcp", auth::http::METADATA_PATH),
            get(auth::http::metadata),
        )
        .with_state(gateway.clone());
    Router::new()
        .route_service("/mcp", mcp)
        // Only /mcp: what is not a JSON-RPC message gets a JSON-RPC error.
        .route_layer(middleware::from_fn(guard::check_body))
        .merge(admin::router(gateway.clone()))
        .merge(metadata)
        // Who is calling, before any route runs (the Origin check first).
        .layer(middleware::from_fn_with_state(
            gateway,
            auth::http::check_identity,
        ))
        .layer(middleware::from_fn_with_state(origins, check_origin))
}

/// Serves until `shutdown` resolves. Prints the address it listens on to
/// stderr (`toolgate: serving MCP on http://ADDR/mcp`), which matters when
/// the port was 0.
pub async fn serve_http(
    gateway: Arc<Gateway>,
    options: HttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    check_bind(&options)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", options.addr))?;
    let sessions = CancellationToken::new();
    let app = app(gateway, &options, sessions.child_token());
    eprintln!("toolgate: serving MCP on http://{local}/mcp (status: http://{local}/status)");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            // Open SSE streams end with their sessions, so shutdown is not
            // held up by idle clients.
            sessions.cancel();
        })
        .await
        .map_err(|e| format!("HTTP server on {local}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, allow_remote: bool) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            allow_remote,
            allowed_origins: vec![],
            insecure_no_auth: false,
        }
    }

    #[test]
    fn only_loopback_binds_without_allow_remote() {
        assert!(check_bind(&options("127.0.0.1:0", false)).is_ok());
        assert!(check_bind(&options("[::1]:8080", false)).is_ok());
        let err = check_bind(&options("0.0.0.0:8080", false)).unwrap_err();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_bind(&options("0.0.0.0:8080", true)).is_ok());
    }

    #[test]
    fn loopback_and_listed_origins_pass() {
        let p = OriginPolicy {
            allowed: vec!["https://agent.example.com".into()],
        };
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
            "https://agent.example.com/",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for bad in [
            "https://evil.example.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com",
            "null",
            "file://",
            "http://localhost:notaport",
            "https://agent.example.com:8443",
        ] {
            assert!(!p.allows(bad), "{bad}");
        }
    }
}
