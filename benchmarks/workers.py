"""What runs inside each benchmark process (started with the ``spawn`` context).

Every process gets a ``Connection`` to the parent and a ``spec`` dict. The protocol:

* a process that **binds** sends ``("ready", endpoint)`` once it listens;
* a process that **connects** first waits for ``("go", [endpoint, ...])``;
* every process sends ``("result", {...})`` when its part is done;
* a throughput sender then keeps offering the terminator (an empty frame) every
  10 ms until the parent sends ``("stop", None)``, so a receiver that missed one
  (PUB drops for a full subscriber) still gets one, and nothing waits on a peer
  that has gone;
* any exception is reported as ``("error", text)``.

Throughput: the sender sends for ``duration`` seconds, then the terminator; the
receiver times from its first message to the terminator, like libzmq's
local_thr/remote_thr. Latency: the client times each round trip after a warm-up.

Imports of trio, trizmq and zmq happen inside the functions, so a process pays only
for the library it measures.
"""

from __future__ import annotations

import contextlib
import resource
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

Spec = dict[str, Any]

#: round trips before a latency measurement starts
WARMUP = 200
#: at most this many latency samples
MAX_SAMPLES = 500_000
#: seconds between terminators
TERMINATOR_EVERY = 0.01


def peak_rss_mib() -> float:
    """Peak resident memory of this process, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _batch(size: int) -> int:
    """Messages sent between two looks at the clock."""
    return 64 if size <= 4096 else 4


def _bind_address(spec: Spec, zmq_style: bool) -> str:
    transport = spec["transport"]
    if transport == "tcp":
        return "tcp://127.0.0.1:*" if zmq_style else "tcp://127.0.0.1:0"
    if transport == "ipc":
        return f"ipc://{spec['ipc_path']}"
    if transport in ("ws", "wss"):  # trizmq only: pyzmq's libzmq has no ws
        return f"{transport}://127.0.0.1:0/bench"
    return f"inproc://{spec.get('inproc_name', 'bench')}"


def _throughput(count: int, t0: float, t1: float, size: int) -> dict[str, float]:
    if count == 0 or t1 <= t0:
        raise RuntimeError("no message arrived before the terminator")
    rate = count / (t1 - t0)
    return {"msgs_s": rate, "mb_s": rate * size / 1e6, "count": count, "seconds": t1 - t0}


def _latency(samples_ns: list[int]) -> dict[str, float]:
    if not samples_ns:
        raise RuntimeError("no round trip measured")
    samples_ns.sort()
    n = len(samples_ns)
    return {
        "p50_us": samples_ns[n // 2] / 1000,
        "p99_us": samples_ns[min(n - 1, int(n * 0.99))] / 1000,
        "count": n,
    }


def _tz_security(spec: Spec, server: bool) -> dict[str, Any]:
    """The ``security=`` option of a trizmq worker of a CURVE case, and the
    ``ssl_context=`` of a wss case (none otherwise)."""
    if spec.get("transport") == "wss":
        return {"ssl_context": _tls_context(spec, server)}
    keys = spec.get("curve")
    if not keys:
        return {}
    import trizmq

    if server:
        return {"security": trizmq.CurveServer(secret_key=keys["server_secret"])}
    return {
        "security": trizmq.CurveClient(
            server_key=keys["server_public"],
            public_key=keys["client_public"],
            secret_key=keys["client_secret"],
        )
    }


def _tls_context(spec: Spec, server: bool) -> Any:
    """A wss case's TLS: the server holds ``spec["tls_cert"]`` (key and chain, PEM),
    the client trusts ``spec["tls_ca"]`` (the parent made both with trustme)."""
    import ssl

    if server:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(spec["tls_cert"])
        return context
    return ssl.create_default_context(cafile=spec["tls_ca"])


def _zmq_security(sock: Any, spec: Spec, server: bool) -> None:
    """The CURVE options of a pyzmq worker of a CURVE case (libzmq admits any client
    key when no ZAP handler runs, as trizmq does without an Authenticator)."""
    keys = spec.get("curve")
    if not keys:
        return
    if server:
        sock.curve_server = True
        sock.curve_secretkey = keys["server_secret"].encode()
    else:
        sock.curve_serverkey = keys["server_public"].encode()
        sock.curve_publickey = keys["client_public"].encode()
        sock.curve_secretkey = keys["client_secret"].encode()


def _go(conn: Connection) -> list[str]:
    kind, endpoints = conn.recv()
    if kind != "go":
        raise RuntimeError(f"expected go, got {kind}")
    return list(endpoints)


# -- trizmq ----------------------------------------------------------------------------
def _tz_class(pattern: str, role: str) -> Any:
    import trizmq

    table = {
        ("pushpull", "receiver"): trizmq.Pull,
        ("pushpull", "sender"): trizmq.Push,
        ("pubsub", "receiver"): trizmq.Sub,
        ("pubsub", "sender"): trizmq.Pub,
        ("reqrep", "server"): trizmq.Rep,
        ("reqrep", "client"): trizmq.Req,
        ("dealerrouter", "server"): trizmq.Router,
        ("dealerrouter", "client"): trizmq.Dealer,
    }
    return table[pattern, role]


async def _tz_recv_loop(sock: Any, size: int) -> dict[str, float]:
    recv = sock.recv
    msg = await recv()
    t0 = time.perf_counter()
    count = 0
    while msg:
        count += 1
        msg = await recv()
    return _throughput(count, t0, time.perf_counter(), size)


async def _tz_send_loop(sock: Any, size: int, duration: float) -> int:
    send = sock.send
    payload = b"x" * size
    batch = _batch(size)
    sent = 0
    deadline = time.perf_counter() + duration
    while True:
        for _ in range(batch):
            await send(payload)
        sent += batch
        if time.perf_counter() >= deadline:
            return sent


def tz_receiver(conn: Connection, spec: Spec) -> None:
    import trio

    async def main() -> dict[str, float]:
        cls = _tz_class(spec["pattern"], "receiver")
        options: dict[str, Any] = {"rcvhwm": spec["hwm"], "linger": 0}
        options.update(_tz_security(spec, server=True))
        if spec["pattern"] == "pubsub":
            options["subscribe"] = b""
        async with cls(**options) as sock:
            conn.send(("ready", await sock.bind(_bind_address(spec, False))))
            return await _tz_recv_loop(sock, spec["size"])

    conn.send(("result", trio.run(main)))


def tz_sender(conn: Connection, spec: Spec) -> None:
    import trio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        cls = _tz_class(spec["pattern"], "sender")
        async with cls(sndhwm=spec["hwm"], linger=0, **_tz_security(spec, server=False)) as sock:
            for endpoint in endpoints:
                await sock.connect(endpoint)
            await trio.sleep(spec.get("settle", 0))
            sent = await _tz_send_loop(sock, spec["size"], spec["duration"])
            while not conn.poll():
                with contextlib.suppress(trio.WouldBlock):
                    sock.send_nowait(b"")
                await trio.sleep(TERMINATOR_EVERY)
        return {"sent": sent}

    result = trio.run(main)
    conn.send(("result", result))


def tz_server(conn: Connection, spec: Spec) -> None:
    import trio

    router = spec["pattern"] == "dealerrouter"

    async def main() -> None:
        cls = _tz_class(spec["pattern"], "server")
        async with cls(linger=0, **_tz_security(spec, server=True)) as sock:
            conn.send(("ready", await sock.bind(_bind_address(spec, False))))
            if router:
                while True:
                    msg = await sock.recv_multipart()
                    await sock.send_multipart(msg)
                    if not msg[-1]:
                        break
            else:
                while True:
                    data = await sock.recv()
                    await sock.send(data)
                    if not data:
                        break
            # the last reply must leave before linger=0 drops it
            await trio.sleep(0.05)

    trio.run(main)
    conn.send(("result", {}))


def tz_client(conn: Connection, spec: Spec) -> None:
    import trio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        cls = _tz_class(spec["pattern"], "client")
        async with cls(linger=0, **_tz_security(spec, server=False)) as sock:
            await sock.connect(endpoints[0])
            send, recv = sock.send, sock.recv
            payload = b"x" * spec["size"]
            for _ in range(WARMUP):
                await send(payload)
                await recv()
            clock = time.perf_counter_ns
            samples: list[int] = []
            deadline = clock() + int(spec["duration"] * 1e9)
            while True:
                t = clock()
                await send(payload)
                await recv()
                now = clock()
                samples.append(now - t)
                if now >= deadline or len(samples) >= MAX_SAMPLES:
                    break
            await send(b"")
            await recv()
        return _latency(samples)

    conn.send(("result", trio.run(main)))


def tz_inproc(conn: Connection, spec: Spec) -> None:
    import trio

    import trizmq

    async def main() -> dict[str, float]:
        endpoint = "inproc://bench"
        hwm = spec["hwm"]
        async with (
            trizmq.Pull(bind=endpoint, rcvhwm=hwm, linger=0) as pull,
            trizmq.Push(connect=endpoint, sndhwm=hwm, linger=0) as push,
        ):
            result: dict[str, float] = {}

            async def receive() -> None:
                result.update(await _tz_recv_loop(pull, spec["size"]))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                await _tz_send_loop(push, spec["size"], spec["duration"])
                await push.send(b"")
        return result

    conn.send(("result", trio.run(main)))


# -- pyzmq, sync ---------------------------------------------------------------------------
def _zmq_type(pattern: str, role: str) -> int:
    import zmq

    table = {
        ("pushpull", "receiver"): zmq.PULL,
        ("pushpull", "sender"): zmq.PUSH,
        ("pubsub", "receiver"): zmq.SUB,
        ("pubsub", "sender"): zmq.PUB,
        ("reqrep", "server"): zmq.REP,
        ("reqrep", "client"): zmq.REQ,
        ("dealerrouter", "server"): zmq.ROUTER,
        ("dealerrouter", "client"): zmq.DEALER,
    }
    return table[pattern, role]


def _zmq_socket(ctx: Any, spec: Spec, role: str) -> Any:

    sock = ctx.socket(_zmq_type(spec["pattern"], role))
    sock.linger = 0
    _zmq_security(sock, spec, server=role in ("receiver", "server"))
    if "hwm" in spec:
        sock.sndhwm = sock.rcvhwm = spec["hwm"]
    if spec["pattern"] == "pubsub" and role == "receiver":
        # subscribe(), not setsockopt(SUBSCRIBE): pyomq 0.27, which runs these workers
        # too (benchmarks/omq.py), loses a setsockopt subscription made before bind
        sock.subscribe(b"")
    return sock


def _zmq_bind(sock: Any, spec: Spec) -> str:
    import zmq

    sock.bind(_bind_address(spec, True))
    return str(sock.getsockopt_string(zmq.LAST_ENDPOINT))


def _zmq_recv_loop(sock: Any, size: int) -> dict[str, float]:
    recv = sock.recv
    msg = recv()
    t0 = time.perf_counter()
    count = 0
    while msg:
        count += 1
        msg = recv()
    return _throughput(count, t0, time.perf_counter(), size)


def _zmq_send_loop(sock: Any, size: int, duration: float) -> int:
    send = sock.send
    payload = b"x" * size
    batch = _batch(size)
    sent = 0
    deadline = time.perf_counter() + duration
    while True:
        for _ in range(batch):
            send(payload)
        sent += batch
        if time.perf_counter() >= deadline:
            return sent


def zmq_receiver(conn: Connection, spec: Spec) -> None:
    import zmq

    ctx = zmq.Context()
    sock = _zmq_socket(ctx, spec, "receiver")
    conn.send(("ready", _zmq_bind(sock, spec)))
    result = _zmq_recv_loop(sock, spec["size"])
    sock.close()
    ctx.term()
    conn.send(("result", result))


def zmq_sender(conn: Connection, spec: Spec) -> None:
    import zmq

    endpoints = _go(conn)
    ctx = zmq.Context()
    sock = _zmq_socket(ctx, spec, "sender")
    for endpoint in endpoints:
        sock.connect(endpoint)
    time.sleep(spec.get("settle", 0))
    sent = _zmq_send_loop(sock, spec["size"], spec["duration"])
    while not conn.poll(TERMINATOR_EVERY):
        with contextlib.suppress(zmq.Again):
            sock.send(b"", zmq.NOBLOCK)
    sock.close()
    ctx.term()
    conn.send(("result", {"sent": sent}))


def zmq_server(conn: Connection, spec: Spec) -> None:
    import zmq

    ctx = zmq.Context()
    sock = _zmq_socket(ctx, spec, "server")
    conn.send(("ready", _zmq_bind(sock, spec)))
    if spec["pattern"] == "dealerrouter":
        while True:
            msg = sock.recv_multipart()
            sock.send_multipart(msg)
            if not msg[-1]:
                break
    else:
        while True:
            data = sock.recv()
            sock.send(data)
            if not data:
                break
    time.sleep(0.05)
    sock.close()
    ctx.term()
    conn.send(("result", {}))


def zmq_client(conn: Connection, spec: Spec) -> None:
    import zmq

    endpoints = _go(conn)
    ctx = zmq.Context()
    sock = _zmq_socket(ctx, spec, "client")
    sock.connect(endpoints[0])
    send, recv = sock.send, sock.recv
    payload = b"x" * spec["size"]
    for _ in range(WARMUP):
        send(payload)
        recv()
    clock = time.perf_counter_ns
    samples: list[int] = []
    deadline = clock() + int(spec["duration"] * 1e9)
    while True:
        t = clock()
        send(payload)
        recv()
        now = clock()
        samples.append(now - t)
        if now >= deadline or len(samples) >= MAX_SAMPLES:
            break
    send(b"")
    recv()
    sock.close()
    ctx.term()
    conn.send(("result", _latency(samples)))


def zmq_inproc(conn: Connection, spec: Spec) -> None:
    """Two threads of one process, one context (pyzmq's GIL is released in libzmq)."""
    import zmq

    ctx = zmq.Context()
    local = dict(spec, transport="inproc")
    pull = _zmq_socket(ctx, local, "receiver")
    pull.bind("inproc://bench")
    push = _zmq_socket(ctx, local, "sender")
    push.connect("inproc://bench")
    result: dict[str, float] = {}
    failure: list[BaseException] = []

    def receive() -> None:
        try:
            result.update(_zmq_recv_loop(pull, spec["size"]))
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=receive, daemon=True)
    thread.start()
    _zmq_send_loop(push, spec["size"], spec["duration"])
    push.send(b"")
    thread.join()
    if failure:
        raise failure[0]
    push.close()
    pull.close()
    ctx.term()
    conn.send(("result", result))


