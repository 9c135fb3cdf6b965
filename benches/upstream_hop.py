"""The upstream hop with a raw JSON-RPC client: a trivial upstream tool
(`echo` of tests/upstream/fake_upstream.py) called directly over stdio, and
`fake__echo` through `toolgate serve --stdio` fronting the same server, for
one or more toolgate binaries, in alternating rounds. Prints each round's
p50 and each server process's own CPU time per call, then the median p50
per variant and what toolgate adds to the direct call.

    python3 benches/upstream_hop.py NEW[,OLD...] [N] [ROUNDS]

A raw client (no SDK) keeps the client's own variance small next to the
~100 µs being measured; tests/upstream/bench.py does the same with the
Python SDK client. Needs tests/mcp/install.sh (the upstream runs on the
Python SDK in tests/mcp/.venv). With a C compiler (`cc`) it also runs the
server behind benches/relay.c, a process that only copies bytes: the floor
of what a stdio hop costs.
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
    f = open(f"/proc/{pid}/stat").read().rsplit(")",1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
class S:
    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        self.out = io.BufferedReader(self.p.stdout, 1 << 16); self.i = 0
    def send(self, m, p=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": m}
        if p is not None: msg["params"] = p
        if not notify: self.i += 1; msg["id"] = self.i
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
    def recv(self):
        while True:
            m = json.loads(self.out.readline())
            if "id" in m: return m
def run(cmd, tool, n):
    s = S(cmd)
    s.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}); s.recv()
    s.send("notifications/initialized", notify=True); time.sleep(0.3)
    args = {"name": tool, "arguments": {"text": "hello"}}
    for _ in range(100): s.send("tools/call", args); r = s.recv(); assert "result" in r and not r["result"].get("isError"), r
    c0 = cpu_of(s.p.pid); ts = []
    for _ in range(n):
        t = time.perf_counter(); s.send("tools/call", args); r = s.recv(); ts.append(time.perf_counter() - t)
    c1 = cpu_of(s.p.pid)
    s.p.stdin.close(); s.p.wait(10)
    ts.sort()
    return ts[n // 2] * 1e6, (c1 - c0) / n * 1e6
bins = sys.argv[1].split(",")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
with tempfile.TemporaryDirectory() as d:
    for sub in ("ws", "m", "p", "state"): os.makedirs(os.path.join(d, sub))
    for f in os.listdir(REPO + "/tool-manifests"):
        if f.endswith(".toml"): open(os.path.join(d, "m", f), "w").write(open(REPO + "/tool-manifests/" + f).read())
    up = [os.path.join(REPO, "tests/mcp/.venv/bin/python"), HERE + "/fake_upstream.py", os.path.join(d, "state")]
    open(os.path.join(d, "m", "fake.toml"), "w").write("[server]\nname = \"fake\"\ncommand = [%s]\nenv = [\"PATH\", \"HOME\"]\n" % ", ".join('"%s"' % w for w in up))
    open(os.path.join(d, "p", "policy.yaml"), "w").write("version: 1\nextends: [builtin:default]\ntools:\n  active: [\"fake__*\"]\n")
    # The floor: the same server behind a process that only copies bytes
    # (benches/relay.c, when a C compiler is at hand).
    relay = [("relay", [os.path.join(d, "relay")] + up, "echo")] if shutil.which("cc") and subprocess.run(["cc", "-O2", "-o", os.path.join(d, "relay"), os.path.join(REPO, "benches", "relay.c")], stderr=subprocess.DEVNULL).returncode == 0 else []
    variants = [("direct", up, "echo")] + relay + [(os.path.basename(b), [b, "serve", "--stdio", "--no-watch", "--decision-log", os.devnull, "--policies", d + "/p", "--manifests", d + "/m", "--workspace", d + "/ws"], "fake__echo") for b in bins]
    res = {v[0]: [] for v in variants}
    for r in range(rounds):
        for name, cmd, tool in (variants if r % 2 == 0 else variants[::-1]):
            p50, cpu = run(cmd, tool, n); res[name].append(p50)
            print(f"round {r} {name:>16}: p50 {p50:7.0f} µs  process cpu/call {cpu:6.0f} µs  load {os.getloadavg()[0]:.1f}", flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in med.items(): print(f"median {k:>16}: p50 {v:7.0f} µs  added {v - med['direct']:+6.0f} µs")
