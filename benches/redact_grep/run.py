#!/usr/bin/env python3
"""`toolgate redact` next to GNU `grep -E -o -f` on the same formats, as
whole processes, alternating runs so both see the same machine load.

Usage (from the repository root, after `cargo build --release` and
`TOOLGATE_BENCH_CORPUS=DIR cargo bench --bench redact -- --test`, which
writes DIR/corpus.txt, DIR/clean.txt, DIR/patterns22.ere and
DIR/policy22.yaml):

    python3 benches/redact_grep/run.py DIR [RUNS] [TOOLGATE...]

(TOOLGATE defaults to target/release/toolgate; give several binaries, e.g.
a build before and after a change, to time them all in the same
alternating runs.)

Each run reads the file from the page cache (read once before timing) on
stdin and writes into a pipe that this script reads and discards — not to
/dev/null: GNU grep notices an output of /dev/null and stops at the first
match, as with `-q`, which would time nothing. `LC_ALL=C` for grep (byte
semantics, its fastest mode). CPU time is the child's own (`wait4`). Prints, per input and command, the median wall time and CPU time
(user + system) of the runs and the throughput over the file's size, the
load average before and after, and checks that both find the same secrets
(grep's matches and toolgate's redactions, counted and compared text by
text on the corpus).
"""

import os
import statistics
import subprocess
import sys
import time


def timed(argv, stdin_path, env=None):
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, env=env)
        sink = bytearray(1 << 20)
        while child.stdout.readinto(sink):
            pass
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    # grep says 1 when nothing matched.
    if child.returncode not in (0, 1):
        sys.exit(f"{argv[0]} failed: {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    corpus_dir = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    toolgates = sys.argv[3:] or ["target/release/toolgate"]
    patterns = os.path.join(corpus_dir, "patterns22.ere")
    policy = os.path.join(corpus_dir, "policy22.yaml")
    grep_env = dict(os.environ, LC_ALL="C")
    commands = {"grep -E -o -f patterns22.ere": (["grep", "-E", "-o", "-f", patterns], grep_env)}
    for toolgate in toolgates:
        name = f"{os.path.basename(toolgate)} redact"
        commands[name] = ([toolgate, "redact", "--policies", policy], None)
    print(f"load before: {os.getloadavg()}")
    for name in ["clean.txt", "corpus.txt"]:
        path = os.path.join(corpus_dir, name)
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            f.read()
        results = {c: [] for c in commands}
        for _ in range(runs):
            for c, (argv, env) in commands.items():
                results[c].append(timed(argv, path, env))
        print(f"\n{name} ({size:,} bytes), {runs} alternating runs each")
        medians = {}
        for c, samples in results.items():
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            medians[c] = (wall, cpu)
            print(
                f"  {c:30} wall {wall * 1e3:8.1f} ms ({size / wall / 1e9:5.2f} GB/s)"
                f"  cpu {cpu * 1e3:8.1f} ms ({size / cpu / 1e9:5.2f} GB/s)"
            )
        (gw, gc), *rest = medians.values()
        for c, (tw, tc) in list(medians.items())[1:]:
            print(f"  {c} vs grep: {gw / tw:.2f}x by wall time, {gc / tc:.2f}x by CPU time")
    print(f"\nload after: {os.getloadavg()}")

    # Same secrets: every grep match is redacted by toolgate, and the counts agree.
    corpus = os.path.join(corpus_dir, "corpus.txt")
    toolgate = toolgates[-1]
    found = subprocess.run(
        ["grep", "-E", "-o", "-f", patterns, corpus], env=grep_env, capture_output=True, check=True
    ).stdout.decode().splitlines()
    with open(corpus, "rb") as stdin:
        redacted = subprocess.run(
            [toolgate, "redact", "--policies", policy], stdin=stdin, capture_output=True, check=True
        ).stdout.decode()
    markers = redacted.count("[REDACTED:")
    leaked = [s for s in set(found) if s in redacted]
    print(f"grep matches: {len(found)}, toolgate redactions: {markers}, grep matches left in toolgate's output: {len(leaked)}")
    if len(found) != markers or leaked:
        sys.exit("the two do not find the same secrets")


if __name__ == "__main__":
    main()
