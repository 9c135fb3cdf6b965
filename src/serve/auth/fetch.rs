//! Fetching a JWKS from `auth.jwt.jwks_url`: one HTTP/1.0 GET over a plain
//! TCP connection (so the answer is never chunked), with a time limit and a
//! size limit, checked like a `jwks_file`. `http://` only: this version has
//! no TLS client (see SECURITY.md).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A key set is a few KB; more is refused.
const MAX_JWKS_BYTES: u64 = 1 << 20;

/// GETs `url` (`http://HOST[:PORT]/PATH`) and returns the checked JWKS.
pub fn fetch_jwks(url: &str, timeout: Duration) -> Result<Value, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("`{url}` is not an http:// URL"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let deadline = Instant::now() + timeout;
    let addrs = with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{authority}`: {e}"))?;
    let mut last = format!("`{authority}` has no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last)?;
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    stream
        .set_read_timeout(Some(left))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(left))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {authority}\r\nAccept: application/json\r\nUser-Agent: toolgate/{}\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("cannot send the request: {e}"))?;
    let mut response = Vec::new();
    stream
        .take(MAX_JWKS_BYTES + 16 * 1024)
        .read_to_end(&mut response)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer is not HTTP")?;
    let head = String::from_utf8_lossy(&response[..split]);
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("");
    if status != "200" {
        return Err(format!("the server answered {status}, not 200"));
    }
    let body = &response[split + 4..];
    if body.len() as u64 > MAX_JWKS_BYTES {
        return Err(format!("the JWKS is over {MAX_JWKS_BYTES} bytes"));
    }
    let jwks: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    crate::policy::auth::check_jwks(&jwks)?;
    Ok(jwks)
}
