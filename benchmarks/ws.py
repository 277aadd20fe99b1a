"""ZeroMQ over WebSocket against trizmq's own tcp, in one run.

    python -m benchmarks.ws [--repetitions N] [--quick] [--json PATH]

Rows: PUSH/PULL 64 B and 4 KiB (msgs/s) and REQ/REP 64 B (p50 and p99 µs), each
measured over ``ws://`` and over ``tcp://`` alternately (ws, tcp, ws, tcp, ...) with
the workers of ``python -m benchmarks`` (fresh processes, the receiver timing from its
first message to its last); cells are medians. The ratio is ws / tcp: above 1 is
better for throughput, below 1 for latency. Issue 16's bar: ws at least 0.5x tcp for
4 KiB PUSH/PULL.

libzmq's own ws transport is not a column: pyzmq's wheels have no ws, and the Node
binding (zeromq.js, the interop tests' peer) adds a JavaScript promise per message
on both ends, so its figures would measure zeromq.js, not the transport.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python benchmarks/ws.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.run import KIB, TZ, BenchFailure, Case, format_value, measure, settings_for

ROWS: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("pushpull-64", "PUSH/PULL 64 B", "throughput", {"pattern": "pushpull", "size": 64}, "msgs_s"),
    (
        "pushpull-4k",
        "PUSH/PULL 4 KiB",
        "throughput",
        {"pattern": "pushpull", "size": 4 * KIB},
        "msgs_s",
    ),
    ("reqrep-64-p50", "REQ/REP 64 B p50", "latency", {"pattern": "reqrep", "size": 64}, "p50_us"),
    ("reqrep-64-p99", "REQ/REP 64 B p99", "latency", {"pattern": "reqrep", "size": 64}, "p99_us"),
]


def case_for(row: tuple[str, str, str, dict[str, Any], str], transport: str) -> Case:
    row_id, label, kind, params, metric = row
    hwm = 1000 if params["size"] <= 4 * KIB else 100
    return Case(
        id=f"{row_id}-{transport}",
        label=f"{label} {transport}",
        kind=kind,
        params=dict(params, transport=transport, hwm=hwm),
        columns={TZ: (TZ, TZ)},
        metric=metric,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one short repetition (tests)")
    parser.add_argument("--json", help="write the results as JSON")
    args = parser.parse_args(argv)
    settings = settings_for("quick" if args.quick else "default")
    repetitions = 1 if args.quick else args.repetitions
    rows: list[dict[str, Any]] = []
    print("| case | trizmq ws | trizmq tcp | ws/tcp |\n|---|---:|---:|---:|", flush=True)
    with tempfile.TemporaryDirectory(prefix="trizmq-bench-ws-") as tmp:
        # p50 and p99 come from the same runs
        latency: dict[tuple[str, int], dict[str, list[dict[str, float]]]] = {}
        for row in ROWS:
            metric = row[4]
            key = (row[3]["pattern"], row[3]["size"])
            if row[2] == "latency" and key in latency:
                samples = latency[key]
            else:
                samples = {"ws": [], "tcp": []}
                for _ in range(repetitions):
                    for transport in ("ws", "tcp"):
                        try:
                            result = measure(case_for(row, transport), TZ, settings, tmp)
                        except BenchFailure as exc:
                            print(f"{row[1]} {transport}: failed: {exc}", file=sys.stderr)
                            continue
                        samples[transport].append(result)
                if row[2] == "latency":
                    latency[key] = samples
            medians = {
                t: statistics.median(r[metric] for r in results) if results else float("nan")
                for t, results in samples.items()
            }
            ratio = medians["ws"] / medians["tcp"] if medians["tcp"] else float("nan")
            rows.append(
                {"id": row[0], "label": row[1], "metric": metric, **medians, "ratio": ratio}
            )
            shown = [format_value(medians[t], metric) for t in ("ws", "tcp")]
            print(f"| {row[1]} | {shown[0]} | {shown[1]} | {ratio:.2f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
