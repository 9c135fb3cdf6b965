//! The Streamable HTTP transport to a `url` upstream: an HTTP client
//! (reqwest on rustls with the `ring` provider, certificates checked
//! against the webpki roots compiled in), the manifest's `headers` with
//! `${env:VAR}` substituted and marked sensitive, and rmcp's Streamable
//! HTTP client transport. `connect.rs` completes the handshake over it,
//! and everything above (listing, calls, pass-through, supervision) is the
//! stdio code.
//!
//! Header values are secrets: they go into the requests only, never into
//! an error, a log line or `/status`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientRequest, PingRequest};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::SseRetryPolicy;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ClientHandler;
use tokio::sync::Notify;

use crate::config::server::ServerTable;

/// How often an idle connection is checked with `ping`.
const PING_EVERY: Duration = Duration::from_secs(5);
/// How long a `ping` may take before the server counts as gone.
const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a TCP (and TLS) connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Resumes a broken SSE stream twice, quickly; after that the request
/// fails and the supervisor reconnects with its own backoff (rmcp's
/// default retries forever, which would leave a call hanging).
#[derive(Debug)]
struct FewRetries;

impl SseRetryPolicy for FewRetries {
    fn retry(&self, current_times: usize) -> Option<Duration> {
        (current_times < 2).then_some(Duration::from_millis(250))
    }
}

/// The HTTP client: rustls with `ring`, webpki roots, no redirects (a
/// redirect would replay the headers elsewhere), no proxy from the
/// environment, no idle pooling (as rmcp's own default client).
fn client() -> Result<reqwest::Client, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .pool_max_idle_per_host(0)
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot make the HTTP client: {e}"))
}

/// The manifest's headers, substituted and marked sensitive.
fn headers(
    table: &ServerTable,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    let mut out = HashMap::new();
    for (name, value) in table.header_values().map_err(|e| e.to_string())? {
        let key = reqwest::header::HeaderName::try_from(name.as_str())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let mut v = reqwest::header::HeaderValue::try_from(value)
            .map_err(|_| format!("the value of header `{name}` is not a valid header value"))?;
        v.set_sensitive(true);
        out.insert(key, v);
    }
    Ok(out)
}

/// The Streamable HTTP client transport to `url`, with the manifest's
/// headers (the caller completes the MCP handshake over it).
pub fn transport(
    table: &ServerTable,
    url: &str,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(headers(table)?)
        .reinit_on_expired_session(false);
    config.retry_config = Arc::new(FewRetries);
    Ok(StreamableHttpClientTransport::with_client(
        client()?,
        config,
    ))
}

/// Why the handshake failed, with the HTTP client's cause (a refused
/// connection, a certificate that does not verify) that rmcp's message
/// leaves out.
pub fn handshake_error(e: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    if let rmcp::service::ClientInitializeError::TransportError { error, .. } = e {
        if let Some(StreamableHttpError::Client(client)) = error
            .error
            .downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return causes(client);
        }
    }
    causes(e)
}

/// An error with its causes (`a: b: c`; reqwest hides the cause of "error
/// sending request", such as a refused connection or a bad certificate).
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let t = c.to_string();
        if !text.contains(&t) {
            text = format!("{text}: {t}");
        }
        cause = c.source();
    }
    text
}

/// Resolves when an HTTP connection is over: the transport closed, a
/// request failed at the transport level (`broken` was signalled: `None`),
/// or the server stopped answering `ping`. Returns why.
pub async fn ended<H: ClientHandler>(
    service: &RunningService<RoleClient, H>,
    broken: &Notify,
) -> Option<String> {
    let peer: Peer<RoleClient> = service.peer().clone();
    loop {
        tokio::select! {
            _ = broken.notified() => return None,
            _ = tokio::time::sleep(PING_EVERY) => {}
        }
        if service.is_closed() {
            return Some("the connection closed".to_string());
        }
        let ping = peer.send_request(ClientRequest::PingRequest(PingRequest::default()));
        match tokio::time::timeout(PING_TIMEOUT, ping).await {
            Err(_) => {
                return Some(format!(
                    "no answer to ping within {}s",
                    PING_TIMEOUT.as_secs()
                ))
            }
            // The server answered (an error answer is still an answer).
            Ok(Ok(_)) | Ok(Err(rmcp::ServiceError::McpError(_))) => {}
            Ok(Err(e)) => return Some(format!("ping failed: {e}")),
        }
    }
}
