"""Drives toolgate fronting upstream servers, with the official Python MCP
SDK (mcp 2.3.0) as the client. Run by tests/upstream.rs; prints one JSON
object with what it saw (the Rust test asserts on it).

    python client.py STEPS_JSON -- TOOLGATE serve ...

STEPS_JSON is a list of steps: {"do": "list"}, {"do": "call", "tool": …,
"args": …}, {"do": "progress", …}, {"do": "cancel", "after": SECONDS, …},
{"do": "sleep", "seconds": …}; each may name its report key with "as".
"""

import json
import sys

import anyio
from mcp import Client, MCPError, StdioServerParameters


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def summary(result):
    return {
        "is_error": bool(result.is_error),
        "text": text_of(result),
        "structured": result.structured_content,
    }


async def call(client, name, args, **kw):
    try:
        return summary(await client.call_tool(name, args, **kw))
    except MCPError as e:
        return {"raised": True, "code": e.code, "message": str(e)}


async def run(server, steps):
    report = {}
    async with Client(server, mode="legacy") as client:
        for i, step in enumerate(steps):
            kind = step["do"]
            key = step.get("as", f"{i}")
            if kind == "list":
                tools = await client.list_tools()
                report[key] = sorted(t.name for t in tools.tools)
            elif kind == "call":
                report[key] = await call(client, step["tool"], step.get("args", {}))
            elif kind == "progress":
                updates = []

                async def on_progress(progress, total, message):
                    updates.append({"progress": progress, "total": total, "message": message})

                result = await call(
                    client, step["tool"], step.get("args", {}), progress_callback=on_progress
                )
                report[key] = {"result": result, "updates": updates}
            elif kind == "cancel":
                with anyio.move_on_after(step["after"]):
                    await client.call_tool(step["tool"], step.get("args", {}))
                report[key] = "cancelled"
            elif kind == "sleep":
                await anyio.sleep(step["seconds"])
    return report


def main():
    steps = json.loads(sys.argv[1])
    command = sys.argv[3:] if sys.argv[2] == "--" else sys.argv[2:]
    server = StdioServerParameters(command=command[0], args=command[1:])
    report = anyio.run(run, server, steps)
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
