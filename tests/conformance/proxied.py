"""Runs the official MCP conformance suite (every scenario, pending ones too)
twice: against an upstream server that implements the suite's fixtures
(tests/upstream/conformance_upstream.py, Python SDK) directly over
Streamable HTTP, and against `toolgate serve --http` fronting that upstream
over stdio (tests/conformance/proxied/: a `[server]` with `prefix = ""` and a
policy that activates its tools). Fails unless the direct run passes every
scenario, every one of them passes through toolgate too, and, beyond what
the suite itself checks, what the client saw (the checks' details: tool
results, resource contents, prompt messages, completions, the sampling and
elicitation requests, log records, progress) is the same both ways, except
in the scenarios about the transport itself (session ids, SSE events, HTTP
status codes differ by design).

Then, beyond the suite (which opens one session at a time), it checks where
toolgate sends an upstream's sampling request when several sessions are
open: to the session whose call is running, never to another one; and that
a stateless (2026-era) client calling the sampling and elicitation tools is
asked in input-required rounds (and no session is); and that with three
sessions calling `test_tool_with_progress` at once (30 calls each), every
call's three progress notifications arrive before its result (rmcp handles
an upstream's notifications in tasks of their own; toolgate routes progress
as it is read, `InOrder` in src/upstream/connect.rs).

    tests/mcp/.venv/bin/python tests/conformance/proxied.py [TOOLGATE_BINARY]

(default: $CARGO_TARGET_DIR or target, then release/toolgate). Needs
`bash tests/mcp/install.sh` first (Node 22, the suite, the Python SDK).
With PROXIED_KEEP=DIR (an existing, empty folder) the suite's results of
both runs stay in DIR/direct and DIR/proxied, to read a failure's details.
"""

import json

import anyio
import os
import pathlib
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
MCP = REPO / "tests" / "mcp"
VENV_BIN = MCP / ".venv" / "bin"
NODE_BIN = MCP / "node_modules" / "node" / "bin"
SUITE = MCP / "node_modules" / ".bin" / "conformance"
UPSTREAM = REPO / "tests" / "upstream" / "conformance_upstream.py"
FRONTED = HERE / "proxied"
# Scenarios about the HTTP transport, where toolgate's own answers differ
# from the upstream's (session ids, SSE event ids, 403 vs 421).
TRANSPORT = {"server-initialize", "dns-rebinding-protection", "server-sse-multiple-streams", "server-sse-polling"}


def fail(message):
    print(f"conformance (proxied): {message}", file=sys.stderr)
    sys.exit(1)


