"""ZeroMQ over WebSocket against trizmq's own tcp, in one run.

    python -m benchmarks.ws [--repetitions N] [--quick] [--json PATH]

Rows: PUSH/PULL 64 B and 4 KiB (msgs/s) and REQ/REP 64 B (p50 and p99 µs), each
measured over ``ws://`` and over ``tcp://`` alternately (ws, tcp, ws, tcp, ...) with
the workers of ``python -m benchmarks`` (fresh processes, the receiver timing from its
first message to its last); then PUSH/PULL 4 KiB over ``wss://`` (TLS with a trustme
certificate), alternating with tcp the same way. Cells are medians; the ratio is
ws / tcp: above 1 is better for throughput, below 1 for latency. Issue 42's targets:
ws/tcp at least 0.5 at 4 KiB and 0.3 at 64 B, a REQ/REP p50 at most 1.3 times tcp's,
wss/tcp at least 0.3 at 4 KiB.

libzmq's own ws transport is not a column: pyzmq's wheels have no ws, and the Node
binding (zeromq.js, the interop tests' peer) adds a JavaScript promise per message
on both ends, so its figures would measure zeromq.js, not the transport.

After the table, the codecs alone (no I/O), µs per one-frame message of 64 B and
4 KiB: trizmq's frame codec (``trizmq.zmtp.rfc6455``: a binary frame written and
read, masked from a client, unmasked from a server), the whole ZWS codec
(``ZwsConnection``: a message encoded, and a read of them parsed to messages), and
wsproto, which framed and masked before issue 42, for comparison; next to them the
time per message the 0.5x bar leaves each side at the tcp rate just measured.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
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


#: the rows over wss (TLS), each against tcp in the same way
TLS_ROWS: list[tuple[str, str, str, dict[str, Any], str]] = [
    (
        "pushpull-4k-wss",
        "PUSH/PULL 4 KiB wss",
        "throughput",
        {"pattern": "pushpull", "size": 4 * KIB},
        "msgs_s",
    ),
]


def case_for(
    row: tuple[str, str, str, dict[str, Any], str], transport: str, tls: dict[str, str]
) -> Case:
    row_id, label, kind, params, metric = row
    hwm = 1000 if params["size"] <= 4 * KIB else 100
    extra = tls if transport == "wss" else {}
    return Case(
        id=f"{row_id}-{transport}",
        label=f"{label} {transport}",
        kind=kind,
        params=dict(params, transport=transport, hwm=hwm, **extra),
        columns={TZ: (TZ, TZ)},
        metric=metric,
    )


def tls_files(directory: str) -> dict[str, str]:
    """A server certificate for 127.0.0.1 and its CA, as PEM files (trustme)."""
    import trustme

    ca = trustme.CA()
    cert = Path(directory, "server.pem")
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(cert))
    authority = Path(directory, "ca.pem")
    ca.cert_pem.write_to_path(str(authority))
    return {"tls_cert": str(cert), "tls_ca": str(authority)}


def _per_message(run: Callable[[], object], count: int) -> float:
    """µs per message of ``run``, which handles ``count`` of them: best of 5."""
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        run()
        best = min(best, (time.perf_counter() - t0) / count * 1e6)
    return best


def _reads(wire: bytes) -> list[bytes]:
    """``wire`` in reads of what one read of a trizmq connection takes at most."""
    step = 256 * KIB
    return [wire[start : start + step] for start in range(0, len(wire), step)]


def frame_codec_alone(size: int, count: int) -> dict[str, float]:
    """µs per binary frame of ``size`` + 1 payload bytes (a ZWS flag byte, then the
    body) in trizmq's frame codec alone: written (64 frames a buffer) and read, each
    side."""
    from trizmq.zmtp.rfc6455 import FrameDecoder, FrameEncoder

    body = b"x" * size
    out: dict[str, float] = {}
    for side, client in (("client", True), ("server", False)):
        encoder = FrameEncoder(client=client)

        def write(binary_into: Any = encoder.binary_into) -> None:
            for _ in range(count // 64):
                wire = bytearray()
                for _ in range(64):
                    binary_into(wire, b"\x00", body)

        out[f"{side}_send_us"] = _per_message(write, count // 64 * 64)
        wire = bytearray()
        for _ in range(count):
            encoder.binary_into(wire, b"\x00", body)
        reads = _reads(bytes(wire))

        def read(reads: list[bytes] = reads, client: bool = client) -> None:
            decoder = FrameDecoder(client=not client)
            got = sum([len(decoder.receive_data(data)) for data in reads])
            assert got >= count, got

        other = "server" if client else "client"
        out[f"{other}_receive_us"] = _per_message(read, count)
    return out


def _zws_pair() -> tuple[Any, Any]:
    """A ZWS client and server past the upgrade and the NULL handshake."""
    from trizmq.patterns.sockets import socket_type
    from trizmq.zmtp import Connection
    from trizmq.zmtp.zws import ZwsConnection

    facts = socket_type("DEALER").handshake_facts()
    client = ZwsConnection(Connection("DEALER", **facts), client=True, host="bench:1", path="/")
    server = ZwsConnection(Connection("DEALER", **facts), client=False, host="bench:1", path="/")
    server.start()
    server.receive_data(client.start())
    for _ in range(4):
        client.receive_data(server.data_to_send())
        server.receive_data(client.data_to_send())
    assert client.handshake_complete and server.handshake_complete
    return client, server


def zws_codec_alone(size: int, count: int) -> dict[str, float]:
    """µs per one-frame message of ``size`` bytes in ``ZwsConnection``: encoded (the
    runtime's message encoder, 64 messages a buffer as the writer batches them) and
    reads of them parsed to messages (by a fresh pair each time), each side."""
    frames = [b"x" * size]
    out: dict[str, float] = {}
    for side, index in (("client", 0), ("server", 1)):
        encode_into = _zws_pair()[index].message_encoder()

        def write(encode_into: Any = encode_into) -> None:
            for _ in range(count // 64):
                wire = bytearray()
                for _ in range(64):
                    encode_into(wire, frames)

        out[f"{side}_send_us"] = _per_message(write, count // 64 * 64)
        wire = bytearray()
        for _ in range(count):
            encode_into(wire, frames)
        reads = _reads(bytes(wire))

        def read(reads: list[bytes] = reads, index: int = index) -> None:
            receiver = _zws_pair()[1 - index]
            got = sum([len(receiver.receive_data(data)) for data in reads])
            assert got == count, got

        other = "server" if side == "client" else "client"
        out[f"{other}_receive_us"] = _per_message(read, count)
    return out


def wsproto_alone(size: int, count: int) -> dict[str, float]:
    """µs per message of ``size`` payload bytes in wsproto alone: a client's ``send``
    of a BytesMessage and a server's ``receive_data``/``events`` (best of 5)."""
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


def measure_row(
    row: tuple[str, str, str, dict[str, Any], str],
    transports: tuple[str, str],
    repetitions: int,
    settings: Any,
    tmp: str,
    tls: dict[str, str],
) -> dict[str, list[dict[str, float]]]:
    """``repetitions`` measurements of ``row`` on each transport, alternating."""
    samples: dict[str, list[dict[str, float]]] = {t: [] for t in transports}
    for _ in range(repetitions):
        for transport in transports:
            try:
                result = measure(case_for(row, transport, tls), TZ, settings, tmp)
            except BenchFailure as exc:
                print(f"{row[1]} {transport}: failed: {exc}", file=sys.stderr)
                result = {}
            samples[transport].append(result)
    return samples


def summarize(
    row: tuple[str, str, str, dict[str, Any], str],
    samples: dict[str, list[dict[str, float]]],
) -> dict[str, Any]:
    """A row's medians, its ratio of medians and the ratio of each alternating pair."""
    metric = row[4]
    web, tcp = samples
    medians = {
        t: statistics.median(v) if (v := [r[metric] for r in rs if r]) else float("nan")
        for t, rs in samples.items()
    }
    ratio = medians[web] / medians[tcp] if medians[tcp] else float("nan")
    pairs = [
        a[metric] / b[metric] if a and b else float("nan")
        for a, b in zip(samples[web], samples[tcp], strict=True)
    ]
    shown = [format_value(medians[t], metric) for t in (web, tcp)]
    each = ", ".join(f"{p:.2f}" for p in pairs)
    print(f"| {row[1]} | {shown[0]} | {shown[1]} | {ratio:.2f} | {each} |", flush=True)
    return {
        "id": row[0],
        "label": row[1],
        "metric": metric,
        "ws": medians[web],
        "tcp": medians[tcp],
        "ratio": ratio,
        "pairs": pairs,
        "samples": {t: [r.get(metric) for r in rs] for t, rs in samples.items()},
    }


def print_codec(title: str, costs: dict[str, dict[str, float]]) -> None:
    print(title)
    for size, cost in costs.items():
        sides = ", ".join(
            f"{name.replace('_us', '').replace('_', ' ')} {value:.2f}"
            for name, value in cost.items()
        )
        print(f"  {size}: {sides}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one short repetition (tests)")
    parser.add_argument("--json", help="write the results as JSON")
    args = parser.parse_args(argv)
    settings = settings_for("quick" if args.quick else "default")
    repetitions = 1 if args.quick else args.repetitions
    rows: list[dict[str, Any]] = []
    print(
        "| case | trizmq ws | trizmq tcp | ws/tcp | each pair |\n|---|---:|---:|---:|---|",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="trizmq-bench-ws-") as tmp:
        tls = tls_files(tmp)
        # p50 and p99 come from the same runs
        latency: dict[tuple[str, int], dict[str, list[dict[str, float]]]] = {}
        for row in ROWS:
            key = (row[3]["pattern"], row[3]["size"])
            if row[2] == "latency" and key in latency:
                samples = latency[key]
            else:
                samples = measure_row(row, ("ws", "tcp"), repetitions, settings, tmp, tls)
                if row[2] == "latency":
                    latency[key] = samples
            rows.append(summarize(row, samples))
        for row in TLS_ROWS:
            samples = measure_row(row, ("wss", "tcp"), repetitions, settings, tmp, tls)
            rows.append(summarize(row, samples))
    count = 2000 if args.quick else 20000
    sizes = (64, 4 * KIB)
    frames = {f"{size} B": frame_codec_alone(size, count) for size in sizes}
    zws = {f"{size} B": zws_codec_alone(size, count) for size in sizes}
    alone = {f"{size} B": wsproto_alone(size, count) for size in sizes}
    tcp_4k = next(r["tcp"] for r in rows if r["id"] == "pushpull-4k")
    budget = 1e6 / (0.5 * tcp_4k) if tcp_4k == tcp_4k and tcp_4k else float("nan")
    print(f"\nthe 0.5x bar leaves {budget:.1f} µs per side at 4 KiB; µs per message:")
    print_codec("frame codec alone (trizmq.zmtp.rfc6455):", frames)
    print_codec("ZWS codec (ZwsConnection, frames to messages):", zws)
    print_codec("wsproto alone (before issue 42):", alone)
    if args.json:
        out = {
            "rows": rows,
            "frame_codec_alone": frames,
            "zws_codec": zws,
            "wsproto_alone": alone,
            "budget_us_4k": budget,
        }
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
