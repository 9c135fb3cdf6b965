"""A small upstream MCP server (Python SDK, mcp 2.3.0) for what real servers
cannot show on demand. Run by tests/upstream.rs through toolgate:

    python fake_upstream.py STATE_DIR

- `echo(text)` returns the text (its description is read from
  STATE_DIR/description when that file exists: a "rug pull" is a changed
  file between two starts);
- `structured(text)` returns the text as structured content too;
- `slow(steps)` reports progress once per step;
- `crash()` exits the process (toolgate restarts it);
- `sleep(seconds)` sleeps; when cancelled it writes STATE_DIR/cancelled.
- `shout(text)` logs the text (`notifications/message`, info) and returns "ok";
- resources `fake://notes/today` (text) and `fake://notes/raw` (a blob),
  both holding the text in STATE_DIR/notes (a fake secret, in the tests),
  and a prompt `recall(topic)` that says the topic.
Every start appends `start PID` to STATE_DIR/starts.

    python fake_upstream.py STATE_DIR --http PORT

serves the same over Streamable HTTP on 127.0.0.1:PORT (/mcp), and writes
the `Authorization` header of each request to STATE_DIR/auth (and a line
to STATE_DIR/sessions for each request that opens a session). It runs the
server as a child and starts it again 2 s after it exits (so `crash()`
shows an HTTP server going away mid-session and coming back). With
`--tls` it serves HTTPS with a self-signed certificate made at start (which
toolgate must refuse).
"""

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

STATE = sys.argv[1]
HTTP_PORT = int(sys.argv[3]) if sys.argv[2:3] == ["--http"] else None

if HTTP_PORT is not None and "--once" not in sys.argv:
    import subprocess
    import time

    while True:
        subprocess.run([sys.executable, *sys.argv, "--once"])
        time.sleep(2)


def state_file(name):
    return os.path.join(STATE, name)


with open(state_file("starts"), "a") as f:
    f.write(f"start {os.getpid()}\n")

description = "Echo the text back."
if os.path.exists(state_file("description")):
    with open(state_file("description")) as f:
        description = f.read().strip()

server = MCPServer("fake-upstream")


@server.tool(description=description)
def echo(text: str) -> str:
    return text


@server.tool(description="Return the text as structured content.")
def structured(text: str) -> dict:
    return {"said": text}


@server.tool(description="Report progress once per step.")
async def slow(steps: int, ctx: Context) -> str:
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await anyio.sleep(0.1)
    return f"done after {steps} steps"


@server.tool(description="Exit the server process.")
def crash() -> str:
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(description="Sleep for a while.")
async def sleep(seconds: float) -> str:
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with open(state_file("cancelled"), "w") as f:
            f.write("cancelled\n")
        raise
    return "slept"


@server.tool(description="Log the text.")
async def shout(text: str, ctx: Context) -> str:
    await ctx.info(f"shouted {text}")
    return "ok"


def notes():
    try:
        with open(state_file("notes")) as f:
            return f.read()
    except FileNotFoundError:
        return "no notes"


@server.resource("fake://notes/today", mime_type="text/plain")
def notes_today() -> str:
    return notes()


@server.resource("fake://notes/raw", mime_type="application/octet-stream")
def notes_raw() -> bytes:
    return notes().encode()


@server.prompt(description="Recall a topic.")
def recall(topic: str) -> str:
    return f"Recall everything about {topic}."


def self_signed():
    """A self-signed certificate for 127.0.0.1, as uvicorn's ssl options."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    paths = {"ssl_certfile": state_file("cert.pem"), "ssl_keyfile": state_file("key.pem")}
    with open(paths["ssl_certfile"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["ssl_keyfile"], "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return paths


def recording_auth(app):
    """The ASGI app, writing each request's Authorization header down."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if b"authorization" in headers:
                with open(state_file("auth"), "w") as f:
                    f.write(headers[b"authorization"].decode())
            if scope["method"] == "POST" and b"mcp-session-id" not in headers:
                with open(state_file("sessions"), "a") as f:
                    f.write("session\n")
            if scope["method"] == "POST":
                # A request that mentions "leak-header" gets an error page
                # that shows its Authorization header (as a careless server
                # might): toolgate must not pass it on.
                chunks, more = [], True
                while more:
                    message = await receive()
                    chunks.append(message.get("body", b""))
                    more = message.get("more_body", False)
                body = b"".join(chunks)
                if b"leak-header" in body:
                    await send({"type": "http.response.start", "status": 500,
                                "headers": [(b"content-type", b"text/plain")]})
                    await send({"type": "http.response.body",
                                "body": b"server error; the request had Authorization: "
                                + headers.get(b"authorization", b"")})
                    return
                replayed = False

                async def replay():
                    nonlocal replayed
                    if not replayed:
                        replayed = True
                        return {"type": "http.request", "body": body, "more_body": False}
                    return await receive()

                await app(scope, replay, send)
                return
        await app(scope, receive, send)

    return wrapped


if __name__ == "__main__":
    if HTTP_PORT is None:
        server.run()
    else:
        import uvicorn

        tls = {}
        if "--tls" in sys.argv:
            tls = self_signed()
        uvicorn.run(
            recording_auth(server.streamable_http_app(host="127.0.0.1")),
            host="127.0.0.1",
            port=HTTP_PORT,
            log_level="warning",
            **tls,
        )
