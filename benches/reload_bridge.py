#!/usr/bin/env python3
"""Save-to-effect reload latency of a release binary, whole process: the
same measurement as `benches/reload.rs`, through `toolgate bridge --stdio`.

Each save rewrites the policy file in place (alternating between a version
that allows reading `notes.txt` and one that denies it, each with a
distinct comment), then asks the bridge `before` questions about reading
`notes.txt` until the answer flips. The time is from just before the write
to the first answer with the new decision: the file-system event, the quiet
period, compiling the policy, the swap and one round trip. At the end the
bridge's `status` must count exactly one applied reload per save.

    python3 benches/reload_bridge.py [SAVES] [TOOLGATE]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ALLOW = 'version: 1\nextends: ["builtin:default"]\n'
DENY = ALLOW + 'paths:\n  deny: ["notes.txt"]\n'


def main():
    saves = int(sys.argv[1]) if len(sys.argv) > 1 else 101
    binary = sys.argv[2] if len(sys.argv) > 2 else "target/release/toolgate"
    work = tempfile.mkdtemp(prefix="toolgate-reload-")
    with open(os.path.join(work, "notes.txt"), "w") as f:
        f.write("hello\n")
    os.mkdir(os.path.join(work, "policies"))
    policy = os.path.join(work, "policies", "main.yaml")
    with open(policy, "w") as f:
        f.write(ALLOW)
    bridge = subprocess.Popen(
        [binary, "bridge", "--stdio", "--policies", os.path.join(work, "policies"),
         "--workspace", work],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, bufsize=1,
    )
    next_id = 0

    def ask(request):
        nonlocal next_id
        next_id += 1
        request["id"] = next_id
        bridge.stdin.write(json.dumps(request) + "\n")
        bridge.stdin.flush()
        while True:
            answer = json.loads(bridge.stdout.readline())
            if answer.get("id") == next_id:
                return answer

    read = {"type": "before", "call_id": "r", "tool": "read", "input": {"path": "notes.txt"}}
    assert ask(dict(read))["decision"] == "allow"
    print(f"load before: {os.getloadavg()}")
    samples = []
    for i in range(1, saves + 1):
        text, want = (DENY, "deny") if i % 2 == 1 else (ALLOW, "allow")
        started = time.perf_counter()
        with open(policy, "w") as f:
            f.write(f"# revision {i}\n{text}")
        while ask(dict(read))["decision"] != want:
            if time.perf_counter() - started > 10:
                sys.exit(f"save {i} never took effect")
            time.sleep(0.0005)
        samples.append(time.perf_counter() - started)
    status = ask({"type": "status"})
    print(f"load after: {os.getloadavg()}")
    bridge.stdin.close()
    bridge.wait()
    samples.sort()
    pick = lambda q: samples[round((len(samples) - 1) * q)] * 1e3
    print(
        f"save-to-effect over {len(samples)} saves: median {pick(0.5):.1f} ms, "
        f"p90 {pick(0.9):.1f} ms, p99 {pick(0.99):.1f} ms, max {pick(1.0):.1f} ms, "
        f"mean {statistics.mean(samples) * 1e3:.1f} ms"
    )
    print(f"reloads_ok {status['reloads_ok']}, reloads_failed {status['reloads_failed']}")
    if status["reloads_ok"] != saves or status["reloads_failed"] != 0:
        sys.exit("not exactly one reload per save")


if __name__ == "__main__":
    main()