# -- pyzmq, zmq.asyncio ----------------------------------------------------------------------
async def _aio_recv_loop(sock: Any, size: int) -> dict[str, float]:
    recv = sock.recv
    msg = await recv()
    t0 = time.perf_counter()
    count = 0
    while msg:
        count += 1
        msg = await recv()
    return _throughput(count, t0, time.perf_counter(), size)


async def _aio_send_loop(sock: Any, size: int, duration: float) -> int:
    send = sock.send
    payload = b"x" * size
    batch = _batch(size)
    sent = 0
    deadline = time.perf_counter() + duration
    while True:
        for _ in range(batch):
            await send(payload)
        sent += batch
        if time.perf_counter() >= deadline:
            return sent


def aio_receiver(conn: Connection, spec: Spec) -> None:
    import asyncio

    import zmq.asyncio

    async def main() -> dict[str, float]:
        ctx = zmq.asyncio.Context()
        sock = _zmq_socket(ctx, spec, "receiver")
        conn.send(("ready", _zmq_bind(sock, spec)))
        result = await _aio_recv_loop(sock, spec["size"])
        sock.close()
        ctx.term()
        return result

    conn.send(("result", asyncio.run(main())))


def aio_sender(conn: Connection, spec: Spec) -> None:
    import asyncio

    import zmq.asyncio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        ctx = zmq.asyncio.Context()
        sock = _zmq_socket(ctx, spec, "sender")
        for endpoint in endpoints:
            sock.connect(endpoint)
        await asyncio.sleep(spec.get("settle", 0))
        sent = await _aio_send_loop(sock, spec["size"], spec["duration"])
        while not conn.poll():
            with contextlib.suppress(zmq.Again):
                await sock.send(b"", zmq.NOBLOCK)
            await asyncio.sleep(TERMINATOR_EVERY)
        sock.close()
        ctx.term()
        return {"sent": sent}

    conn.send(("result", asyncio.run(main())))


