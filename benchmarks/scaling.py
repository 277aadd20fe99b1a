"""Scaling: what a crowd of peers costs trizmq, side by side with libzmq (pyzmq).

    python -m benchmarks.scaling                 # every row, about four minutes
    python -m benchmarks.scaling --quick         # a small subset, for tests
    python -m benchmarks.scaling --only idle --json out.json

Each row measures the socket under test, trizmq or pyzmq, in a process of its own,
against the same load from pyzmq helper processes, interleaved (trizmq, pyzmq,
trizmq, ...) and reported as medians with the ratio trizmq / libzmq. The rows are
measured in rounds, each repetition every row once, and the figures the scaling
issue compares within trizmq (its rate with idle peers over its rate with none,
the publisher's CPU per extra subscriber) are worked out round by round and
printed after the table, with their median:

* **idle peers**: a PULL (or a ROUTER) bound on tcp with P idle peers connected
  (PUSH or DEALER sockets in helper processes, each of which sent one greeting
  message, so that the receiver knows they are all there) and one busy peer
  sending 64 B messages as fast as it can; messages received per second.
* **idle peers, memory**: the same receiver with P idle peers and no busy one; its
  resident set once every peer has greeted less its resident set once bound, per
  peer (bytes; Linux's VmRSS after a garbage collection).
* **idle peers, round trips**: a REP bound on tcp with P idle REQ peers (in helper
  processes; each asked once and got its answer) and one REQ client timing round
  trips of 64 B; the median round trip, µs (lower is better).
* **fan-in**: K PUSH processes -> one PULL; messages received per second in all,
  counted once every sender has greeted (all of them are sending).
* **fan-out**: one PUB -> K SUB sockets (in up to four helper processes);
  deliveries per second in all, the PUB's CPU time per message published (its run
  time, and the time the kernel charges it, which includes the loopback network
  stack's work it ran) and per message delivered, and the share of (published x K)
  that was delivered: a PUB
  whose subscribers cannot keep up drops at its high-water mark, which makes a
  published message cheaper without delivering it (libzmq's PUB, publishing faster
  than its SUBs take, delivers about half at K = 16; trizmq's, slower, all).
* **subscription lengths**: one PUB -> one SUB that holds prefixes of L = 1 / 8 /
  64 distinct lengths, of which only the longest matches the messages (one-frame
  64 B messages, matched afresh each time); deliveries per second.
* **connect**: 1,000 DEALERs (one helper process) connect to a bound ROUTER and
  each sends one message; seconds from the first connect to the last message.

trizmq receives with ``recv_many`` and publishes with ``send_many``; pyzmq uses its
plain blocking calls. The receiving side is measured for ``--duration`` seconds
from its first message (after the greetings).
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

Spec = dict[str, Any]
SIZE = 64
GREETING = b"hello"


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit; return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def rss_kib() -> int:
    """This process's resident set now, KiB (Linux: /proc/self/status)."""
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise OSError("no VmRSS in /proc/self/status")


def peer_memory(before: int, greetings: int) -> dict[str, float]:
    """What the process grew by since ``before`` (KiB), and per connected peer (bytes)."""
    grown = float(rss_kib() - before)
    return {"rss_grown_kib": grown, "bytes_per_peer": grown * 1024 / max(greetings, 1)}


# ---------------------------------------------------------------------------- helpers
# Helper processes are pyzmq only: the same load whichever implementation is measured.


def zmq_context(sockets: int) -> Any:
    import zmq

    ctx = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, sockets + 64)
    return ctx


def helper_idle(conn: Connection, spec: Spec) -> None:
    """``count`` idle PUSH or DEALER sockets: each connects and sends one greeting."""
    import zmq

    raise_fd_limit()
    ctx = zmq_context(spec["count"])
    kind = zmq.DEALER if spec["kind"] == "router" else zmq.PUSH
    socks = []
    for _ in range(spec["count"]):
        sock = ctx.socket(kind)
        sock.linger = 0
        sock.connect(spec["endpoint"])
        sock.send(GREETING)
        socks.append(sock)
    conn.send(("connected", None))
    conn.recv()  # stop
    for sock in socks:
        sock.close()
    ctx.term()


