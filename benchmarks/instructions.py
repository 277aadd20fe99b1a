"""Instructions a message costs, counted by valgrind: a change's cost where time is noise.

    python -m benchmarks.instructions --compare ../before
    python -m benchmarks.instructions --compare ../before --only curvereqrep --only pub1

On a shared machine, wall-clock rows move by ±10 % from run to run and CPU time by a
few percent; a bar of 2 or 3 % is below both. The number of instructions the CPU
executes for a message is nearly exact instead: this runs a case of
:mod:`benchmarks.cpu` (both ends in one trio run) under ``valgrind --tool=callgrind``
twice, with ``-n`` and with twice ``-n`` messages, so that the start-up (the
interpreter, the imports, the connection) cancels out of the difference, and prints
the instructions one message (a round trip, for the round-trip cases) costs. With
``--compare`` the same for the other source tree, and the ratio. Each figure is the
median of ``--repeats`` pairs; the pairs of a tree differ by well under 1 % (what the
sockets read at once varies with timing, and with it the batching).

Valgrind runs the interpreter about 50 times slower; the runs go two at a time
(``--jobs``), and load from other work does not change what they count. It does
change what large messages cost: how the kernel splits a stream of 4 KiB messages
into reads, and how many a write takes, follows the timing, and that case's count
moves by ±10 % from one sitting to the next. Read those in CPU time.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from benchmarks.cpu import CASES

#: messages a round-trip case counts as one (benchmarks.cpu runs n // 10 round trips)
ROUND_TRIPS = {"reqrep": 10, "dealerrouter": 10, "curvereqrep": 10}


def instructions(tree: str, case: str, n: int) -> int:
    """Instructions executed by ``case`` with ``n`` messages, start-up included."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        argv += [sys.executable, "-m", "benchmarks.cpu", "--run", case, "-n", str(n)]
        argv += ["--runs", "1", "--tree", tree]
        # one hash seed for every run: with a random one, dicts and sets lay out
        # differently from run to run, and start-up (a billion instructions) varies
        # by a few hundred thousand, which would not cancel out
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(argv, capture_output=True, text=True, cwd=here, timeout=3600, env=env)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode or not found:
            raise SystemExit(f"{case} in {tree} failed:\n{done.stderr[-2000:]}")
        return int(found.group(1))


def per_message(tree: str, case: str, n: int, pool: ThreadPoolExecutor) -> float:
    """Instructions a message (or round trip) costs: the difference of ``2n`` and ``n``."""
    small = pool.submit(instructions, tree, case, n)
    large = pool.submit(instructions, tree, case, 2 * n)
    return (large.result() - small.result()) / (n // ROUND_TRIPS.get(case, 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="TREE", help="the source tree before the change")
    parser.add_argument("--only", action="append", help="cases whose name contains this")
    parser.add_argument("-n", type=int, default=5000, help="messages of the shorter run")
    parser.add_argument("--repeats", type=int, default=2, help="pairs a figure is the median of")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at once")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [("after", here)] if not args.compare else [("before", args.compare), ("after", here)]
    cases = [c for c in CASES if not args.only or any(o in c for o in args.only)]
    cases = [c for c in cases if c != "libzmq2trizmq"]  # its sender runs in another process
    print("| case | " + " | ".join(f"{side}, instructions" for side, _ in trees), end="")
    print(" | ratio |" if args.compare else " |")
    print("|---|" + "---:|" * len(trees) + ("---:|" if args.compare else ""))
    with ThreadPoolExecutor(args.jobs) as pool:
        for case in cases:
            figures = []
            for _, tree in trees:
                # each repeat's two runs are submitted together, so that --jobs keep busy
                runs = [per_message(tree, case, args.n, pool) for _ in range(args.repeats)]
                figures.append(statistics.median(runs))
            row = f"| {case} | " + " | ".join(f"{f:,.0f}" for f in figures)
            ratio = f" | {figures[1] / figures[0]:.3f} |" if args.compare else " |"
            print(row + ratio, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
