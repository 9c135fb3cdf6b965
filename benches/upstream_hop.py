"""The upstream hop with a raw JSON-RPC client: a trivial upstream tool
called directly over stdio, and the same tool through `toolgate serve
--stdio` fronting the same server, for one or more toolgate binaries, in
alternating rounds. Prints each round's p50, calls/s and each server
process's own CPU time per call, then the median p50 and calls/s per
variant and what toolgate adds to the direct call.

    python3 benches/upstream_hop.py NEW[,OLD...] [N] [ROUNDS] [UPSTREAM]

UPSTREAM chooses the server behind the hop:
- `everything` (the default): the `echo` tool of the real
  `@modelcontextprotocol/server-everything` from npm, on Node
  (tests/upstream/install.sh installs it; tests/mcp/install.sh the Node);
- `python`: `echo` of tests/upstream/fake_upstream.py, on the Python SDK
  (tests/mcp/install.sh). That server reads stdin on a worker thread and
  spends ~0.4-0.9 ms of CPU per call; its own CPU grows by up to ~200 µs
  when any process stands in front of it, so "added" there mostly measures
  the upstream, not the hop (docs/performance.md, stop 29);
- `both`: one after the other.

A raw client (no SDK) keeps the client's own variance small next to the
~100 µs being measured; tests/upstream/bench.py does the same with the
Python SDK client. With a C compiler (`cc`) it also runs the server behind
benches/relay.c, a process that only copies bytes: the floor of what a
stdio hop costs.
"""

import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(REPO, "tests", "upstream")


def cpu_of(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


class S:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.out = io.BufferedReader(self.p.stdout, 1 << 16)
        self.i = 0

    def send(self, m, p=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": m}
        if p is not None:
            msg["params"] = p
        if not notify:
            self.i += 1
            msg["id"] = self.i
        self.p.stdin.write((json.dumps(msg) + "\n").encode())

    def recv(self):
        while True:
            m = json.loads(self.out.readline())
            if "id" in m:
                return m


def run(cmd, tool, arguments, n):
    """p50 in µs, calls/s, and the server process's CPU µs per call."""
    s = S(cmd)
    s.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}})
    s.recv()
    s.send("notifications/initialized", notify=True)
    time.sleep(0.3)
    args = {"name": tool, "arguments": arguments}
    for _ in range(100):
        s.send("tools/call", args)
        r = s.recv()
        assert "result" in r and not r["result"].get("isError"), r
    c0 = cpu_of(s.p.pid)
    ts = []
    w0 = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        s.send("tools/call", args)
        s.recv()
        ts.append(time.perf_counter() - t)
    wall = time.perf_counter() - w0
    c1 = cpu_of(s.p.pid)
    s.p.stdin.close()
    s.p.wait(10)
    ts.sort()
    return ts[n // 2] * 1e6, n / wall, (c1 - c0) / n * 1e6


def node():
    """The Node the tests install (22), else the one on PATH."""
    ours = os.path.join(REPO, "tests", "mcp", "node_modules", "node", "bin", "node")
    return ours if os.access(ours, os.X_OK) else (shutil.which("node") or sys.exit("no node: run tests/mcp/install.sh"))


def upstream(kind, d):
    """(server name, argv, tool, arguments) of the upstream to front."""
    if kind == "python":
        py = os.path.join(REPO, "tests/mcp/.venv/bin/python")
        return "fake", [py, HERE + "/fake_upstream.py", os.path.join(d, "state")], "echo", {"text": "hello"}
    js = os.path.join(HERE, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
    if not os.path.exists(js):
        sys.exit("server-everything is not installed: run tests/upstream/install.sh")
    return "everything", [node(), js, "stdio"], "echo", {"message": "hello"}


def configure(kind, d, also_active=()):
    """Writes the manifests and policy for fronting `kind` into `d` (its
    tools active, and `also_active`): (server name, upstream argv, tool,
    arguments, toolgate's serve args)."""
    for sub in ("ws", "m", "p", "state"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    for f in os.listdir(REPO + "/tool-manifests"):
        if f.endswith(".toml"):
            open(os.path.join(d, "m", f), "w").write(open(REPO + "/tool-manifests/" + f).read())
    name, up, tool, arguments = upstream(kind, d)
    open(os.path.join(d, "m", name + ".toml"), "w").write(
        "[server]\nname = \"%s\"\ncommand = [%s]\nenv = [\"PATH\", \"HOME\"]\n" % (name, ", ".join('"%s"' % w for w in up)))
    open(os.path.join(d, "p", "policy.yaml"), "w").write(
        "version: 1\nextends: [builtin:default]\ntools:\n  active: %s\n" % json.dumps([name + "__*", *also_active]))
    gateway = ["serve", "--stdio", "--no-watch", "--decision-log", os.devnull,
               "--policies", d + "/p", "--manifests", d + "/m", "--workspace", d + "/ws"]
    return name, up, tool, arguments, gateway


def bench(bins, n, rounds, kind):
    with tempfile.TemporaryDirectory() as d:
        name, up, tool, arguments, gateway = configure(kind, d)
        # The floor: the same server behind a process that only copies bytes
        # (benches/relay.c, when a C compiler is at hand).
        relay_bin = os.path.join(d, "relay")
        has_cc = shutil.which("cc") and subprocess.run(
            ["cc", "-O2", "-o", relay_bin, os.path.join(REPO, "benches", "relay.c")], stderr=subprocess.DEVNULL).returncode == 0
        relay = [("relay", [relay_bin] + up, tool)] if has_cc else []
        variants = [("direct", up, tool)] + relay + [(os.path.basename(b), [b] + gateway, name + "__" + tool) for b in bins]
        res = {v[0]: [] for v in variants}
        print(f"upstream: {kind} ({' '.join(os.path.basename(w) for w in up)}), {n} calls x {rounds} rounds", flush=True)
        for r in range(rounds):
            for label, cmd, t in (variants if r % 2 == 0 else variants[::-1]):
                p50, rate, cpu = run(cmd, t, arguments, n)
                res[label].append((p50, rate))
                print(f"round {r} {label:>16}: p50 {p50:7.0f} µs  {rate:7.0f} calls/s  "
                      f"process cpu/call {cpu:6.0f} µs  load {os.getloadavg()[0]:.1f}", flush=True)
        base = statistics.median(p for p, _ in res["direct"])
        for k, v in res.items():
            p50 = statistics.median(p for p, _ in v)
            rate = statistics.median(c for _, c in v)
            print(f"median {k:>16}: p50 {p50:7.0f} µs  {rate:7.0f} calls/s  added {p50 - base:+6.0f} µs")


def main():
    bins = sys.argv[1].split(",")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    kind = sys.argv[4] if len(sys.argv) > 4 else "everything"
    if kind not in ("everything", "python", "both"):
        sys.exit(f"unknown upstream {kind!r}: use everything, python or both")
    for k in (("everything", "python") if kind == "both" else (kind,)):
        bench(bins, n, rounds, k)


if __name__ == "__main__":
    main()