def start(argv, pattern, env, what):
    """Starts a server; returns the process and the URL its output names."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    seen = []

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            # Keep draining the output (stderr of a long run) in the thread.
            return proc, m.group(1)
    proc.kill()
    fail(f"{what} did not start:\n{''.join(seen)}")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_suite(url, out, env):
    """Runs every scenario against `url`; returns {scenario: checks}."""
    subprocess.run(
        [str(NODE_BIN / "node"), str(SUITE), "server", "--url", url, "--suite", "all", "-o", str(out)],
        cwd=MCP,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        check=False,
    )
    results = {}
    for d in sorted(out.iterdir()):
        m = re.match(r"server-(.+)-\d{4}-\d\d-\d\dT", d.name)
        if not m:
            continue
        results.setdefault(m.group(1), []).extend(json.loads((d / "checks.json").read_text()))
    if not results:
        fail(f"the suite wrote no results for {url}")
    return results


async def routing(url):
    """Several sessions at once; returns a list of problems."""
    from mcp import Client, types

    asked = {"A": [], "B": [], "C": []}

    def sampler(who):
        async def on_sampling(context, params):
            asked[who].append(params.messages[0].content.text)
            return types.CreateMessageResult(
                role="assistant", content=types.TextContent(type="text", text=f"from {who}"), model="test"
            )

        return on_sampling

    def said(result):
        return (bool(result.is_error), " ".join(c.text for c in result.content if c.type == "text"))

    problems = []
    async with Client(url, mode="legacy", sampling_callback=sampler("A")) as a:
        await a.list_tools()
        async with Client(url, mode="legacy", sampling_callback=sampler("B")) as b:
            got = said(await b.call_tool("test_sampling", {"prompt": "for B"}))
            if got != (False, "LLM response: from B") or asked != {"A": [], "B": ["for B"], "C": []}:
                problems.append(f"B's call with A open: result {got}, asked {asked}")
        # A stateless client is asked in input-required rounds; A is not.
        async def on_elicit(context, params):
            asked["C"].append(params.message)
            return types.ElicitResult(action="accept", content={"username": "c", "email": "c@example.com"})

        async with Client(url, mode="auto", sampling_callback=sampler("C"), elicitation_callback=on_elicit) as c:
            version = str(c.protocol_version)
            got = said(await c.call_tool("test_sampling", {"prompt": "stateless"}))
            if not version.startswith("2026") or got != (False, "LLM response: from C"):
                problems.append(f"a stateless call ({version}): result {got}")
            if asked != {"A": [], "B": ["for B"], "C": ["stateless"]}:
                problems.append(f"a stateless call's sampling: asked {asked}")
            got = said(await c.call_tool("test_elicitation", {"message": "who?"}))
            if got[0] or "action=accept" not in got[1] or "c@example.com" not in got[1]:
                problems.append(f"a stateless call's elicitation: result {got}")
            if asked["C"] != ["stateless", "who?"] or asked["A"]:
                problems.append(f"a stateless call's elicitation: asked {asked}")
    return problems


async def progress_order(url):
    """Three sessions at once; returns a list of problems."""
    from mcp import Client

    short = []

    async def session():
        async with Client(url, mode="legacy") as c:
            for _ in range(30):
                got = []

                async def on_progress(progress, total, message):
                    got.append(progress)

                await c.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
                if got != [0, 50, 100]:
                    short.append(got)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(session)
    return [f"{len(short)} of 90 calls got progress {short[:5]} instead of [0, 50, 100]"] if short else []


def main():
    binary = pathlib.Path(
        sys.argv[1]
        if len(sys.argv) > 1
        else pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "toolgate"
    )
    if not (NODE_BIN / "node").exists() or not SUITE.exists() or not (VENV_BIN / "python").exists():
        fail("the suite or the Python SDK is not installed; run: bash tests/mcp/install.sh")
    env = dict(os.environ)
    # `python` in the fronted manifest's command is the SDK's venv.
    env["PATH"] = f"{VENV_BIN}:{NODE_BIN}:{env.get('PATH', '')}"
    procs = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(os.environ.get("PROXIED_KEEP") or tmp)
            upstream, direct_url = start(
                [str(VENV_BIN / "python"), str(UPSTREAM), "http"], r"listening on (http://\S+)", env, "the upstream"
            )
            procs.append(upstream)
            print(f"conformance (proxied): the upstream directly at {direct_url}")
            direct = run_suite(direct_url, tmp / "direct", env)
            stop(upstream)

            toolgate, proxied_url = start(
                [
                    str(binary),
                    "serve",
                    "--http",
                    "127.0.0.1:0",
                    "--no-watch",
                    "--workspace",
                    str(FRONTED),
                    "--policies",
                    str(FRONTED / "policies"),
                    "--manifests",
                    str(FRONTED / "tool-manifests"),
                    "--decision-log",
                    "/dev/null",
                ],
                r"serving MCP on (http://\S+)",
                env,
                "toolgate",
            )
            procs.append(toolgate)
            version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout.strip()
            print(f"conformance (proxied): through {version} at {proxied_url}")
            proxied = run_suite(proxied_url, tmp / "proxied", env)
            routed = anyio.run(routing, proxied_url)
            ordered = anyio.run(progress_order, proxied_url)
    finally:
        for p in procs:
            stop(p)

    def failed(checks):
        return [c["id"] for c in checks if c.get("status") == "FAILURE"]

    def seen(checks):
        return [(c["id"], c.get("status"), c.get("details")) for c in checks]

    problems = []
    for name in sorted(direct):
        if failed(direct[name]):
            problems.append(f"{name}: fails against the upstream directly ({', '.join(failed(direct[name]))})")
        elif name not in proxied:
            problems.append(f"{name}: passes directly but did not run through toolgate")
        elif failed(proxied[name]):
            problems.append(f"{name}: passes directly but fails through toolgate ({', '.join(failed(proxied[name]))})")
        elif name not in TRANSPORT and seen(direct[name]) != seen(proxied[name]):
            problems.append(
                f"{name}: passes both ways, but the client saw something else through toolgate:\n"
                f"    directly: {json.dumps(seen(direct[name]))[:2000]}\n"
                f"    toolgate: {json.dumps(seen(proxied[name]))[:2000]}"
            )
        else:
            print(f"  ok  {name}" + ("" if name in TRANSPORT else " (same answers)"))
    for p in routed:
        problems.append(f"sampling with several sessions: {p}")
    if not routed:
        print("  ok  sampling with several sessions: to the calling session only; a stateless call in rounds")
    for p in ordered:
        problems.append(f"progress with several sessions: {p}")
    if not ordered:
        print("  ok  progress with several sessions: 90 calls, every update before its result")
    if problems:
        fail("\n  " + "\n  ".join(problems))
    print(f"conformance (proxied): all {len(direct)} scenarios pass directly and through toolgate")


if __name__ == "__main__":
    main()
