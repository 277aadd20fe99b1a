"""A virtual network for tests: in-memory tcp/ipc with deterministic fault injection.

While a :class:`VirtualNetwork` is installed in a ``trio.run`` (``async with
open_virtual_network() as net``), every ``tcp://`` and ``ipc://`` bind and connect of
every trizmq socket in that run goes through it instead of the operating system:
nothing touches a real port or file, and everything follows trio's clock, so with
``MockClock(autojump_threshold=0)`` (pytest-trio's ``autojump_clock`` fixture)
heartbeat timeouts, reconnect back-off and linger take no real time at all.

Faults are commands, applied at once and deterministic:

* :meth:`VirtualNetwork.cut` breaks every live link to an endpoint (both ends see a
  broken connection, as after a reset);
* :meth:`VirtualNetwork.stall` stops delivery in one or both directions (bytes
  queue up to the link's capacity, then the sender blocks, as with TCP);
  :meth:`VirtualNetwork.resume` lets them flow again;
* :meth:`VirtualNetwork.delay` delivers each chunk ``seconds`` after it was sent;
* :meth:`VirtualNetwork.refuse` makes connects fail with ``ConnectionRefusedError``
  until :meth:`VirtualNetwork.admit`.

Directions are named from the connecting side: ``"out"`` is connecter → binder,
``"in"`` is binder → connecter, ``"both"`` is both.
"""

from __future__ import annotations

import errno
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from .._options import Options
from ..transport import Codec, Endpoint, Listener, StreamTransport, run_transports, transport_for

__all__ = ["VirtualLink", "VirtualNetwork", "VirtualStream", "open_virtual_network"]

#: bytes a direction buffers before the sender blocks (like a socket buffer)
DEFAULT_CAPACITY = 256 * 1024
_DIRECTIONS = ("out", "in", "both")


class _Direction:
    """One direction of a link: timed chunks, a capacity, and fault switches."""

    def __init__(self, capacity: int) -> None:
        self.chunks: deque[tuple[float, bytes]] = deque()
        self.buffered = 0
        self.capacity = capacity
        self.delay = 0.0
        self.stalled = False
        self.eof = False
        self.broken = False
        self.readers = trio.lowlevel.ParkingLot()
        self.writers = trio.lowlevel.ParkingLot()

    def changed(self) -> None:
        self.readers.unpark_all()
        self.writers.unpark_all()


