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

After the table, ``wsproto alone``: what wsproto itself (no trizmq code, no I/O)
spends per binary message, a client sending (framing and masking) and a server
receiving (parsing, unmasking, one event), next to the time per message the 0.5x
bar leaves each side at the tcp rate just measured.
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


def wsproto_alone(size: int, count: int) -> dict[str, float]:
    """µs per message of ``size`` payload bytes in wsproto alone: a client's ``send``
    of a BytesMessage and a server's ``receive_data``/``events`` (best of 5)."""
    import time

    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, BytesMessage, Request

    client, server = WSConnection(ConnectionType.CLIENT), WSConnection(ConnectionType.SERVER)
    server.receive_data(client.send(Request(host="bench", target="/", subprotocols=["ZWS2.0"])))
    list(server.events())
    client.receive_data(server.send(AcceptConnection(subprotocol="ZWS2.0")))
    list(client.events())
    payload = b"\x00" + b"x" * size  # a ZWS frame: flags byte, then the body
    send_us, receive_us = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        wire = b"".join([client.send(BytesMessage(data=payload)) for _ in range(count)])
        send_us.append((time.perf_counter() - t0) / count * 1e6)
        step = 256 * KIB  # what one read of a trizmq connection takes at most
        t0 = time.perf_counter()
        done = 0
        for start in range(0, len(wire), step):
            server.receive_data(wire[start : start + step])
            for event in server.events():
                done += bool(getattr(event, "message_finished", False))
        receive_us.append((time.perf_counter() - t0) / count * 1e6)
        assert done == count, done
    return {"client_send_us": min(send_us), "server_receive_us": min(receive_us)}


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
    count = 2000 if args.quick else 20000
    alone = {f"{size} B": wsproto_alone(size, count) for size in (64, 4 * KIB)}
    tcp_4k = next(r["tcp"] for r in rows if r["id"] == "pushpull-4k")
    budget = 1e6 / (0.5 * tcp_4k) if tcp_4k == tcp_4k and tcp_4k else float("nan")
    print(
        "\nwsproto alone, µs per message "
        f"(the 0.5x bar leaves {budget:.1f} µs per side at 4 KiB):"
    )
    for size, cost in alone.items():
        print(
            f"  {size}: client send {cost['client_send_us']:.1f}, "
            f"server receive {cost['server_receive_us']:.1f}"
        )
    if args.json:
        out = {"rows": rows, "wsproto_alone": alone, "budget_us_4k": budget}
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
