"""Drives toolgate fronting upstream servers, with the official Python MCP
SDK (mcp 2.3.0) as the client. Run by tests/upstream.rs; prints one JSON
object with what it saw (the Rust test asserts on it).

    python client.py STEPS_JSON -- TOOLGATE serve ...

STEPS_JSON is a list of steps: {"do": "list"}, {"do": "call", "tool": …,
"args": …} (with "until_ok": SECONDS, repeated while it is an error result),
{"do": "progress", …}, {"do": "cancel", "after": SECONDS, …},
{"do": "sleep", "seconds": …}, {"do": "wait_file", "path": …, "seconds": …}
(true once the file exists, false if it did not within the seconds), and for what is passed through besides
tools: {"do": "resources"}, {"do": "templates"}, {"do": "read", "uri": …},
{"do": "prompts"}, {"do": "prompt", "name": …, "args": …},
{"do": "complete", "ref": {...}, "argument": {...}, "context": {...}},
{"do": "level", "level": …}, {"do": "logs"} (the log records so far),
{"do": "subscribe", "uri": …}, {"do": "unsubscribe", "uri": …},
{"do": "updates"} (the URIs of resource-updated notifications so far),
{"do": "asked"} (the sampling and elicitation requests the client got; it
answers sampling with "sampled: <the first message's text>" and
elicitation by accepting {"name": "Ada <that message>"});
each may name its report key with "as". A JSON-RPC error becomes
{"raised": true, "code": …, "message": …}.
"""

import json
import os
import sys
import time

import anyio
from mcp import Client, MCPError, StdioServerParameters, types


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


def dumped(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def guarded(make):
    try:
        return await make()
    except MCPError as e:
        return {"raised": True, "code": e.code, "message": str(e)}


async def run(server, steps):
    report = {}
    logs = []

    async def on_log(params):
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    updates = []

    async def on_message(message):
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/resources/updated":
            updates.append(str(inner.params.uri))

    asked = []

    async def on_sampling(context, params):
        said = params.messages[0].content.text
        asked.append({"sampling": said})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"sampled: {said}"),
            model="test-model",
        )

    async def on_elicitation(context, params):
        asked.append({"elicitation": params.message})
        return types.ElicitResult(action="accept", content={"name": f"Ada {params.message}"})

    async with Client(
        server,
        mode="legacy",
        logging_callback=on_log,
        message_handler=on_message,
        sampling_callback=on_sampling,
        elicitation_callback=on_elicitation,
    ) as client:
        for i, step in enumerate(steps):
            kind = step["do"]
            key = step.get("as", f"{i}")
            if kind == "list":
                tools = await client.list_tools()
                report[key] = sorted(t.name for t in tools.tools)
            elif kind == "call":
                report[key] = await call(client, step["tool"], step.get("args", {}))
                # "until_ok": SECONDS repeats the call (every 0.5 s) while it
                # is an error result, for a server coming back after a
                # crash; the last result is reported either way.
                deadline = time.monotonic() + step.get("until_ok", 0)
                while report[key].get("is_error") and time.monotonic() < deadline:
                    await anyio.sleep(0.5)
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
            elif kind == "wait_file":
                # What an upstream does after a notification happens after
                # the client's call returned: wait for its mark, bounded.
                deadline = time.monotonic() + step.get("seconds", 10)
                while not os.path.exists(step["path"]) and time.monotonic() < deadline:
                    await anyio.sleep(0.05)
                report[key] = os.path.exists(step["path"])
            elif kind == "resources":
                r = await client.list_resources()
                report[key] = [dumped(x) for x in r.resources]
            elif kind == "templates":
                r = await client.list_resource_templates()
                report[key] = [dumped(x) for x in r.resource_templates]
            elif kind == "read":
                report[key] = await guarded(
                    lambda: client.read_resource(step["uri"], cache_mode="bypass")
                )
                if not isinstance(report[key], dict):
                    report[key] = dumped(report[key])
            elif kind == "prompts":
                r = await client.list_prompts()
                report[key] = [dumped(x) for x in r.prompts]
            elif kind == "prompt":
                r = await guarded(lambda: client.get_prompt(step["name"], step.get("args", {})))
                report[key] = r if isinstance(r, dict) else dumped(r)
            elif kind == "complete":
                ref = step["ref"]
                ref = (
                    types.PromptReference(type="ref/prompt", name=ref["name"])
                    if ref["type"] == "ref/prompt"
                    else types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
                )
                r = await guarded(
                    lambda: client.complete(ref, step["argument"], step.get("context"))
                )
                report[key] = r if isinstance(r, dict) else dumped(r)
            elif kind == "level":
                await client.set_logging_level(step["level"])
                report[key] = "set"
            elif kind == "logs":
                report[key] = list(logs)
            elif kind == "subscribe":
                report[key] = await guarded(lambda: client.subscribe_resource(step["uri"]))
                report[key] = report[key] if isinstance(report[key], dict) else "ok"
            elif kind == "unsubscribe":
                await client.unsubscribe_resource(step["uri"])
                report[key] = "ok"
            elif kind == "updates":
                report[key] = list(updates)
            elif kind == "asked":
                report[key] = list(asked)
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