def aio_server(conn: Connection, spec: Spec) -> None:
    import asyncio

    import zmq.asyncio

    async def main() -> None:
        ctx = zmq.asyncio.Context()
        sock = _zmq_socket(ctx, spec, "server")
        conn.send(("ready", _zmq_bind(sock, spec)))
        if spec["pattern"] == "dealerrouter":
            while True:
                msg = await sock.recv_multipart()
                await sock.send_multipart(msg)
                if not msg[-1]:
                    break
        else:
            while True:
                data = await sock.recv()
                await sock.send(data)
                if not data:
                    break
        await asyncio.sleep(0.05)
        sock.close()
        ctx.term()

    asyncio.run(main())
    conn.send(("result", {}))


def aio_client(conn: Connection, spec: Spec) -> None:
    import asyncio

    import zmq.asyncio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        ctx = zmq.asyncio.Context()
        sock = _zmq_socket(ctx, spec, "client")
        sock.connect(endpoints[0])
        send, recv = sock.send, sock.recv
        payload = b"x" * spec["size"]
        for _ in range(WARMUP):
            await send(payload)
            await recv()
        clock = time.perf_counter_ns
        samples: list[int] = []
        deadline = clock() + int(spec["duration"] * 1e9)
        while True:
            t = clock()
            await send(payload)
            await recv()
            now = clock()
            samples.append(now - t)
            if now >= deadline or len(samples) >= MAX_SAMPLES:
                break
        await send(b"")
        await recv()
        sock.close()
        ctx.term()
        return _latency(samples)

    conn.send(("result", asyncio.run(main())))


