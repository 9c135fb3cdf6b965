"""An upstream MCP server that breaks the wire on demand (raw JSON-RPC over
stdio, no SDK), for toolgate's stdio client transport
(src/upstream/stdio.rs). Run by tests/upstream.rs through toolgate:

    python wire_upstream.py

Tools (each takes no arguments):
- `big` answers with one line over 16 MiB (toolgate's limit);
- `garbled` answers with an `error` that is not a JSON-RPC error object;
- `stray` first writes an answer to an id nobody asked and a line that is
  not JSON, then its own answer, "ok";
- `echo(text)` returns the text.
"""

import json
import sys

TOOLS = [
    {"name": n, "description": d, "inputSchema": {"type": "object", "properties": p}}
    for n, d, p in [
        ("big", "Answer with a message over 16 MiB.", {}),
        ("garbled", "Answer with an error that is not an error object.", {}),
        ("stray", "Write stray lines before the answer.", {}),
        ("echo", "Echo the text.", {"text": {"type": "string"}}),
    ]
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(id_, result):
    send({"jsonrpc": "2.0", "id": id_, "result": result})


def text(t):
    return {"content": [{"type": "text", "text": t}], "isError": False}


for line in sys.stdin:
    message = json.loads(line)
    id_, method = message.get("id"), message.get("method")
    if id_ is None:
        continue
    params = message.get("params") or {}
    if method == "initialize":
        answer(id_, {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "wire-upstream", "version": "1"},
        })
    elif method == "tools/list":
        answer(id_, {"tools": TOOLS})
    elif method == "tools/call":
        name = params.get("name")
        if name == "big":
            answer(id_, text("x" * (17 * 1024 * 1024)))
        elif name == "garbled":
            send({"jsonrpc": "2.0", "id": id_, "error": "boom"})
        elif name == "stray":
            answer(1_000_000, text("not for anyone"))
            sys.stdout.write("debug: this line is not JSON\n")
            answer(id_, text("ok"))
        else:
            answer(id_, text(params.get("arguments", {}).get("text", "")))
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no such method"}})
