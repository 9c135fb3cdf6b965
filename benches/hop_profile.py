"""Runs N proxied calls through one toolgate binary started under a prefix
command, for counting what a hop costs inside toolgate:

    python3 benches/hop_profile.py BIN N [python|everything] -- PREFIX...

For example, instructions per call with callgrind (per call = the
difference between runs of 2,000 and 1,000 calls, divided by 1,000, so the
start-up cancels out):

    python3 benches/hop_profile.py target/release/toolgate 1000 python -- \
        valgrind --tool=callgrind --callgrind-out-file=cg.1000.out

The upstream and the gateway's configuration are set up as in
benches/upstream_hop.py (the same `fake__echo` / `everything__echo`).
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upstream_hop as hop  # noqa: E402


def main():
    args = sys.argv[1:]
    prefix = args[args.index("--") + 1:] if "--" in args else []
    args = args[: args.index("--")] if "--" in args else args
    if len(args) < 2:
        sys.exit(__doc__)
    binary, n = args[0], int(args[1])
    kind = args[2] if len(args) > 2 else "python"
    with tempfile.TemporaryDirectory() as d:
        name, _, tool, arguments, gateway = hop.configure(kind, d)
        p50, rate, cpu = hop.run(prefix + [binary] + gateway, name + "__" + tool, arguments, n)
        print(f"{n} calls: p50 {p50:.0f} µs, {rate:.0f} calls/s (under {' '.join(prefix) or 'no prefix'})")


if __name__ == "__main__":
    main()
