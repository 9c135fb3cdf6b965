"""Upstream bench: one trivial upstream tool (fake_upstream.py's `echo`)
called directly over stdio, then through `toolgate serve` (stdio) fronting
the same server, with the Python SDK as the client. Prints calls/s and
latency percentiles for both, and the difference at p50.

    tests/mcp/.venv/bin/python tests/upstream/bench.py TOOLGATE [N] [OLD [ROUNDS]]

With OLD (another toolgate binary, e.g. one built from main), each round
measures direct, OLD and TOOLGATE, alternating the order, and the report
ends with the median per variant: a before/after under the same load.

Not part of `cargo test`; numbers are in docs/performance.md.
"""

import os
import statistics
import sys
import tempfile
import time

import anyio
from mcp import Client, StdioServerParameters

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


async def measure(server, tool, n):
    async with Client(server, mode="legacy") as client:
        for _ in range(50):  # warm-up
            await client.call_tool(tool, {"text": "hello"})
        times = []
        start = time.perf_counter()
        for _ in range(n):
            t = time.perf_counter()
            r = await client.call_tool(tool, {"text": "hello"})
            times.append(time.perf_counter() - t)
            assert not r.is_error, r
        total = time.perf_counter() - start
    times.sort()
    return {
        "calls_per_s": n / total,
        "p50_us": times[len(times) // 2] * 1e6,
        "p90_us": times[int(len(times) * 0.9)] * 1e6,
        "mean_us": statistics.mean(times) * 1e6,
    }


def main():
    toolgate = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    old = sys.argv[3] if len(sys.argv) > 3 else None
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    with tempfile.TemporaryDirectory() as d:
        for sub in ("ws", "m", "p", "state"):
            os.makedirs(os.path.join(d, sub))
        for f in os.listdir(os.path.join(REPO, "tool-manifests")):
            if f.endswith(".toml"):
                with open(os.path.join(REPO, "tool-manifests", f)) as src, open(
                    os.path.join(d, "m", f), "w"
                ) as dst:
                    dst.write(src.read())
        upstream = [sys.executable, os.path.join(HERE, "fake_upstream.py"), os.path.join(d, "state")]
        with open(os.path.join(d, "m", "fake.toml"), "w") as f:
            f.write(
                "[server]\nname = \"fake\"\ncommand = [%s]\nenv = [\"PATH\", \"HOME\"]\n"
                % ", ".join('"%s"' % w for w in upstream)
            )
        with open(os.path.join(d, "p", "policy.yaml"), "w") as f:
            f.write("version: 1\nextends: [builtin:default]\ntools:\n  active: [\"fake__*\"]\n")
        direct = StdioServerParameters(command=upstream[0], args=upstream[1:])

        def gated(binary):
            return StdioServerParameters(
                command=binary,
                args=["serve", "--no-watch", "--decision-log", os.devnull,
                      "--policies", os.path.join(d, "p"), "--manifests", os.path.join(d, "m"),
                      "--workspace", os.path.join(d, "ws")],
            )

        if old is None:
            a = anyio.run(measure, direct, "echo", n)
            b = anyio.run(measure, gated(toolgate), "fake__echo", n)
        else:
            variants = [("direct", direct, "echo"), ("old toolgate", gated(old), "fake__echo"),
                        ("toolgate", gated(toolgate), "fake__echo")]
            runs = {name: [] for name, _, _ in variants}
            for r in range(rounds):
                for name, params, tool in variants if r % 2 == 0 else reversed(variants):
                    res = anyio.run(measure, params, tool, n)
                    runs[name].append(res)
                    show(f"{name} #{r}", res)
            print(f"median of {rounds} rounds:")
            med = {name: {k: statistics.median(x[k] for x in rs) for k in rs[0]}
                   for name, rs in runs.items()}
            for name, r in med.items():
                show(name, r)
            for name in ("old toolgate", "toolgate"):
                print(f"{name}: added at p50 {med[name]['p50_us'] - med['direct']['p50_us']:.0f} µs "
                      f"({n} calls each)")
            return
    for name, r in (("direct", a), ("through toolgate", b)):
        show(name, r)
    print(f"added at p50: {b['p50_us'] - a['p50_us']:.0f} µs ({n} calls each)")


def show(name, r):
    print(f"{name:>17}: {r['calls_per_s']:8.0f} calls/s  p50 {r['p50_us']:7.0f} µs  "
          f"p90 {r['p90_us']:7.0f} µs  mean {r['mean_us']:7.0f} µs", flush=True)


if __name__ == "__main__":
    main()