class VirtualStream(trio.abc.HalfCloseableStream):
    """One end of a virtual link: a trio stream over two :class:`_Direction` s."""

    def __init__(self, link: VirtualLink, outgoing: _Direction, incoming: _Direction) -> None:
        self.link = link
        self._out = outgoing
        self._in = incoming
        self._closed = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        out = self._out
        if self._closed:
            raise trio.ClosedResourceError("virtual stream is closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        while not out.broken and not out.eof and out.capacity and out.buffered >= out.capacity:
            await out.writers.park()
            if self._closed:
                raise trio.ClosedResourceError("virtual stream is closed")
        if out.broken or out.eof:
            raise trio.BrokenResourceError("virtual link is broken")
        chunk = bytes(data)
        if chunk:
            out.chunks.append((trio.current_time() + out.delay, chunk))
            out.buffered += len(chunk)
            out.readers.unpark_all()
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def wait_send_all_might_not_block(self) -> None:
        out = self._out
        while not out.broken and out.capacity and out.buffered >= out.capacity:
            await out.writers.park()
        await trio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        self._out.eof = True
        self._out.changed()
        await trio.lowlevel.checkpoint()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        incoming = self._in
        if self._closed:
            raise trio.ClosedResourceError("virtual stream is closed")
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            if incoming.broken:
                raise trio.BrokenResourceError("virtual link is broken")
            if incoming.chunks and not incoming.stalled:
                ready_at, chunk = incoming.chunks[0]
                now = trio.current_time()
                if ready_at <= now:
                    limit = len(chunk) if max_bytes is None else max_bytes
                    taken = chunk[:limit]
                    if len(taken) == len(chunk):
                        incoming.chunks.popleft()
                    else:
                        incoming.chunks[0] = (ready_at, chunk[limit:])
                    incoming.buffered -= len(taken)
                    incoming.writers.unpark_all()
                    await trio.lowlevel.cancel_shielded_checkpoint()
                    return taken
                with trio.move_on_at(ready_at):
                    await incoming.readers.park()
                continue
            if incoming.eof and not incoming.chunks:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return b""
            await incoming.readers.park()
            if self._closed:
                raise trio.ClosedResourceError("virtual stream is closed")

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            # the peer reads what was sent, then EOF; our reader and writer wake up
            self._out.eof = True
            self._out.changed()
            self._in.changed()
            self.link.network._forget(self.link)
        await trio.lowlevel.checkpoint()


class VirtualLink:
    """One connection: the connecting end, the accepting end, and their directions."""

    def __init__(self, network: VirtualNetwork, endpoint: str, capacity: int) -> None:
        self.network = network
        self.endpoint = endpoint
        self.out = _Direction(capacity)
        self.into = _Direction(capacity)
        self.client = VirtualStream(self, self.out, self.into)
        self.server = VirtualStream(self, self.into, self.out)

    def directions(self, which: str) -> list[_Direction]:
        """The direction objects named by ``which`` ("out", "in", "both")."""
        if which not in _DIRECTIONS:
            raise ValueError(f"direction must be one of {_DIRECTIONS}, not {which!r}")
        return {"out": [self.out], "in": [self.into], "both": [self.out, self.into]}[which]


class _VirtualListener:
    """A bound virtual endpoint; ``accept`` hands out the server ends of new links."""

    def __init__(self, network: VirtualNetwork, endpoint: str) -> None:
        self.network = network
        self.endpoint = endpoint
        self.pending: deque[VirtualLink] = deque()
        self.lot = trio.lowlevel.ParkingLot()
        self.closed = False

    async def accept(self) -> tuple[trio.abc.Stream, str]:
        while not self.pending:
            if self.closed:
                raise trio.ClosedResourceError("virtual listener is closed")
            await self.lot.park()
        await trio.lowlevel.checkpoint()
        link = self.pending.popleft()
        return link.server, f"virtual:{id(link):x}"

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            self.lot.unpark_all()
            self.network.listeners.pop(self.endpoint, None)
        await trio.lowlevel.checkpoint()


class VirtualNetwork:
    """The in-memory network of one ``trio.run``; see the module docstring."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.listeners: dict[str, _VirtualListener] = {}
        self.links: list[VirtualLink] = []
        self.refused: set[str] = set()
        self._next_port = 40000
        #: (endpoint, direction) -> fault applied to future links too
        self._stalled: dict[str, str] = {}
        self._delays: dict[str, tuple[float, str]] = {}

    # -- the transport interface ----------------------------------------------------
    def _key(self, endpoint: Endpoint) -> str:
        if endpoint.transport == "tcp" and endpoint.port == 0:
            self._next_port += 1
            host = "0.0.0.0" if endpoint.host == "*" else endpoint.host
            return f"tcp://{host}:{self._next_port}"
        if endpoint.transport == "tcp" and endpoint.host == "*":
            return f"tcp://0.0.0.0:{endpoint.port}"
        if endpoint.transport == "ipc" and endpoint.path == "*":
            self._next_port += 1
            return f"ipc://virtual-{self._next_port}"
        return str(endpoint)

    async def listen(self, endpoint: Endpoint) -> _VirtualListener:
        """Bind ``endpoint`` in the virtual network."""
        await trio.lowlevel.checkpoint()
        key = self._key(endpoint)
        if key in self.listeners:
            raise OSError(errno.EADDRINUSE, f"{key}: address already in use (virtual)")
        listener = _VirtualListener(self, key)
        self.listeners[key] = listener
        return listener

    async def connect(self, endpoint: Endpoint) -> trio.abc.Stream:
        """Connect to ``endpoint``; ``ConnectionRefusedError`` if nothing listens."""
        await trio.lowlevel.checkpoint()
        key = str(endpoint)
        listener = self._find(key)
        if listener is None or key in self.refused:
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"{key}: connection refused (virtual)")
        link = VirtualLink(self, listener.endpoint, self.capacity)
        if key in self._stalled:
            for direction in link.directions(self._stalled[key]):
                direction.stalled = True
        if key in self._delays:
            seconds, which = self._delays[key]
            for direction in link.directions(which):
                direction.delay = seconds
        self.links.append(link)
        listener.pending.append(link)
        listener.lot.unpark_all()
        return link.client

    def _find(self, key: str) -> _VirtualListener | None:
        found = self.listeners.get(key)
        if found is None and key.startswith("tcp://"):
            # a connect to 127.0.0.1:p reaches a bind on *:p / 0.0.0.0:p
            port = key.rsplit(":", 1)[-1]
            found = self.listeners.get(f"tcp://0.0.0.0:{port}")
        return found

    def _forget(self, link: VirtualLink) -> None:
        if link.client._closed and link.server._closed and link in self.links:
            self.links.remove(link)

    def _matching(self, endpoint: str | None) -> list[VirtualLink]:
        return [link for link in self.links if endpoint is None or link.endpoint == endpoint]

    # -- faults ------------------------------------------------------------------------
    def cut(self, endpoint: str | None = None) -> int:
        """Break every live link to ``endpoint`` (all links if None); returns how many."""
        links = self._matching(endpoint)
        for link in links:
            for direction in link.directions("both"):
                direction.broken = True
                direction.changed()
            self.links.remove(link)
        return len(links)

    def stall(self, endpoint: str, direction: str = "both") -> None:
        """Stop delivery on links to ``endpoint`` (existing and future) until resumed."""
        self._stalled[endpoint] = direction
        for link in self._matching(endpoint):
            for d in link.directions(direction):
                d.stalled = True

    def resume(self, endpoint: str) -> None:
        """Undo :meth:`stall` for ``endpoint``."""
        self._stalled.pop(endpoint, None)
        for link in self._matching(endpoint):
            for d in link.directions("both"):
                d.stalled = False
                d.changed()

    def delay(self, endpoint: str, seconds: float, direction: str = "both") -> None:
        """Deliver each chunk on links to ``endpoint`` ``seconds`` after it was sent."""
        if seconds < 0 or math.isnan(seconds):
            raise ValueError(f"seconds must be >= 0, not {seconds!r}")
        self._delays[endpoint] = (seconds, direction)
        for link in self._matching(endpoint):
            for d in link.directions(direction):
                d.delay = seconds

    def refuse(self, endpoint: str) -> None:
        """Make connects to ``endpoint`` fail with ``ConnectionRefusedError``."""
        self.refused.add(endpoint)

    def admit(self, endpoint: str) -> None:
        """Undo :meth:`refuse`."""
        self.refused.discard(endpoint)

    def link_count(self, endpoint: str | None = None) -> int:
        """Live links to ``endpoint`` (all if None)."""
        return len(self._matching(endpoint))


class VirtualTransport:
    """A byte-stream transport whose listeners and streams are a virtual network's;
    endpoints and codec are those of the real transport of the same scheme."""

    def __init__(self, network: VirtualNetwork, real: StreamTransport) -> None:
        self.network = network
        self.real = real
        self.scheme = real.scheme

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """As the real transport."""
        return self.real.parse(text, address, for_bind=for_bind)

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind in the virtual network."""
        return await self.network.listen(endpoint)

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """Connect in the virtual network."""
        return await self.network.connect(endpoint)

    def codec(self, socket_type: str, options: Options) -> Codec:
        """As the real transport."""
        return self.real.codec(socket_type, options)

    def abort(self, stream: trio.abc.Stream) -> None:
        """Nothing: a virtual link leaves nothing behind."""


@asynccontextmanager
async def open_virtual_network(capacity: int = DEFAULT_CAPACITY) -> AsyncIterator[VirtualNetwork]:
    """Route this ``trio.run``'s tcp/ipc endpoints through a new virtual network."""
    network = VirtualNetwork(capacity)
    overrides: dict[str, StreamTransport] = {}
    for scheme in ("tcp", "ipc"):
        real = transport_for(scheme)
        assert isinstance(real, StreamTransport)
        overrides[scheme] = VirtualTransport(network, real)
    token = run_transports.set(overrides)
    try:
        yield network
    finally:
        run_transports.reset(token)
