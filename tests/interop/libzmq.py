"""A libzmq socket (through pyzmq) driven from trio, one blocking call per worker thread.

Every pyzmq call runs in ``trio.to_thread.run_sync``, one at a time per socket (a
pyzmq socket is not thread-safe, but sequential use from different threads is fine).
Every socket has ``RCVTIMEO``/``SNDTIMEO`` and ``LINGER`` set, so no thread can hang:
a blocked call fails with ``zmq.Again`` after ``timeout_ms``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

import trio
import zmq

import trizmq

T = TypeVar("T")

#: milliseconds any single blocking pyzmq call may take
TIMEOUT_MS = 10_000


class LibzmqSocket:
    """A pyzmq socket with async methods; close it (or destroy its context) at the end."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], socket_type: int) -> None:
        self.socket_type = socket_type
        self.sock: zmq.Socket[bytes] = ctx.socket(socket_type)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
        self.sock.setsockopt(zmq.SNDTIMEO, TIMEOUT_MS)
        # quick reconnects keep the tests short
        self.sock.setsockopt(zmq.RECONNECT_IVL, 50)
        # unbounded queues: the tests count every message, so none may be dropped
        self.sock.setsockopt(zmq.SNDHWM, 0)
        self.sock.setsockopt(zmq.RCVHWM, 0)

    async def _run(self, fn: Callable[[], T]) -> T:
        return await trio.to_thread.run_sync(fn)

    async def bind(self, endpoint: str) -> str:
        """Bind; a tcp endpoint without a port gets a random one. Returns the endpoint."""
        if endpoint.startswith("tcp://") and endpoint.count(":") == 1:
            port = await self._run(lambda: self.sock.bind_to_random_port(endpoint))
            return f"{endpoint}:{port}"
        await self._run(lambda: self.sock.bind(endpoint))
        return endpoint

    async def connect(self, endpoint: str) -> None:
        await self._run(lambda: self.sock.connect(endpoint))

    async def send_multipart(self, frames: Sequence[bytes]) -> None:
        await self._run(lambda: self.sock.send_multipart(frames))

    async def recv_multipart(self) -> list[bytes]:
        """Receive a whole message; raises ``zmq.Again`` after ``TIMEOUT_MS``."""
        return await self._run(lambda: self.sock.recv_multipart())

    async def poll_recv(self, timeout_ms: int) -> list[bytes] | None:
        """Receive a whole message if one arrives within ``timeout_ms``, else None."""

        def poll_then_recv() -> list[bytes] | None:
            if self.sock.poll(timeout_ms, zmq.POLLIN):
                return self.sock.recv_multipart()
            return None

        return await self._run(poll_then_recv)

    async def recv_many(self, count: int) -> list[list[bytes]]:
        """Receive ``count`` messages in one worker thread (fast for bulk tests)."""

        def loop() -> list[list[bytes]]:
            return [self.sock.recv_multipart() for _ in range(count)]

        return await self._run(loop)

    async def send_many(self, messages: Sequence[Sequence[bytes]]) -> None:
        """Send every message in one worker thread."""

        def loop() -> None:
            for msg in messages:
                self.sock.send_multipart(msg)

        await self._run(loop)

    async def process_commands(self) -> None:
        """Let libzmq attach new connections to this socket.

        libzmq hands a connection accepted by a bound socket to that socket through a
        command that the socket reads only when the application calls into it (send,
        recv, poll, getsockopt(EVENTS)); until then, a bound SUB does not send its
        subscriptions to a new peer, for instance.
        """
        await self._run(lambda: self.sock.getsockopt(zmq.EVENTS))

    def subscribe(self, topic: bytes) -> None:
        # setsockopt only queues a command to libzmq's I/O thread: it never blocks
        self.sock.setsockopt(zmq.SUBSCRIBE, topic)

    def unsubscribe(self, topic: bytes) -> None:
        self.sock.setsockopt(zmq.UNSUBSCRIBE, topic)

    def close(self) -> None:
        self.sock.close(linger=0)

    # -- the common face of both ends, see ``End`` ----------------------------------------
    async def send(self, frames: Sequence[bytes]) -> None:
        await self.send_multipart(frames)

    async def recv_within(self, seconds: float) -> list[bytes] | None:
        return await self.poll_recv(max(1, int(seconds * 1000)))

    async def add_subscription(self, topic: bytes) -> None:
        if self.socket_type == zmq.XSUB:
            await self.send_multipart([b"\x01" + topic])
        else:
            self.subscribe(topic)

    async def remove_subscription(self, topic: bytes) -> None:
        if self.socket_type == zmq.XSUB:
            await self.send_multipart([b"\x00" + topic])
        else:
            self.unsubscribe(topic)