def aio_inproc(conn: Connection, spec: Spec) -> None:
    import asyncio

    import zmq.asyncio

    async def main() -> dict[str, float]:
        ctx = zmq.asyncio.Context()
        local = dict(spec, transport="inproc")
        pull = _zmq_socket(ctx, local, "receiver")
        pull.bind("inproc://bench")
        push = _zmq_socket(ctx, local, "sender")
        push.connect("inproc://bench")

        async def send() -> None:
            await _aio_send_loop(push, spec["size"], spec["duration"])
            await push.send(b"")

        result, _ = await asyncio.gather(_aio_recv_loop(pull, spec["size"]), send())
        push.close()
        pull.close()
        ctx.term()
        return result

    conn.send(("result", asyncio.run(main())))


# -- raw trio: the ceiling -------------------------------------------------------------------
# ZMTP's short frame (flags byte, size byte, body), written and parsed by the least
# Python that can do it: what a trio program pays before any ZeroMQ machinery.


async def _raw_listen() -> tuple[Any, str]:
    import trio

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    return listeners[0], f"127.0.0.1:{port}"


async def _raw_connect(endpoint: str) -> Any:
    import trio

    host, port = endpoint.rsplit(":", 1)
    return await trio.open_tcp_stream(host, int(port))


def raw_receiver(conn: Connection, spec: Spec) -> None:
    import trio

    async def main() -> dict[str, float]:
        listener, endpoint = await _raw_listen()
        conn.send(("ready", endpoint))
        stream = await listener.accept()
        buf = bytearray()
        count = 0
        t0 = 0.0
        while True:
            data = await stream.receive_some(65536)
            if not data:
                raise RuntimeError("the sender closed before the terminator")
            buf += data
            pos, end_of_data = 0, len(buf)
            while end_of_data - pos >= 2:
                size = buf[pos + 1]
                end = pos + 2 + size
                if end > end_of_data:
                    break
                msg = bytes(buf[pos + 2 : end])
                pos = end
                if not msg:
                    await stream.aclose()
                    await listener.aclose()
                    return _throughput(count, t0, time.perf_counter(), spec["size"])
                if count == 0:
                    t0 = time.perf_counter()
                count += 1
            del buf[:pos]

    conn.send(("result", trio.run(main)))