def helper_idle_req(conn: Connection, spec: Spec) -> None:
    """``count`` REQ sockets: each connects, asks once and gets its answer, then stays
    quiet."""
    import zmq

    raise_fd_limit()
    ctx = zmq_context(spec["count"])
    socks = []
    for _ in range(spec["count"]):
        sock = ctx.socket(zmq.REQ)
        sock.linger = 0
        sock.connect(spec["endpoint"])
        sock.send(GREETING)
        socks.append(sock)
    for sock in socks:
        sock.recv()
    conn.send(("connected", None))
    conn.recv()  # stop
    for sock in socks:
        sock.close()
    ctx.term()


def helper_client(conn: Connection, spec: Spec) -> None:
    """One REQ timing round trips of 64 B for ``duration`` s; the median, µs. An
    empty request at the end tells the server to stop."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    sock.connect(spec["endpoint"])
    payload = b"x" * SIZE
    for _ in range(200):  # warm-up
        sock.send(payload)
        sock.recv()
    clock = time.perf_counter_ns
    samples: list[int] = []
    deadline = clock() + int(spec["duration"] * 1e9)
    while True:
        t = clock()
        sock.send(payload)
        sock.recv()
        now = clock()
        samples.append(now - t)
        if now >= deadline:
            break
    sock.send(b"")
    sock.recv()
    conn.send(("result", {"p50": statistics.median(samples) / 1e3}))
    sock.close()
    ctx.term()


def helper_sender(conn: Connection, spec: Spec) -> None:
    """One PUSH or DEALER sending 64 B messages as fast as the receiver takes them
    (blocking sends, with a timeout so that it notices when to stop)."""
    import zmq

    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER if spec["kind"] == "router" else zmq.PUSH)
    sock.linger = 0
    sock.sndtimeo = 100
    sock.connect(spec["endpoint"])
    if spec.get("greet"):
        sock.send(GREETING)
    conn.send(("connected", None))
    msg = b"x" * SIZE
    send = sock.send
    while not conn.poll():
        try:
            for _ in range(1024):
                send(msg)
        except zmq.Again:
            pass
    sock.close()
    ctx.term()


def prefixes_of(lengths: int) -> list[bytes]:
    """``lengths`` prefixes of the lengths 1 to ``lengths``, of which only the longest
    (``b"x" * lengths``) matches the benchmark's messages: a matcher that tries every
    length in use tries them all for every message."""
    return [bytes([0x80 + i]) * (i + 1) for i in range(lengths - 1)] + [b"x" * lengths]


def helper_subscribers(conn: Connection, spec: Spec) -> None:
    """``count`` SUB sockets subscribed to everything (or to ``prefixes``); counts
    what they get."""
    import zmq

    raise_fd_limit()
    ctx = zmq_context(spec["count"])
    poller = zmq.Poller()
    socks = []
    for _ in range(spec["count"]):
        sock = ctx.socket(zmq.SUB)
        sock.rcvhwm = 10_000
        sock.linger = 0
        for prefix in spec.get("prefixes", [b""]):
            sock.setsockopt(zmq.SUBSCRIBE, prefix)
        sock.connect(spec["endpoint"])
        poller.register(sock, zmq.POLLIN)
        socks.append(sock)
    conn.send(("connected", None))
    received = 0
    first = last = 0.0
    while not conn.poll():
        for sock, _ in poller.poll(50):
            while True:
                try:
                    sock.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                received += 1
        if received and not first:
            first = time.monotonic()
        last = time.monotonic()
    conn.recv()
    conn.send(("result", {"received": received, "first": first, "last": last}))
    for sock in socks:
        sock.close()
    ctx.term()


# -------------------------------------------------------------------- measured sides


def tz_receiver(conn: Connection, spec: Spec) -> None:
    """A trizmq PULL or ROUTER: greetings first, then ``duration`` s of counting."""
    import trio

    import trizmq

    raise_fd_limit()

    async def main() -> None:
        cls = trizmq.Router if spec["kind"] == "router" else trizmq.Pull
        # a server that expects a burst of thousands of peers sizes its handshake
        # slots for it: with the default 100, on two busy cores, a handshake may be
        # evicted after its peer has sent its first message (libzmq has no such
        # limit; see docs/security.md)
        slots = max(100, spec["greetings"] + 64)
        async with cls(bind="tcp://127.0.0.1:0", rcvhwm=1000, max_handshakes=slots) as sock:
            before = rss_kib()
            conn.send(("ready", sock.statistics()["bound"][0]))
            greetings = spec["greetings"]
            while greetings:
                for msg in await sock.recv_many():
                    if msg[-1] == GREETING:
                        greetings -= 1
            set_up = time.monotonic()
            conn.send(("greeted", set_up))
            if spec.get("rss"):
                conn.send(("rss", peer_memory(before, greetings=spec["greetings"])))
            if not spec["duration"]:
                return
            count = 0
            await sock.recv_many()
            t0 = time.monotonic()
            deadline = t0 + spec["duration"]
            while True:
                batch = await sock.recv_many()
                count += len(batch)
                now = time.monotonic()
                if now >= deadline:
                    break
            conn.send(("result", {"rate": count / (now - t0)}))

    trio.run(main)


def tz_rep_server(conn: Connection, spec: Spec) -> None:
    """A trizmq REP echoing every request until an empty one."""
    import trio

    import trizmq

    raise_fd_limit()

    async def main() -> None:
        slots = max(100, spec["idle"] + 64)  # sized for the burst, as tz_receiver's
        async with trizmq.Rep(bind="tcp://127.0.0.1:0", max_handshakes=slots) as sock:
            conn.send(("ready", sock.statistics()["bound"][0]))
            while True:
                msg = await sock.recv()
                await sock.send(msg)
                if not msg:
                    break
            await trio.sleep(0.05)  # the last reply leaves before linger drops it

    trio.run(main)


def zmq_rep_server(conn: Connection, spec: Spec) -> None:
    """The same with pyzmq."""
    import zmq

    raise_fd_limit()
    ctx = zmq_context(spec["idle"] + 64)
    sock = ctx.socket(zmq.REP)
    sock.bind("tcp://127.0.0.1:*")
    conn.send(("ready", sock.getsockopt(zmq.LAST_ENDPOINT).decode()))
    while True:
        msg = sock.recv()
        sock.send(msg)
        if not msg:
            break
    sock.close(linger=1000)
    ctx.term()


def zmq_receiver(conn: Connection, spec: Spec) -> None:
    """The same with pyzmq."""
    import zmq

    raise_fd_limit()
    ctx = zmq_context(spec["greetings"] + 64)
    sock = ctx.socket(zmq.ROUTER if spec["kind"] == "router" else zmq.PULL)
    sock.rcvhwm = 1000
    sock.linger = 0
    sock.bind("tcp://127.0.0.1:*")
    before = rss_kib()
    conn.send(("ready", sock.getsockopt(zmq.LAST_ENDPOINT).decode()))
    greetings = spec["greetings"]
    router = spec["kind"] == "router"
    while greetings:
        msg = sock.recv_multipart() if router else [sock.recv()]
        if msg[-1] == GREETING:
            greetings -= 1
    conn.send(("greeted", time.monotonic()))
    if spec.get("rss"):
        conn.send(("rss", peer_memory(before, greetings=spec["greetings"])))
    if spec["duration"]:
        recv = sock.recv_multipart if router else sock.recv
        recv()
        count = 0
        t0 = time.monotonic()
        deadline = t0 + spec["duration"]
        while True:
            for _ in range(256):
                recv()
            count += 256
            now = time.monotonic()
            if now >= deadline:
                break
        conn.send(("result", {"rate": count / (now - t0)}))
    sock.close()
    ctx.term()


def publisher_result(sent: int, cpu: float, times0: os.times_result) -> dict[str, float]:
    """A publisher's count and CPU a message, twice: its run time (``process_time``)
    and the kernel's account (``os.times``, which also charges it the network
    stack's software interrupts it ran: on loopback, much of the receivers' TCP)."""
    times1 = os.times()
    charged = times1.user - times0.user + times1.system - times0.system
    return {
        "sent": sent,
        "cpu_us_per_msg": cpu / sent * 1e6,
        "charged_us_per_msg": charged / sent * 1e6,
    }


def tz_publisher(conn: Connection, spec: Spec) -> None:
    """A trizmq PUB publishing 64 B messages in batches for ``duration`` s."""
    import trio

    import trizmq

    raise_fd_limit()

    async def main() -> None:
        async with trizmq.Pub(bind="tcp://127.0.0.1:0", sndhwm=10_000) as pub:
            conn.send(("ready", pub.statistics()["bound"][0]))
            while pub.statistics()["subscriptions"] < spec["subscribers"] * spec["prefixes"]:
                await trio.sleep(0.01)
            conn.recv()  # go
            batch = [[b"x" * SIZE]] * 64
            sent = 0
            cpu0, t0, times0 = time.process_time(), time.monotonic(), os.times()
            deadline = t0 + spec["duration"]
            while time.monotonic() < deadline:
                sent += await pub.send_many(batch)
                await trio.sleep(0)
            cpu = time.process_time() - cpu0
            conn.send(("result", publisher_result(sent, cpu, times0)))
            conn.recv()

    trio.run(main)


def zmq_publisher(conn: Connection, spec: Spec) -> None:
    """The same with pyzmq (whose I/O thread's CPU is counted too)."""
    import zmq

    raise_fd_limit()
    ctx = zmq.Context()
    pub = ctx.socket(zmq.XPUB)  # XPUB: to know when every subscription arrived
    pub.sndhwm = 10_000
    pub.linger = 0
    pub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscriber's subscription, not one
    pub.bind("tcp://127.0.0.1:*")
    conn.send(("ready", pub.getsockopt(zmq.LAST_ENDPOINT).decode()))
    for _ in range(spec["subscribers"] * spec["prefixes"]):
        pub.recv()
    conn.recv()
    msg = b"x" * SIZE
    sent = 0
    cpu0, t0, times0 = time.process_time(), time.monotonic(), os.times()
    deadline = t0 + spec["duration"]
    while time.monotonic() < deadline:
        for _ in range(64):
            pub.send(msg)
        sent += 64
    cpu = time.process_time() - cpu0
    conn.send(("result", publisher_result(sent, cpu, times0)))
    conn.recv()
    pub.close()
    ctx.term()


# ----------------------------------------------------------------------- orchestration


class Run:
    """Processes of one measurement; all are killed on the way out."""

    def __init__(self) -> None:
        self.ctx = mp.get_context("spawn")
        self.procs: list[tuple[Any, Connection]] = []

    def start(self, target: Callable[[Connection, Spec], None], spec: Spec) -> Connection:
        here, there = self.ctx.Pipe()
        proc = self.ctx.Process(target=target, args=(there, spec), daemon=True)
        proc.start()
        self.procs.append((proc, here))
        return here

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        for _proc, conn in self.procs:
            with _suppress():
                conn.send(("stop", None))
        for proc, _ in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def expect(conn: Connection, what: str, timeout: float = 120) -> Any:
    if not conn.poll(timeout):
        raise TimeoutError(f"no {what!r} within {timeout} s")
    tag, value = conn.recv()
    if tag != what:
        raise RuntimeError(f"expected {what!r}, got {tag!r}: {value!r}")
    return value


def idle_row(impl: str, kind: str, idle: int, duration: float) -> float:
    """Messages/s received with ``idle`` quiet peers and one busy one."""
    receiver = tz_receiver if impl == "trizmq" else zmq_receiver
    with Run() as run:
        rx = run.start(receiver, {"kind": kind, "greetings": idle, "duration": duration})
        endpoint = expect(rx, "ready")
        helpers = []
        per_helper = 2500
        for start in range(0, idle, per_helper):
            count = min(per_helper, idle - start)
            helpers.append(
                run.start(helper_idle, {"kind": kind, "endpoint": endpoint, "count": count})
            )
        for helper in helpers:
            expect(helper, "connected")
        expect(rx, "greeted")
        sender = run.start(helper_sender, {"kind": kind, "endpoint": endpoint})
        expect(sender, "connected")
        rate: float = expect(rx, "result", timeout=duration + 60)["rate"]
        return rate


def idle_memory_row(impl: str, kind: str, idle: int) -> dict[str, float]:
    """What ``idle`` connected quiet peers cost the receiving process in memory: its
    resident set after every peer's greeting less its resident set once bound."""
    receiver = tz_receiver if impl == "trizmq" else zmq_receiver
    with Run() as run:
        spec = {"kind": kind, "greetings": idle, "duration": 0, "rss": True}
        rx = run.start(receiver, spec)
        endpoint = expect(rx, "ready")
        helpers = []
        for start in range(0, idle, 2500):
            count = min(2500, idle - start)
            helpers.append(
                run.start(helper_idle, {"kind": kind, "endpoint": endpoint, "count": count})
            )
        for helper in helpers:
            expect(helper, "connected")
        expect(rx, "greeted")
        memory: dict[str, float] = expect(rx, "rss")
        return memory


def idle_rep_row(impl: str, idle: int, duration: float) -> float:
    """The median round trip, µs, of a REQ client to a REP with ``idle`` quiet peers."""
    server = tz_rep_server if impl == "trizmq" else zmq_rep_server
    with Run() as run:
        endpoint = expect(run.start(server, {"idle": idle}), "ready")
        helpers = []
        for start in range(0, idle, 2500):
            spec = {"endpoint": endpoint, "count": min(2500, idle - start)}
            helpers.append(run.start(helper_idle_req, spec))
        for helper in helpers:
            expect(helper, "connected")
        client = run.start(helper_client, {"endpoint": endpoint, "duration": duration})
        p50: float = expect(client, "result", timeout=duration + 60)["p50"]
        return p50


def fanin_row(impl: str, senders: int, duration: float) -> float:
    receiver = tz_receiver if impl == "trizmq" else zmq_receiver
    with Run() as run:
        # each sender greets first: the receiver measures once all of them are
        # sending, not while the later ones are still starting up
        rx = run.start(receiver, {"kind": "pull", "greetings": senders, "duration": duration})
        endpoint = expect(rx, "ready")
        for _ in range(senders):
            spec = {"kind": "pull", "endpoint": endpoint, "greet": True}
            expect(run.start(helper_sender, spec), "connected")
        expect(rx, "greeted")
        rate: float = expect(rx, "result", timeout=duration + 60)["rate"]
        return rate


def fanout_row(impl: str, subscribers: int, duration: float, lengths: int = 0) -> dict[str, float]:
    """Deliveries/s, the PUB's CPU per message published and per message delivered,
    and the share of published messages times subscribers that was delivered; with
    ``lengths``, every SUB holds :func:`prefixes_of` that many lengths instead of
    ``b""``."""
    publisher = tz_publisher if impl == "trizmq" else zmq_publisher
    prefixes = prefixes_of(lengths) if lengths else [b""]
    with Run() as run:
        spec = {"subscribers": subscribers, "duration": duration, "prefixes": len(prefixes)}
        pub = run.start(publisher, spec)
        endpoint = expect(pub, "ready")
        groups = min(4, subscribers)
        subs = []
        for i in range(groups):
            count = subscribers // groups + (1 if i < subscribers % groups else 0)
            spec = {"endpoint": endpoint, "count": count, "prefixes": prefixes}
            subs.append(run.start(helper_subscribers, spec))
        for sub in subs:
            expect(sub, "connected")
        pub.send(("go", None))
        published = expect(pub, "result", timeout=duration + 60)
        received = 0
        first, last = [], []
        for sub in subs:
            sub.send(("stop", None))
            got = expect(sub, "result")
            received += got["received"]
            if got["received"]:
                first.append(got["first"])
                last.append(got["last"])
        span = (max(last) - min(first)) if first else duration
        sent = published["sent"]
        cpu_us = published["cpu_us_per_msg"] * sent
        return {
            "deliveries": received / max(span, 1e-9),
            "cpu_us_per_msg": published["cpu_us_per_msg"],
            "charged_us_per_msg": published["charged_us_per_msg"],
            # what share of (published x subscribers) was delivered: a PUB whose
            # subscribers cannot keep up drops, which makes a published message cheap
            "delivered_share": received / max(sent * subscribers, 1),
            "cpu_us_per_delivery": cpu_us / max(received, 1),
        }


def connect_row(impl: str, peers: int) -> float:
    """Seconds from the first connect to the last of ``peers`` greetings received."""
    receiver = tz_receiver if impl == "trizmq" else zmq_receiver
    with Run() as run:
        rx = run.start(receiver, {"kind": "router", "greetings": peers, "duration": 0})
        endpoint = expect(rx, "ready")
        t0 = time.monotonic()
        run.start(helper_idle, {"kind": "router", "endpoint": endpoint, "count": peers})
        greeted: float = expect(rx, "greeted")
        return greeted - t0


# -------------------------------------------------------------------------- the table


def rows_for(
    quick: bool, duration: float | None = None
) -> list[tuple[str, str, Callable[[str], Any]]]:
    """(id, label, measure(impl)) for every row, each measuring for ``duration``
    seconds (0.5 with ``quick``, else 1)."""
    if duration is None:
        duration = 0.5 if quick else 1.0
    rows: list[tuple[str, str, Callable[[str], Any]]] = []
    idle_counts = [0, 100] if quick else [0, 100, 1000, 10_000]
    for kind, label in (("pull", "PULL"), ("router", "ROUTER")):
        for idle in idle_counts:
            rows.append(
                (
                    f"idle-{kind}-{idle}",
                    f"{label}, {idle:,} idle peers + 1 busy, msgs/s",
                    lambda impl, k=kind, p=idle: idle_row(impl, k, p, duration),
                )
            )
    for kind, label in (("pull", "PULL"), ("router", "ROUTER")):
        idle = 100 if quick else 1000
        rows.append(
            (
                f"idle-memory-{kind}-{idle}",
                f"{label}, {idle:,} idle peers: resident memory per peer",
                lambda impl, k=kind, p=idle: idle_memory_row(impl, k, p),
            )
        )
    for idle in [0, 10] if quick else [0, 10, 1000]:
        rows.append(
            (
                f"idle-rep-{idle}",
                f"REP, {idle:,} idle REQ peers + 1 client, round trip p50, µs",
                lambda impl, p=idle: idle_rep_row(impl, p, duration),
            )
        )
    for senders in [1, 4] if quick else [1, 4, 16, 64]:
        rows.append(
            (
                f"fanin-{senders}",
                f"fan-in, {senders} PUSH -> 1 PULL, msgs/s",
                lambda impl, k=senders: fanin_row(impl, k, duration),
            )
        )
    for subscribers in [1, 4] if quick else [1, 4, 16, 64]:
        rows.append(
            (
                f"fanout-{subscribers}",
                f"fan-out, 1 PUB -> {subscribers} SUB",
                lambda impl, k=subscribers: fanout_row(impl, k, duration),
            )
        )
    for lengths in [1, 8] if quick else [1, 8, 64]:
        rows.append(
            (
                f"lengths-{lengths}",
                f"PUB -> 1 SUB holding prefixes of {lengths} lengths",
                lambda impl, n=lengths: fanout_row(impl, 1, duration, n),
            )
        )
    peers = 100 if quick else 1000
    rows.append(
        (
            f"connect-{peers}",
            f"{peers:,} DEALERs connect to a ROUTER, s",
            lambda impl, p=peers: connect_row(impl, p),
        )
    )
    return rows


def fmt(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small subset, for tests")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--only", action="append", help="rows whose id contains this")
    parser.add_argument("--json", help="write the results as JSON")
    parser.add_argument("--duration", type=float, help="seconds each measurement lasts (default 1)")
    args = parser.parse_args(argv)
    raise_fd_limit()
    chosen = [
        row
        for row in rows_for(args.quick, args.duration)
        if not args.only or any(o in row[0] for o in args.only)
    ]
    # rounds: every row once per repetition, so that the rows compared with each
    # other (a socket's figure with idle peers against its own with none, K = 16
    # against K = 1) are measured across the same spells of a noisy machine
    samples: dict[str, dict[str, list[Any]]] = {
        row_id: {"trizmq": [], "pyzmq": []} for row_id, _, _ in chosen
    }
    for round_ in range(args.repetitions):
        for row_id, label, measure in chosen:
            for impl in ("trizmq", "pyzmq"):
                try:
                    value = measure(impl)
                except (OSError, TimeoutError, RuntimeError) as exc:
                    value = {"error": str(exc)}
                samples[row_id][impl].append(value)
            print(f"round {round_ + 1}/{args.repetitions}: {label}", file=sys.stderr, flush=True)
    results: list[dict[str, Any]] = []
    for row_id, label, _ in chosen:
        row: dict[str, Any] = {"id": row_id, "label": label}
        for impl, values in samples[row_id].items():
            good = [v for v in values if not (isinstance(v, dict) and "error" in v)]
            if not good:
                row[impl] = {"error": values[-1]["error"]}
            elif isinstance(good[0], dict):
                row[impl] = {k: statistics.median(v[k] for v in good) for k in good[0]}
            else:
                row[impl] = statistics.median(good)
        results.append(row)
        print(describe(row), flush=True)
    derived = paired(samples)
    for name, values in derived.items():
        shown = ", ".join(f"{v:.3f}" for v in values)
        print(f"{name}: median {statistics.median(values):.3f} (rounds: {shown})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": results, "derived": derived, "cpus": os.cpu_count()}, f, indent=2)
    return 0


