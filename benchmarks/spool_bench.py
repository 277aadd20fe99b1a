"""Ingestion with one spool and with two: rows per second into the logs (64-byte payloads).

    python benchmarks/spool_bench.py [--rows 1000000] [--repetitions 3] [--no-fsync]
                                     [--log DIR_OR_URI] [--json out.json]

For each repetition, interleaved, with 1 and then 2 spools (``python -m
trizmq.spark.spool``, each its own process and its own log under ``--log``, default a
temporary directory; an ``s3://`` URI works the same with the ``AWS_*`` variables
set): one libzmq (pyzmq) PUSH, in its own process, connects to every spool (ZeroMQ
round-robins across them) and sends ``--rows`` messages; the rate is rows over the time
from the first send until the spools' logs hold every row (their heads, durable: with
fsync unless ``--no-fsync``). Nothing of Spark runs: this is the ingest side, the
ceiling a query's source reads from. Needs no Java.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from trizmq.spark import _wal  # noqa: E402

SENDER = """
import sys, time, zmq
rows, endpoints = int(sys.argv[1]), sys.argv[2:]
ctx = zmq.Context()
push = ctx.socket(zmq.PUSH)
push.setsockopt(zmq.SNDHWM, 100000)
for e in endpoints:
    push.connect(e)
time.sleep(0.5)  # every spool connected, so that none is skipped by the round-robin
print(time.time(), flush=True)
payload = b"x" * 64
send = push.send
for _ in range(rows):
    send(payload)
push.close(linger=-1)
ctx.term()
"""


def _spool(log: str, fsync: bool) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, "-m", "trizmq.spark.spool", "--endpoint", "tcp://127.0.0.1:0",
            "--dir", log, "--hwm", "100000"]
    if not fsync:
        args.append("--no-fsync")
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        raise RuntimeError(f"the spool did not start: {line!r}")
    return proc, line.split()[1]


def run(spools: int, rows: int, base: str, fsync: bool) -> float:
    """Rows per second into ``spools`` logs."""
    logs = [f"{base.rstrip('/')}/{uuid.uuid4().hex[:8]}-{i}" for i in range(spools)]
    procs = [_spool(log, fsync) for log in logs]
    try:
        sender = subprocess.Popen(
            [sys.executable, "-c", SENDER, str(rows), *[e for _, e in procs]],
            stdout=subprocess.PIPE, text=True,
        )
        assert sender.stdout is not None
        started = float(sender.stdout.readline())
        deadline = time.monotonic() + 600
        while sum(_wal.read_head(log) for log in logs) < rows:
            if time.monotonic() > deadline:
                raise RuntimeError("the spools did not log every row in 600 s")
            time.sleep(0.005)
        elapsed = time.time() - started
        sender.communicate(timeout=60)
        heads = [_wal.read_head(log) for log in logs]
        if spools > 1 and min(heads) == 0:
            raise RuntimeError(f"a spool got nothing: {heads}")
        return rows / elapsed
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in procs:
            proc.communicate(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--no-fsync", action="store_true")
    parser.add_argument("--log", help="where the logs go (a directory or a URI)")
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.log or tmp
        results: dict[int, list[float]] = {1: [], 2: []}
        for rep in range(args.repetitions):
            for n in (1, 2):
                rate = run(n, args.rows, base, not args.no_fsync)
                results[n].append(rate)
                print(f"repetition {rep + 1}: {n} spool(s) {rate / 1000:.0f}k rows/s", flush=True)
    summary: dict[str, Any] = {
        f"{n}_spools": {"runs": runs, "median": statistics.median(runs)}
        for n, runs in results.items()
    }
    one, two = summary["1_spools"]["median"], summary["2_spools"]["median"]
    summary["ratio_2_to_1"] = two / one
    print(f"median: 1 spool {one / 1000:.0f}k rows/s, 2 spools {two / 1000:.0f}k rows/s, "
          f"ratio {two / one:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