def raw_sender(conn: Connection, spec: Spec) -> None:
    import trio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        stream = await _raw_connect(endpoints[0])
        size = spec["size"]
        if size > 255:
            raise ValueError("the raw baseline uses short frames (< 256 B)")
        payload = b"x" * size
        header = bytes((0, size))
        batch = max(1, 32768 // (size + 2))
        sent = 0
        deadline = time.perf_counter() + spec["duration"]
        while time.perf_counter() < deadline:
            parts = []
            for _ in range(batch):
                parts.append(header)
                parts.append(payload)
            await stream.send_all(b"".join(parts))
            sent += batch
        await stream.send_all(b"\x00\x00")
        while not conn.poll():
            await trio.sleep(TERMINATOR_EVERY)
        await stream.aclose()
        return {"sent": sent}

    conn.send(("result", trio.run(main)))


async def _receive_exactly(stream: Any, buf: bytearray, n: int) -> bytes:
    while len(buf) < n:
        data = await stream.receive_some(65536)
        if not data:
            raise EOFError
        buf += data
    out = bytes(buf[:n])
    del buf[:n]
    return out


def raw_server(conn: Connection, spec: Spec) -> None:
    import trio

    async def main() -> None:
        listener, endpoint = await _raw_listen()
        conn.send(("ready", endpoint))
        stream = await listener.accept()
        buf = bytearray()
        while True:
            header = await _receive_exactly(stream, buf, 2)
            body = await _receive_exactly(stream, buf, header[1])
            await stream.send_all(header + body)
            if not body:
                break
        await trio.sleep(0.05)
        await stream.aclose()
        await listener.aclose()

    trio.run(main)
    conn.send(("result", {}))


def raw_client(conn: Connection, spec: Spec) -> None:
    import trio

    endpoints = _go(conn)

    async def main() -> dict[str, float]:
        stream = await _raw_connect(endpoints[0])
        buf = bytearray()
        size = spec["size"]
        header = bytes((0, size))
        payload = b"x" * size

        async def round_trip(body: bytes) -> None:
            await stream.send_all(header[:1] + bytes((len(body),)) + body)
            reply = await _receive_exactly(stream, buf, 2)
            await _receive_exactly(stream, buf, reply[1])

        for _ in range(WARMUP):
            await round_trip(payload)
        clock = time.perf_counter_ns
        samples: list[int] = []
        deadline = clock() + int(spec["duration"] * 1e9)
        while True:
            t = clock()
            await round_trip(payload)
            now = clock()
            samples.append(now - t)
            if now >= deadline or len(samples) >= MAX_SAMPLES:
                break
        await round_trip(b"")
        await stream.aclose()
        return _latency(samples)

    conn.send(("result", trio.run(main)))


# -- memory: a PUB with stalled subscribers ----------------------------------------------------
def mem_publisher(conn: Connection, spec: Spec) -> None:
    """A trizmq PUB publishes ``messages`` distinct messages to subscribers that never read."""
    import trio

    import trizmq

    async def main() -> dict[str, float]:
        before = peak_rss_mib()
        async with trizmq.Pub(sndhwm=spec["hwm"], linger=0) as pub:
            conn.send(("ready", await pub.bind("tcp://127.0.0.1:0")))
            while not conn.poll():  # ("go", ...) once every subscriber is connected
                await trio.sleep(0.01)
            conn.recv()
            filler = b"m" * (spec["size"] - 8)
            sent = 0
            while sent < spec["messages"]:
                for _ in range(1000):
                    # a new object per message, as an application would make
                    await pub.send(sent.to_bytes(8, "little") + filler)
                    sent += 1
                await trio.sleep(0.005)
            await trio.sleep(spec.get("settle", 0.5))
            stats = pub.statistics()
            return {
                "peak_rss_mib": peak_rss_mib(),
                "rss_before_mib": before,
                "sent": sent,
                "dropped": stats.get("dropped", 0),
                "queued_out": stats.get("queued_out", 0),
                "live_peers": stats.get("live_peers", 0),
            }

    conn.send(("result", trio.run(main)))


def mem_subscribers(conn: Connection, spec: Spec) -> None:
    """``subscribers`` pyzmq SUB sockets that connect, subscribe and never read."""
    import zmq

    endpoints = _go(conn)
    ctx = zmq.Context()
    socks = []
    for _ in range(spec["subscribers"]):
        sock = ctx.socket(zmq.SUB)
        sock.linger = 0
        sock.rcvhwm = spec["hwm"]
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(endpoints[0])
        socks.append(sock)
    time.sleep(spec.get("settle", 0.5))
    conn.send(("result", {"subscribers": len(socks)}))
    conn.recv()  # stop
    for sock in socks:
        sock.close()
    ctx.term()


ROLES: dict[tuple[str, str], Callable[[Connection, Spec], None]] = {
    ("trizmq", "receiver"): tz_receiver,
    ("trizmq", "sender"): tz_sender,
    ("trizmq", "server"): tz_server,
    ("trizmq", "client"): tz_client,
    ("trizmq", "inproc"): tz_inproc,
    ("pyzmq", "receiver"): zmq_receiver,
    ("pyzmq", "sender"): zmq_sender,
    ("pyzmq", "server"): zmq_server,
    ("pyzmq", "client"): zmq_client,
    ("pyzmq", "inproc"): zmq_inproc,
    ("zmq.asyncio", "receiver"): aio_receiver,
    ("zmq.asyncio", "sender"): aio_sender,
    ("zmq.asyncio", "server"): aio_server,
    ("zmq.asyncio", "client"): aio_client,
    ("zmq.asyncio", "inproc"): aio_inproc,
    ("raw trio", "receiver"): raw_receiver,
    ("raw trio", "sender"): raw_sender,
    ("raw trio", "server"): raw_server,
    ("raw trio", "client"): raw_client,
    ("trizmq", "mem-publisher"): mem_publisher,
    ("pyzmq", "mem-subscribers"): mem_subscribers,
}


def main(conn: Connection, spec: Spec) -> None:
    """Process entry point: run one role, report any failure to the parent."""
    # Ctrl-C is the parent's to handle (it stops every worker): no traceback per worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        role = ROLES[spec["impl"], spec["role"]]
        if spec.get("profile"):
            import cProfile

            profiler = cProfile.Profile()
            profiler.runcall(role, conn, spec)
            profiler.dump_stats(spec["profile"])
        else:
            role(conn, spec)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        raise SystemExit(1) from None
    finally:
        conn.close()
