"""The compression table: plain tcp against lz4+tcp and zstd+tcp, trizmq and omq.rs.

``python -m benchmarks.compression`` runs PUSH -> PULL of 1 KiB messages, a
compressible payload (JSON-like records) and an incompressible one (random bytes),
over each of ``tcp://``, ``lz4+tcp://`` and ``zstd+tcp://``, on two links:

* loopback, sender and receiver in two processes of this machine;
* a link slowed to 10 Mbit: two network namespaces made for the run (``trzc-a``,
  ``trzc-b``) joined by a veth pair whose sending end is shaped with ``tc ... tbf
  rate 10mbit``; their addresses exist in those namespaces only, and both are
  removed at the end. It needs root (``ip netns``, ``tc``); without it the rows are
  left out, and the table says so.

Each row is trizmq (both ends) and, where an omq interpreter is found
(``tests/omq_python.py``: ``.venv-omq`` or ``TRIZMQ_OMQ_PYTHON``), omq.rs (pyomq, both
ends, auto-training off) on the same link. Throughput is what the receiver
measured from its first message to its last; the bytes on the wire per message
are the sending interface's (the veth's ``tx_bytes``, TCP/IP headers included) on
the slowed link, and trizmq's own ``wire_bytes_sent`` (message parts only) on
loopback. Options: ``--messages N`` (loopback; the slowed link sends a tenth),
``--only loopback|slow``, ``--markdown`` (the table as docs/performance.md has it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE = 1024
SCHEMES = ("tcp", "lz4+tcp", "zstd+tcp")
NAMESPACES = ("trzc-a", "trzc-b")
#: the two ends of the veth pair, each in its namespace, and their addresses (which
#: exist in those two namespaces only)
ENDS = (("trzc-va", "10.253.7.1"), ("trzc-vb", "10.253.7.2"))


def payload(kind: str, count: int) -> list[bytes]:
    """``count`` messages of :data:`SIZE` bytes: records that compress, or noise."""
    rng = random.Random(11)
    if kind == "noise":
        return [rng.randbytes(SIZE) for _ in range(min(count, 256))]
    out = []
    for _ in range(min(count, 256)):
        record = b""
        while len(record) < SIZE:
            record += b'{"sensor": %d, "temp": %d.%d, "unit": "celsius", "status": "ok"} ' % (
                rng.randrange(100),
                rng.randrange(40),
                rng.randrange(10),
            )
        out.append(record[:SIZE])
    return out


# -- the two ends, each run in a process of its own ------------------------------------------

TRIZMQ_END = r"""
import sys, time, json, trio, trizmq
sys.path.insert(0, {root!r})
from benchmarks.compression import payload
role, endpoint, kind, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
async def main():
    if role == "recv":
        async with trizmq.Pull(rcvhwm=0) as pull:
            bound = await pull.bind(endpoint)
            print(json.dumps({{"ready": bound}}), flush=True)
            await pull.recv()
            start = time.perf_counter()
            for _ in range(count - 1):
                await pull.recv()
            elapsed = time.perf_counter() - start
            print(json.dumps({{"elapsed": elapsed}}), flush=True)
    else:
        messages = payload(kind, count)
        async with trizmq.Push(sndhwm=1000, linger=None) as push:
            await push.connect(endpoint)
            for i in range(count):
                await push.send(messages[i % len(messages)])
        stats = push.stats()  # closed: every message written (linger None)
        figures = {{"payload": stats.bytes_sent, "wire": stats.wire_bytes_sent}}
        print(json.dumps(figures), flush=True)
trio.run(main)
"""

OMQ_END = r"""
import sys, time, json, random
sys.path.insert(0, {root!r})
import pyomq
from benchmarks.compression import payload
role, endpoint, kind, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ctx = pyomq.Context()
if role == "recv":
    s = ctx.socket(pyomq.PULL); s.compression_auto_train = 0; s.rcvhwm = 0
    s.bind(endpoint)
    bound = s.last_endpoint
    bound = bound.decode() if isinstance(bound, bytes) else bound
    print(json.dumps({{"ready": bound}}), flush=True)
    s.recv()
    start = time.perf_counter()
    for _ in range(count - 1):
        s.recv()
    print(json.dumps({{"elapsed": time.perf_counter() - start}}), flush=True)
else:
    messages = payload(kind, count)
    s = ctx.socket(pyomq.PUSH); s.compression_auto_train = 0; s.sndhwm = 1000
    s.connect(endpoint)
    for i in range(count):
        s.send(messages[i % len(messages)])
    s.close(linger=-1)
    print(json.dumps({{}}), flush=True)
