"""Drives toolgate with the official Python MCP SDK (mcp 2.3.0).

Run by tests/mcp_clients.rs, which starts nothing itself: this script
launches `toolgate serve --stdio` (or connects to a URL) and prints one JSON
object with what it saw, and the Rust test asserts on it.

    python3 client.py --mode auto|legacy --workspace DIR -- TOOLGATE serve --stdio ...
    python3 client.py --url http://127.0.0.1:PORT/mcp --mode auto|legacy --workspace DIR --http-only
"""

import argparse
import json
import os
import sys
import time

import anyio
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters

SLOW = "for i in 1 2 3; do echo $i; sleep 0.3; done"


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def summary(result):
    return {"is_error": bool(result.is_error), "text": text_of(result)}


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def approver(answers, asked):
    """An elicitation callback that answers approval forms with `answers`, in order."""

    async def callback(context, params):
        asked.append(params.message)
        answer = answers.pop(0) if answers else False
        return types.ElicitResult(action="accept", content={"approve": answer})

    return callback


async def scenarios(server, mode, workspace, full):
    report = {"mode": mode}
    asked = []
    elicit = approver([True, False], asked)
    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        report["protocol_version"] = str(client.protocol_version)
        tools = await client.list_tools()
        report["tools"] = [t.name for t in tools.tools]
        report["schemas_are_objects"] = all(
            t.input_schema.get("type") == "object" for t in tools.tools
        )
        report["allowed"] = summary(await client.call_tool("bash", {"command": "echo hello"}))
        if not full:
            return report
        report["denied"] = summary(await client.call_tool("bash", {"command": "rm -rf /"}))
        try:
            await client.call_tool("no_such_tool", {})
            report["unknown"] = {"raised": False}
        except MCPError as e:
            report["unknown"] = {"raised": True, "code": e.code, "message": str(e)}
        report["invalid"] = summary(await client.call_tool("bash", {"commnd": "x"}))
        report["result_rule"] = summary(
            await client.call_tool("bash", {"command": "echo result-rule FAILED"})
        )
        report["no_result_rule"] = summary(
            await client.call_tool("bash", {"command": "echo result-rule ok"})
        )

        updates = []

        async def on_progress(progress, total, message):
            updates.append({"progress": progress, "total": total, "message": message})

        slow = await client.call_tool("bash", {"command": SLOW}, progress_callback=on_progress)
        report["progress"] = {"result": summary(slow), "updates": updates}

        report["ask"] = summary(await client.call_tool("bash", {"command": "echo approve-me"}))
        report["ask_declined"] = summary(
            await client.call_tool("bash", {"command": "echo approve-me"})
        )
        report["ask_prompts"] = asked

        pid_file = os.path.join(workspace, "pid.txt")
        if os.path.exists(pid_file):
            os.remove(pid_file)
        started = time.monotonic()
        with anyio.move_on_after(1.5) as scope:
            await client.call_tool("bash", {"command": "echo $$ > pid.txt; sleep 30; echo done"})
        cancel = {"cancelled": scope.cancelled_caught, "after_s": time.monotonic() - started}
        pid = None
        for _ in range(50):
            try:
                with open(pid_file) as f:
                    pid = int(f.read().strip())
                break
            except (OSError, ValueError):
                await anyio.sleep(0.1)
        cancel["pid"] = pid
        gone = False
        if pid is not None:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                if not group_alive(pid):
                    gone = True
                    break
                await anyio.sleep(0.1)
        cancel["process_group_gone"] = gone
        # The session still serves after a cancelled call.
        cancel["next_call"] = summary(await client.call_tool("bash", {"command": "echo still here"}))
        report["cancel"] = cancel
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True, choices=["auto", "legacy"])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--url")
    parser.add_argument("--http-only", action="store_true", help="list and one call only")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if args.url:
        server = args.url
    else:
        server = StdioServerParameters(
            command=args.command[0], args=args.command[1:], cwd=args.workspace
        )
    report = anyio.run(scenarios, server, args.mode, args.workspace, not args.http_only)
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