def paired(samples: dict[str, dict[str, list[Any]]]) -> dict[str, list[float]]:
    """The figures the scaling issue's targets compare within trizmq, worked out
    round by round (each from measurements made in the same round): a receiver's
    rate with P idle peers over its rate with none, and a publisher's CPU per
    extra subscriber, (K = 16 - K = 1) / 15, in µs a message."""
    derived: dict[str, list[float]] = {}

    def good(row_id: str) -> list[Any] | None:
        values = samples.get(row_id, {}).get("trizmq")
        if not values or any(isinstance(v, dict) and "error" in v for v in values):
            return None
        return values

    for row_id in samples:
        kind, _, idle = row_id.rpartition("-")
        if kind in ("idle-pull", "idle-router") and idle != "0":
            base, crowd = good(f"{kind}-0"), good(row_id)
            if base and crowd:
                ratios = [c / b for c, b in zip(crowd, base, strict=True)]
                derived[f"{row_id} / {kind}-0 (trizmq)"] = ratios
    one, sixteen = good("fanout-1"), good("fanout-16")
    if one and sixteen:
        derived["PUB CPU per extra subscriber, (K=16 - K=1) / 15, us (trizmq)"] = [
            (k16["cpu_us_per_msg"] - k1["cpu_us_per_msg"]) / 15
            for k1, k16 in zip(one, sixteen, strict=True)
        ]
    return derived


def describe(row: dict[str, Any]) -> str:
    tz, zq = row["trizmq"], row["pyzmq"]
    if (isinstance(tz, dict) and "error" in tz) or (isinstance(zq, dict) and "error" in zq):
        return f"| {row['label']} | {tz} | {zq} | |"
    if isinstance(tz, dict):
        parts = []
        for key in tz:
            ratio = tz[key] / zq[key] if zq[key] else float("nan")
            parts.append(f"{key} {fmt(tz[key])} / {fmt(zq[key])} ({ratio:.2f})")
        return f"| {row['label']} | " + " | ".join(parts) + " |"
    return f"| {row['label']} | {fmt(tz)} | {fmt(zq)} | {tz / zq:.2f} |"


if __name__ == "__main__":
    sys.exit(main())
