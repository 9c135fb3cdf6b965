#!/usr/bin/env python3
"""Generates decision logs for timing `toolgate replay` (docs/performance.md).

    python3 benches/replay_logs.py distinct LINES OUT
    python3 benches/replay_logs.py zipf LINES OUT [VOCABULARY] [EXPONENT]

Both write toolgate decision-log lines (what `serve --decision-log` writes),
half `bash` calls over 10 command shapes and half `read` calls over 6 path
shapes, every call recorded as allowed.

- `distinct`: no two calls alike (the shape's operand is the line number):
  what a replay costs when nothing repeats.
- `zipf`: calls drawn from a vocabulary of VOCABULARY different calls
  (default 100,000) with Zipf-distributed frequencies (exponent default
  1.1; rank r drawn with weight 1/r^EXPONENT): a few calls (`git status`,
  the same test run, the same files) make up most of the log, as in real
  agent logs. The number of different calls drawn is printed on stderr.

Deterministic (fixed seed), so runs compare the same file.
"""

import bisect
import json
import random
import sys

BASH = [
    "cargo test -p dir{n}",
    "git status --short dir{n}",
    "git diff HEAD~1 -- dir{n}",
    "rm -rf dir{n}",
    "npm install dir{n}",
    "ls -la dir{n}",
    "echo hi > dir{n}",
    "git push origin dir{n}",
    "make -C dir{n}",
    "cat dir{n} | grep fn",
]
READ = [
    "docs/a{n}.md",
    "README{n}.md",
    ".env.{n}",
    "src/main{n}.rs",
    "lock/Cargo{n}.lock",
    "src/lib/{n}.rs",
]


def call(index, n):
    """Call number `index` of the shape cycle with operand `n`."""
    if index % 2 == 0:
        return "bash", {"command": BASH[(index // 2) % len(BASH)].format(n=n)}
    return "read", {"path": READ[(index // 2) % len(READ)].format(n=n)}


def line(i, tool, arguments):
    return json.dumps(
        {
            "time": "2026-11-24T09:00:00.000Z",
            "id": str(i),
            "tool": tool,
            "decision": "allow",
            "rule": None,
            "reason": "r",
            "policy_version": "v",
            "duration_ms": 0.1,
            "is_error": False,
            "result_rule": None,
            "arguments": arguments,
        }
    )


def main():
    kind, lines, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(15)
    with open(out, "w") as f:
        if kind == "distinct":
            for i in range(lines):
                tool, args = call(i, i)
                f.write(line(i, tool, args) + "\n")
        elif kind == "zipf":
            vocabulary = int(sys.argv[4]) if len(sys.argv) > 4 else 100_000
            exponent = float(sys.argv[5]) if len(sys.argv) > 5 else 1.1
            total, cumulative = 0.0, []
            for r in range(1, vocabulary + 1):
                total += 1.0 / r**exponent
                cumulative.append(total)
            # Ranks are shuffled over the calls, so the frequent ones are
            # of every shape.
            calls = list(range(vocabulary))
            rng.shuffle(calls)
            seen = set()
            for i in range(lines):
                rank = bisect.bisect_left(cumulative, rng.random() * total)
                c = calls[min(rank, vocabulary - 1)]
                seen.add(c)
                tool, args = call(c, c)
                f.write(line(i, tool, args) + "\n")
            print(f"{len(seen)} different calls in {lines} lines", file=sys.stderr)
        else:
            sys.exit("kind: distinct or zipf")


if __name__ == "__main__":
    main()