"""


def _omq_python() -> str | None:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from omq_python import omq_python
    finally:
        sys.path.pop(0)
    return omq_python()


def _ns(namespace: str | None) -> list[str]:
    return ["ip", "netns", "exec", namespace] if namespace else []


def _tx_bytes(namespace: str | None, device: str | None) -> int:
    if device is None:
        return 0
    out = subprocess.run(
        [*_ns(namespace), "cat", f"/sys/class/net/{device}/statistics/tx_bytes"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def run_case(
    implementation: str,
    scheme: str,
    kind: str,
    count: int,
    *,
    slow: bool,
    interpreter: str,
) -> dict[str, float]:
    """One row's figures: messages/s, payload MB/s, wire bytes a message."""
    source = (TRIZMQ_END if implementation == "trizmq" else OMQ_END).format(root=str(ROOT))
    host = ENDS[1][1] if slow else "127.0.0.1"
    endpoint = f"{scheme}://{host}:0"
    receiver_ns, sender_ns = (NAMESPACES[1], NAMESPACES[0]) if slow else (None, None)
    receiver = subprocess.Popen(
        [*_ns(receiver_ns), interpreter, "-c", source, "recv", endpoint, kind, str(count)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert receiver.stdout is not None
        endpoint = json.loads(receiver.stdout.readline())["ready"]  # its port resolved
        device = ENDS[0][0] if slow else None
        before = _tx_bytes(sender_ns, device)
        sender = subprocess.run(
            [*_ns(sender_ns), interpreter, "-c", source, "send", endpoint, kind, str(count)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        done = json.loads(receiver.stdout.readline())
        after = _tx_bytes(sender_ns, device)
    finally:
        receiver.kill()
        receiver.wait()
    sent = json.loads(sender.stdout.strip().splitlines()[-1])
    elapsed = max(done["elapsed"], 1e-9)
    rate = (count - 1) / elapsed
    wire = (after - before) / count if slow else sent.get("wire", 0) / count
    return {"rate": rate, "mbps": rate * SIZE / 1e6, "wire": wire}


@contextlib.contextmanager
def slowed_link() -> Iterator[None]:
    """The two namespaces and their 10 Mbit veth pair, removed at the end."""

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    for namespace in NAMESPACES:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
    try:
        for namespace in NAMESPACES:
            ip("netns", "add", namespace)
        (a, a_address), (b, b_address) = ENDS
        ip(
            "link",
            "add",
            a,
            "netns",
            NAMESPACES[0],
            "type",
            "veth",
            "peer",
            "name",
            b,
            "netns",
            NAMESPACES[1],
        )
        for namespace, device, address in (
            (NAMESPACES[0], a, a_address),
            (NAMESPACES[1], b, b_address),
        ):
            ip("-n", namespace, "addr", "add", f"{address}/30", "dev", device)
            ip("-n", namespace, "link", "set", device, "up")
            ip("-n", namespace, "link", "set", "lo", "up")
        subprocess.run(
            [
                "ip",
                "netns",
                "exec",
                NAMESPACES[0],
                "tc",
                "qdisc",
                "add",
                "dev",
                a,
                "root",
                "tbf",
                "rate",
                "10mbit",
                "burst",
                "32kbit",
                "latency",
                "400ms",
            ],
            check=True,
            capture_output=True,
        )
        yield
    finally:
        for namespace in NAMESPACES:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def can_slow_a_link() -> str | None:
    """None where the slowed link can be made, else why not."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"no {tool}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--only", choices=("loopback", "slow"))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    implementations = {"trizmq": sys.executable}
    omq = _omq_python()
    if omq is not None:
        implementations["omq.rs"] = omq
    links = [("loopback", False), ("10 Mbit", True)]
    if args.only:
        links = [link for link in links if (link[0] == "loopback") == (args.only == "loopback")]
    why_not = can_slow_a_link()
    rows: list[tuple[str, str, str, str, dict[str, float]]] = []
    for link, slow in links:
        if slow and why_not is not None:
            print(f"# the 10 Mbit rows are left out: {why_not}", file=sys.stderr)
            continue
        count = args.messages // 10 if slow else args.messages
        with slowed_link() if slow else contextlib.nullcontext():
            for kind in ("records", "noise"):
                for scheme in SCHEMES:
                    for name, interpreter in implementations.items():
                        figures = run_case(
                            name, scheme, kind, count, slow=slow, interpreter=interpreter
                        )
                        rows.append((link, kind, scheme, name, figures))
                        print(
                            f"{link:9} {kind:8} {scheme:9} {name:7} {figures['rate']:10,.0f} msg/s"
                            f" {figures['mbps']:7.2f} MB/s  {figures['wire']:7.1f} B/msg",
                            file=sys.stderr,
                            flush=True,
                        )
    if args.markdown:
        print(
            "| link | payload | transport | implementation | messages/s | payload MB/s "
            "| wire bytes a message |"
        )
        print("|---|---|---|---|---:|---:|---:|")
        for link, kind, scheme, name, f in rows:
            wire = "-" if not f["wire"] else f"{f['wire']:,.0f}"
            rate = f"{f['rate']:,.0f} | {f['mbps']:.2f}"
            print(f"| {link} | {kind} | {scheme} | {name} | {rate} | {wire} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
