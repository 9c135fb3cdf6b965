"""Side-by-side CPU per call of toolgate binaries on a shared machine: all
servers run at once and take turns in short blocks of calls, so that each
sees the same load. Per block it reads the server's own CPU time from
/proc/PID/task/*/schedstat (nanoseconds, all threads; /proc/PID/stat counts
10 ms ticks) and each call's wall time.

    python3 benches/hop_ab.py NEW,OLD[,...] [BLOCKS] [CALLS_PER_BLOCK]

Two workloads, each sequential (one call in flight, as a model's agent loop
calls):
- hop: `fake__echo`, a trivial tool of an upstream server
  (tests/upstream/fake_upstream.py on the Python SDK) behind toolgate over
  stdio — issue 13's upstream hop;
- denied: `bash` with `rm -rf /`, a call toolgate's policy denies (nothing
  runs) — toolgate's own MCP stdio path.

Prints, per binary and workload, the median over blocks of the server's
CPU µs per call and of the block's p50 wall µs, and the load average.
Needs tests/mcp/install.sh (the upstream's Python SDK).
"""

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upstream_hop as hop  # noqa: E402


def cpu_ns(pid):
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that just ended
    return total


class Server(hop.S):
    """A server on pipes (upstream_hop.S) that runs blocks of calls."""

    def block(self, args, n, check):
        c0 = cpu_ns(self.p.pid)
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            self.send("tools/call", args)
            r = self.recv()
            ts.append(time.perf_counter() - t)
            assert check(r), r
        cpu = (cpu_ns(self.p.pid) - c0) / n / 1e3
        ts.sort()
        return cpu, ts[n // 2] * 1e6


def start(cmd):
    s = Server(cmd)
    s.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "b", "version": "1"}})
    s.recv()
    s.send("notifications/initialized", notify=True)
    return s


def main():
    bins = sys.argv[1].split(",")
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    work = {
        "hop": ({"name": "fake__echo", "arguments": {"text": "hello"}},
                lambda r: "result" in r and not r["result"].get("isError")),
        "denied": ({"name": "bash", "arguments": {"command": "rm -rf /"}},
                   lambda r: "result" in r and r["result"].get("isError")),
    }
    with tempfile.TemporaryDirectory() as d:
        _, _, _, _, gateway = hop.configure("python", d, also_active=["bash"])
        servers = [start([b] + gateway) for b in bins]
        time.sleep(0.5)
        for s in servers:
            for args, check in work.values():
                s.block(args, 100, check)
        res = {(b, w): ([], []) for b in bins for w in work}
        loads = []
        for k in range(blocks):
            order = list(zip(bins, servers))
            if k % 2:
                order.reverse()
            for w, (args, check) in work.items():
                for b, s in order:
                    cpu, p50 = s.block(args, per, check)
                    res[(b, w)][0].append(cpu)
                    res[(b, w)][1].append(p50)
            loads.append(os.getloadavg()[0])
        for s in servers:
            s.p.stdin.close()
            s.p.wait(10)
        print(f"{blocks} blocks x {per} calls, load {min(loads):.1f}-{max(loads):.1f}")
        for w in work:
            for b in bins:
                cpu, p50 = res[(b, w)]
                print(f"{w:>6} {os.path.basename(b):>24}: cpu/call {statistics.median(cpu):6.1f} µs"
                      f"  p50 {statistics.median(p50):6.0f} µs")


main()