class TrizmqEnd:
    """A trizmq socket behind the same small face as :class:`LibzmqSocket`."""

    def __init__(self, sock: trizmq.Socket) -> None:
        self.sock = sock

    async def send(self, frames: Sequence[bytes]) -> None:
        await self.sock.send_multipart(frames)

    async def recv_within(self, seconds: float) -> list[bytes] | None:
        with trio.move_on_after(seconds):
            return await self.sock.recv_multipart()
        return None

    async def add_subscription(self, topic: bytes) -> None:
        if isinstance(self.sock, trizmq.Sub):
            self.sock.subscribe(topic)
        else:
            # an XSub takes subscriptions as messages too
            await self.sock.send_multipart([b"\x01" + topic])

    async def remove_subscription(self, topic: bytes) -> None:
        if isinstance(self.sock, trizmq.Sub):
            self.sock.unsubscribe(topic)
        else:
            await self.sock.send_multipart([b"\x00" + topic])


class End(Protocol):
    """What the tests need from either end."""

    async def send(self, frames: Sequence[bytes]) -> None: ...

    async def recv_within(self, seconds: float) -> list[bytes] | None: ...

    async def add_subscription(self, topic: bytes) -> None: ...

    async def remove_subscription(self, topic: bytes) -> None: ...


_sync_counter = itertools.count()


async def await_delivery(sender: End, receiver: End, prefix: bytes = b"sync") -> None:
    """Return once messages from ``sender`` reach ``receiver``; none of them is left over.

    This is how the tests beat PUB/SUB's slow joiner without sleeping: send a marker
    (``prefix`` must match the receiver's subscriptions) and wait briefly for it, until
    one arrives; then send an end marker and read up to it, so the stray markers still
    in flight are consumed too. Every message read on the way must be a marker.
    """
    ping = prefix + b"-ping"
    while True:
        await sender.send([ping])
        msg = await receiver.recv_within(0.05)
        if msg is not None:
            break
    end = prefix + b"-end-%d" % next(_sync_counter)
    await sender.send([end])
    while msg != [end]:
        assert msg is not None and msg[0].startswith(prefix), f"unexpected message {msg!r}"
        msg = await receiver.recv_within(TIMEOUT_MS / 1000)
        assert msg is not None, f"the end marker {end!r} never arrived"


async def link(
    tz: trizmq.Socket, lz: LibzmqSocket, trizmq_binds: bool, endpoints: Endpoints
) -> str:
    """Bind one side and connect the other; return the endpoint."""
    if trizmq_binds:
        endpoint = await tz.bind(endpoints.for_trizmq())
        await lz.connect(endpoint)
    else:
        endpoint = await lz.bind(endpoints.for_libzmq())
        await tz.connect(endpoint)
    return endpoint


class Endpoints:
    """Fresh endpoints of one transport: ``tcp`` (loopback, random port) or ``ipc``."""

    def __init__(self, transport: str, directory: Path) -> None:
        self.transport = transport
        self.directory = directory
        self._count = itertools.count()

    def _ipc(self) -> str:
        path = f"{self.directory}/{next(self._count)}.ipc"
        assert len(path.encode()) <= 100, f"ipc path too long for a Unix socket: {path}"
        return f"ipc://{path}"

    def for_trizmq(self) -> str:
        """An endpoint for ``trizmq.Socket.bind`` (which returns the port it got)."""
        return "tcp://127.0.0.1:0" if self.transport == "tcp" else self._ipc()

    def for_libzmq(self) -> str:
        """An endpoint for :meth:`LibzmqSocket.bind` (which picks a random port)."""
        return "tcp://127.0.0.1" if self.transport == "tcp" else self._ipc()
