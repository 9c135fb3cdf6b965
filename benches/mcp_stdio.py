"""Calls per second over MCP stdio, and the server's resident memory.

A raw JSON-RPC client (no SDK, so the client costs little next to the
server) starts `toolgate serve --stdio`, shakes hands (2025-11-25), then:

- sequential: one `tools/call` at a time, waiting for each response
  (a model's agent loop works like this);
- pipelined: up to WINDOW calls in flight (a client with parallel calls);

for a trivial tool (`ls` of a one-file workspace) and for a call the policy
denies (`bash` with `rm -rf /`: the policy alone, nothing runs). Memory is
VmRSS from /proc/PID/status after start-up and after the runs, and VmHWM
(the peak). Each run also reports the server's CPU time per call (user +
system, all threads, from /proc/PID/stat): on a loaded machine a steadier
measure of the server's cost than calls/s.

    python3 benches/mcp_stdio.py target/release/toolgate [N]

With more binaries after N (`... NEW N OLD [ROUNDS]`), each round runs every
binary once, alternating, so that a before/after comparison shares the
machine's load; the report has every run and the median per binary.
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import time

WINDOW = 32


def cpu_seconds(pid):
    """User + system CPU time of the whole process (all its threads)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def with_cpu(server, run, params, n):
    """`run`'s report plus the server's CPU time per call: on a loaded
    machine a steadier figure of the server's cost than calls/s."""
    before = cpu_seconds(server.proc.pid)
    report = run(server, params, n)
    report["server_cpu_us_per_call"] = round(
        (cpu_seconds(server.proc.pid) - before) / n * 1e6, 1)
    return report


def rss(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields


class Server:
    def __init__(self, binary, workspace):
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen(
            [binary, "serve", "--stdio", "--no-watch", "--workspace", workspace,
             "--policies", os.path.join(repo, "tests/mcp/policies"),
             "--manifests", os.path.join(repo, "tool-manifests"),
             "--decision-log", os.devnull],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        # Read responses through a buffer: readline on the unbuffered pipe
        # (bufsize=0) reads one byte per system call, which made the client,
        # not the server, the bottleneck. Requests stay unbuffered writes.
        self.out = io.BufferedReader(self.proc.stdout, buffer_size=1 << 16)
        self.next_id = 0

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            self.next_id += 1
            msg["id"] = self.next_id
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        return msg.get("id")

    def recv(self):
        while True:
            line = self.out.readline()
            if not line:
                raise RuntimeError("server closed stdout")
            msg = json.loads(line)
            if "id" in msg:
                return msg

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def call(name, arguments):
    return {"name": name, "arguments": arguments}


def sequential(server, params, n):
    latencies = []
    for _ in range(n):
        start = time.perf_counter()
        server.send("tools/call", params)
        reply = server.recv()
        latencies.append(time.perf_counter() - start)
        assert "result" in reply, reply
    latencies.sort()
    total = sum(latencies)
    return {
        "calls_per_s": round(n / total),
        "p50_us": round(latencies[n // 2] * 1e6),
        "p99_us": round(latencies[int(n * 0.99)] * 1e6),
    }


def pipelined(server, params, n):
    start = time.perf_counter()
    sent = received = 0
    while received < n:
        while sent < n and sent - received < WINDOW:
            server.send("tools/call", params)
            sent += 1
        reply = server.recv()
        assert "result" in reply, reply
        received += 1
    return {"calls_per_s": round(n / (time.perf_counter() - start))}


def run_once(binary, n):
    with tempfile.TemporaryDirectory() as ws:
        with open(os.path.join(ws, "a.txt"), "w") as f:
            f.write("hello\n")
        server = Server(binary, ws)
        server.send("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "bench", "version": "1"}})
        server.recv()
        server.send("notifications/initialized", notify=True)
        time.sleep(0.2)
        report = {"n": n, "rss_after_start_mib": round(rss(server.proc.pid)["VmRSS"], 1)}
        trivial = call("ls", {"path": "."})
        denied = call("bash", {"command": "rm -rf /"})
        # Warm up (first use compiles the argument schema, loads redaction).
        sequential(server, trivial, 200)
        sequential(server, denied, 200)
        report["ls_sequential"] = with_cpu(server, sequential, trivial, n)
        report["ls_pipelined"] = with_cpu(server, pipelined, trivial, n)
        report["denied_sequential"] = with_cpu(server, sequential, denied, n)
        report["denied_pipelined"] = with_cpu(server, pipelined, denied, n)
        mem = rss(server.proc.pid)
        report["rss_after_runs_mib"] = round(mem["VmRSS"], 1)
        report["peak_rss_mib"] = round(mem["VmHWM"], 1)
        server.close()
    return report


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/toolgate"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    others = sys.argv[3:4]
    if not others:
        print(json.dumps(run_once(binary, n), indent=1))
        return
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    binaries = [binary] + others
    runs = {b: [] for b in binaries}
    for r in range(rounds):
        # Alternate which binary goes first, so neither always gets the
        # quieter half of a round.
        for b in binaries if r % 2 == 0 else reversed(binaries):
            report = run_once(b, n)
            runs[b].append(report)
            print(json.dumps({"round": r, "binary": b, **report}), flush=True)
    summary = {}
    for b, reports in runs.items():
        summary[b] = {
            "ls_sequential_p50_us": median([x["ls_sequential"]["p50_us"] for x in reports]),
            "ls_sequential_calls_per_s": median([x["ls_sequential"]["calls_per_s"] for x in reports]),
            "ls_pipelined_calls_per_s": median([x["ls_pipelined"]["calls_per_s"] for x in reports]),
            "ls_pipelined_server_cpu_us": median(
                [x["ls_pipelined"]["server_cpu_us_per_call"] for x in reports]),
            "denied_sequential_p50_us": median([x["denied_sequential"]["p50_us"] for x in reports]),
            "denied_pipelined_calls_per_s": median([x["denied_pipelined"]["calls_per_s"] for x in reports]),
            "denied_pipelined_server_cpu_us": median(
                [x["denied_pipelined"]["server_cpu_us_per_call"] for x in reports]),
            "rss_after_runs_mib": median([x["rss_after_runs_mib"] for x in reports]),
            "peak_rss_mib": max(x["peak_rss_mib"] for x in reports),
        }
    print(json.dumps({"median_of_rounds": rounds, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
