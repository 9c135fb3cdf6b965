//! Serving to the end: start the gateway, hot reload, and one MCP transport.
//!
//! The command line only parses flags into [`ServeOptions`]; everything else
//! is here so that tests and embedders run exactly what the binary runs.

use std::sync::Arc;

use super::http::{serve_http, HttpOptions};
use super::mcp::serve_stdio;
use super::{reload, Gateway, GatewayConfig};

/// Which transport `serve` speaks.
#[derive(Clone, Debug)]
pub enum Transport {
    /// MCP on stdin/stdout (the default).
    Stdio,
    /// MCP over Streamable HTTP at `/mcp`, with the operations endpoints.
    Http(HttpOptions),
}

/// Everything `toolgate serve` was asked for.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Policy, manifests, profile, workspace, decision log.
    pub gateway: GatewayConfig,
    /// The transport.
    pub transport: Transport,
    /// Reload on file changes and SIGHUP.
    pub watch: bool,
}

/// Why `serve` stopped early.
#[derive(Debug)]
pub enum ServeError {
    /// The configuration did not load or the address is not allowed: exit 2.
    Config(String),
    /// Serving failed after start (I/O, the transport closed badly): exit 1.
    Runtime(String),
}

/// Runs `serve` to the end: until stdin closes (stdio) or SIGINT/SIGTERM.
pub fn run(mut options: ServeOptions) -> Result<(), ServeError> {
    if let Transport::Http(http) = &options.transport {
        super::http::check_bind(http).map_err(ServeError::Config)?;
        if http.allow_remote && http.insecure_no_auth {
            eprintln!(
                "toolgate: WARNING: --insecure-no-auth: serving other hosts without requiring \
                 authentication. Anyone who can reach {} can call every tool.",
                http.addr
            );
        } else if http.allow_remote {
            options.gateway.require_auth = true;
        }
    }
    // Stdio serves one client over one pipe pair: on a single-threaded
    // runtime a call's hand-offs between tasks (read loop, handler, upstream
    // client, response writer) stay on one thread instead of waking another
    // worker for each. Blocking work still goes to the blocking pool.
    let mut builder = match &options.transport {
        Transport::Stdio => tokio::runtime::Builder::new_current_thread(),
        Transport::Http(_) => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| ServeError::Runtime(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(async {
        let gateway = Gateway::start_with_upstreams(options.gateway.clone())
            .await
            .map_err(ServeError::Config)?;
        let follow = gateway
            .upstreams()
            .map(|m| tokio::spawn(follow_upstreams(Arc::downgrade(&gateway), m.subscribe())));
        let result = serve(gateway.clone(), options).await;
        if let Some(task) = follow {
            task.abort();
        }
        // Shutdown kills every upstream's process group.
        if let Some(m) = gateway.upstreams() {
            m.shutdown();
        }
        result
    });
    // A read of stdin that never finishes must not hold the exit up.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}

async fn serve(gateway: Arc<Gateway>, options: ServeOptions) -> Result<(), ServeError> {
    // Held for the whole run: dropping it stops watching.
    let _reload = if options.watch {
        Some(
            reload::watch(gateway.clone())
                .map_err(|e| ServeError::Runtime(format!("cannot watch for changes: {e}")))?,
        )
    } else {
        None
    };
    match options.transport {
        Transport::Stdio => {
            tokio::select! {
                r = serve_stdio(gateway) => r.map_err(ServeError::Runtime),
                _ = shutdown_signal() => Ok(()),
            }
        }
        Transport::Http(http) => serve_http(gateway, http, shutdown_signal())
            .await
            .map_err(ServeError::Runtime),
    }
}

/// Compiles again each time an upstream server's tools or pins change, and
/// tells clients their tool list changed.
async fn follow_upstreams(
    gateway: std::sync::Weak<Gateway>,
    mut changed: tokio::sync::watch::Receiver<u64>,
) {
    changed.mark_unchanged();
    while changed.changed().await.is_ok() {
        let Some(g) = gateway.upgrade() else { return };
        let g2 = g.clone();
        let outcome = tokio::task::spawn_blocking(move || g2.reload()).await;
        if let Ok(super::ReloadOutcome::Rejected(d)) = &outcome {
            eprintln!(
                "toolgate: upstream tools changed, but the policy does not compile with them \
                 (the last good one stays active):\n{}",
                d.to_human()
            );
        }
        g.notify_tools_changed();
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            // Without a SIGTERM handler the default action still ends us.
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}
