"""Drives toolgate's authenticated Streamable HTTP endpoint with the official
Python MCP SDK (mcp 2.3.0), sending `Authorization: Bearer TOKEN`.

Run by tests/serve_auth.rs, which starts the server and asserts on the one
JSON object this prints:

    python client.py --url http://127.0.0.1:PORT/mcp --mode auto|legacy [--token TOKEN]

`tools` are the listed tool names; `bash` and `read` what calling them gave
(a result, or the JSON-RPC error code); `error` what failed before any of
that, as text; `statuses` every HTTP status the server answered with.

    python auth_client.py --make-jwts DIR

writes DIR/jwks.json (an RSA and an EC P-256 public key) and DIR/tokens.json
(JWTs signed with them, good and bad), with keys made on the fly by PyJWT and
cryptography (dependencies of the mcp SDK).
"""

import argparse
import json
import sys
import time

import anyio
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(client, name, args):
    try:
        r = await client.call_tool(name, args)
        return {"is_error": bool(r.is_error), "text": text_of(r)}
    except MCPError as e:
        return {"code": e.code, "message": str(e)}


async def run(url, mode, token):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    report = {"statuses": []}

    async def record(response):
        report["statuses"].append(response.status_code)

    try:
        async with create_mcp_http_client(headers=headers) as http:
            http.event_hooks = {"request": [], "response": [record]}
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode) as client:
                tools = await client.list_tools()
                report["tools"] = [t.name for t in tools.tools]
                report["bash"] = await call(client, "bash", {"command": "echo via-bash"})
                report["read"] = await call(client, "read", {"path": "notes.txt"})
    except BaseException as e:  # the SDK raises groups and HTTP errors alike
        report["error"] = describe(e)
    return report


def describe(e):
    parts = [f"{type(e).__name__}: {e}"]
    for sub in getattr(e, "exceptions", []) or []:
        parts.append(describe(sub))
    if e.__cause__ is not None:
        parts.append(describe(e.__cause__))
    return " | ".join(parts)


def make_jwts(out):
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_jwk = json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key()))
    rsa_jwk.update(kid="rsa-1", use="sig")
    ec_jwk = json.loads(ECAlgorithm.to_jwk(ec_key.public_key()))
    ec_jwk.update(kid="ec-1", use="sig")
    with open(f"{out}/jwks.json", "w") as f:
        json.dump({"keys": [rsa_jwk, ec_jwk]}, f)

    now = int(time.time())
    base = {"iss": "https://idp.test", "aud": "toolgate", "iat": now, "exp": now + 600}

    def claims(**over):
        c = dict(base)
        c.update(over)
        return {k: v for k, v in c.items() if v is not None}

    def sign(key, alg, kid, c):
        return jwt.encode(c, key, algorithm=alg, headers={"kid": kid})

    def b64(data):
        import base64

        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    # alg none: a header and claims with an empty signature.
    none = ".".join(
        [
            b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode()),
            b64(json.dumps(claims(sub="mallory")).encode()),
            "",
        ]
    )
    # HS256 keyed with the RSA public key's PEM (the key-confusion attack),
    # signed by hand: PyJWT refuses to use a PEM as an HMAC secret.
    import hashlib
    import hmac

    pem = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    signing_input = ".".join(
        [
            b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode()),
            b64(json.dumps(claims(sub="mallory")).encode()),
        ]
    )
    confused = signing_input + "." + b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())

    tokens = {
        "rs256_full": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice@example.com")),
        "es256_readonly": sign(
            ec_key, "ES256", "ec-1", claims(sub="ci@example.com", toolgate_profile="readonly")
        ),
        "expired": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", exp=now - 3600, iat=now - 7200)),
        "not_yet": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", nbf=now + 3600)),
        "wrong_aud": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", aud="someone-else")),
        "wrong_iss": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", iss="https://evil.test")),
        "unknown_kid": sign(rsa_key, "RS256", "rsa-9", claims(sub="alice")),
        "other_key": sign(other_rsa, "RS256", "rsa-1", claims(sub="alice")),
        "no_exp": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", exp=None)),
        "unknown_profile": sign(rsa_key, "RS256", "rsa-1", claims(sub="alice", toolgate_profile="root")),
        "es_key_says_rs256": sign(ec_key, "ES256", "rsa-1", claims(sub="alice")),
        "alg_none": none,
        "hs256_confusion": confused,
    }
    with open(f"{out}/tokens.json", "w") as f:
        json.dump(tokens, f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--mode", default="auto")
    p.add_argument("--token")
    p.add_argument("--make-jwts", metavar="DIR")
    a = p.parse_args()
    if a.make_jwts:
        make_jwts(a.make_jwts)
        json.dump({"made": a.make_jwts}, sys.stdout)
        return
    report = anyio.run(run, a.url, a.mode, a.token)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
