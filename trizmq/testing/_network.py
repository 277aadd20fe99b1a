"""A virtual network for tests: in-memory tcp/ipc with deterministic fault injection.

While a :class:`VirtualNetwork` is installed in a ``trio.run`` (``async with
open_virtual_network() as net``), every ``tcp://`` and ``ipc://`` bind and connect of
every trizmq socket in that run goes through it instead of the operating system:
nothing touches a real port or file, and everything follows trio's clock, so with
``MockClock(autojump_threshold=0)`` (pytest-trio's ``autojump_clock`` fixture)
heartbeat timeouts, reconnect back-off and linger take no real time at all.

Addresses behave as on one machine: a bind on ``tcp://*:p`` or ``tcp://0.0.0.0:p``
takes port ``p`` on every address and is reached by a connect to any host at that
port (``127.0.0.1``, ``localhost``, a name); ``localhost`` means ``127.0.0.1``; a
second bind that overlaps a bound one fails with ``EADDRINUSE``; a connect nobody
listens for fails with ``ConnectionRefusedError`` (the socket then backs off).

Faults are commands, checked when they are made, applied at once and deterministic:

* :meth:`VirtualNetwork.cut` breaks every live link to an endpoint (both ends see a
  broken connection, as after a reset);
* :meth:`VirtualNetwork.stall` stops delivery in one or both directions (bytes
  queue up to the link's capacity, then the sender blocks, as with TCP);
  :meth:`VirtualNetwork.resume` lets them flow again;
* :meth:`VirtualNetwork.delay` delivers each chunk ``seconds`` after it was sent,
  handshake included unless ``handshake=False``;
* :meth:`VirtualNetwork.drop` drops the next ``count`` whole messages (never a
  command such as PING or SUBSCRIBE; not under CURVE, see :mod:`._frames`);
* :meth:`VirtualNetwork.refuse` makes connects fail with ``ConnectionRefusedError``
  until :meth:`VirtualNetwork.admit`.

A fault names a listener by any endpoint that reaches it: after a bind on
``tcp://*:5555``, ``tcp://127.0.0.1:5555``, ``tcp://localhost:5555`` and
``tcp://*:5555`` all name it (see :func:`_overlaps`). Faults other than ``cut``
stand: they also apply to links made later, until undone.

Directions are named from the connecting side: ``"out"`` is connecter → binder,
``"in"`` is binder → connecter, ``"both"`` is both.
"""

from __future__ import annotations

import errno
import ipaddress
import math
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio

from .._docparts import shares_doc
from .._endpoint import parse_endpoint
from .._errors import EndpointError
from .._options import Options
from ..transport import (
    Codec,
    Endpoint,
    Listener,
    SocketKind,
    StreamTransport,
    run_transports,
    transport_for,
)
from ._frames import FrameWalker

__all__ = ["VirtualLink", "VirtualNetwork", "VirtualStream", "open_virtual_network"]

#: bytes a direction buffers before the sender blocks (like a socket buffer)
DEFAULT_CAPACITY = 256 * 1024
_DIRECTIONS = ("out", "in", "both")
#: the host a wildcard bind (``*``, ``0.0.0.0``, ``::``) stands for
_ANY = "*"
#: ports handed out for ``tcp://host:0`` / ``tcp://host:*`` binds
_EPHEMERAL = range(40001, 65536)


# -- addresses ---------------------------------------------------------------------------
@attrs.frozen(slots=True)
class _Address:
    """A tcp or ipc address in canonical form: what binds and faults are compared by."""

    transport: str
    #: tcp: ``*`` for any address, ``127.0.0.1`` for localhost, else the host as written
    #: (lower case, IPv6 compressed); ipc: the path
    host: str
    #: tcp only (0 for ipc)
    port: int = 0


def _canonical_host(host: str) -> str:
    host = host.lower()
    if host in (_ANY, "localhost"):
        return _ANY if host == _ANY else "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host  # a name: only itself (and a wildcard bind) reaches it
    return _ANY if ip.is_unspecified else ip.compressed


def _address(endpoint: Endpoint) -> _Address:
    if endpoint.transport == "tcp":
        assert endpoint.host is not None and endpoint.port is not None
        return _Address("tcp", _canonical_host(endpoint.host), endpoint.port)
    assert endpoint.path is not None
    return _Address("ipc", endpoint.path)


def _overlaps(a: _Address, b: _Address) -> bool:
    """Whether ``a`` and ``b`` can name the same listener: same ipc path, or same tcp
    port on the same host or with either a wildcard. Binds conflict by this rule,
    connects and faults find their listener by it."""
    if a.transport != b.transport:
        return False
    if a.transport == "ipc":
        return a.host == b.host
    return a.port == b.port and (a.host == b.host or _ANY in (a.host, b.host))


def _display(address: _Address, ipv6: bool) -> str:
    """The bound endpoint as a socket reports it (``tcp://0.0.0.0:p`` for a wildcard)."""
    if address.transport == "ipc":
        return f"ipc://{address.host}"
    host = address.host
    if host == _ANY:
        host = "::" if ipv6 else "0.0.0.0"
    if ":" in host:
        host = f"[{host}]"
    return f"tcp://{host}:{address.port}"


# -- argument checks: a bad fault fails at the call, naming the argument ---------------------
def _fault_endpoint(endpoint: object) -> _Address:
    if not isinstance(endpoint, str):
        raise TypeError(
            f"endpoint must be a str like 'tcp://127.0.0.1:5555', not {type(endpoint).__name__}"
        )
    try:
        parsed = parse_endpoint(endpoint, for_bind=True)
    except EndpointError as exc:
        raise ValueError(f"endpoint {endpoint!r} is not a valid endpoint: {exc}") from None
    if parsed.transport not in ("tcp", "ipc"):
        raise ValueError(
            f"endpoint {endpoint!r}: the virtual network carries tcp:// and ipc:// only, "
            f"so a fault on {parsed.transport}:// could never apply"
        )
    if parsed.transport == "tcp" and parsed.port == 0:
        raise ValueError(
            f"endpoint {endpoint!r} names no port: give the port that was bound (bind() returns it)"
        )
    if parsed.transport == "ipc" and parsed.path == "*":
        raise ValueError(
            f"endpoint {endpoint!r} names no path: give the path that was bound (bind() returns it)"
        )
    return _address(parsed)


def _check_direction(direction: object) -> str:
    if not isinstance(direction, str):
        raise TypeError(f"direction must be 'out', 'in' or 'both', not {type(direction).__name__}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'out', 'in' or 'both', not {direction!r}")
    return direction


def _check_seconds(seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"seconds must be a number, not {type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(
            f"seconds must be a finite number >= 0, not {seconds!r} (to hold bytes "
            "indefinitely, use stall())"
        )
    return float(seconds)


def _check_count(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"count must be an int, not {type(count).__name__}")
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count!r}")
    return count


def _check_flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


# -- links -------------------------------------------------------------------------------
class _Direction:
    """One direction of a link: timed chunks, a capacity, and fault switches."""

    def __init__(self, link: VirtualLink, name: str, capacity: int) -> None:
        self.chunks: deque[tuple[float, bytes]] = deque()
        self.buffered = 0
        self.capacity = capacity
        self.delay = 0.0
        #: False: the delay applies only once this direction's handshake is over
        self.delay_handshake = True
        self.stalled = False
        self.eof = False
        self.broken = False
        self.readers = trio.lowlevel.ParkingLot()
        self.writers = trio.lowlevel.ParkingLot()
        #: finds message boundaries, for drop() and delay(handshake=False)
        network = link.network
        self.walker = FrameWalker(
            lambda: network._take_drop(link, name), lambda: bool(network._drops)
        )

    def changed(self) -> None:
        self.readers.unpark_all()
        self.writers.unpark_all()

    def push(self, data: bytes) -> None:
        """Queue ``data`` for the reader (less any dropped message), timed by the delay."""
        now = trio.current_time()
        for piece, handshake in self.walker.feed(data):
            delay = self.delay if self.delay_handshake or not handshake else 0.0
            self.chunks.append((now + delay, piece))
            self.buffered += len(piece)
        self.readers.unpark_all()


class VirtualStream(trio.abc.HalfCloseableStream):
    """One end of a virtual link: a trio stream over two :class:`_Direction` s.

    Made by the network, not directly: ``VirtualLink.client`` is the connecting end
    and ``VirtualLink.server`` the accepting one. Sending blocks while the outgoing
    direction holds its capacity of bytes; a cut link raises
    ``trio.BrokenResourceError`` at both ends.

    Args:
        link: The link this stream is an end of.
        outgoing: The direction this end sends on.
        incoming: The direction this end receives from.
    """

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
        if data:
            out.push(bytes(data))
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
    """One connection: the connecting end, the accepting end, and their directions.

    ``endpoint`` is the listener's bound endpoint (``tcp://0.0.0.0:5555`` after a bind
    on ``tcp://*:5555``); ``connected_to`` is the endpoint the connecter asked for.
    ``client`` and ``server`` are the connecting and accepting :class:`VirtualStream`
    ends; ``out`` (connecter to binder) and ``into`` (binder to connecter) are the
    two directions. Made by :meth:`VirtualNetwork.connect`, not directly; the live
    links are in ``VirtualNetwork.links``.

    Args:
        network: The network the link belongs to.
        listener: The listener the connect reached.
        connected_to: The endpoint the connecter asked for.
        capacity: Bytes each direction buffers before the sender blocks.
    """

    def __init__(
        self,
        network: VirtualNetwork,
        listener: _VirtualListener,
        connected_to: str,
        capacity: int,
    ) -> None:
        self.network = network
        self.endpoint = listener.endpoint
        self.connected_to = connected_to
        self.address = listener.address
        self.out = _Direction(self, "out", capacity)
        self.into = _Direction(self, "in", capacity)
        self.client = VirtualStream(self, self.out, self.into)
        self.server = VirtualStream(self, self.into, self.out)

    def directions(self, which: str) -> list[_Direction]:
        """The direction objects named by ``which`` ("out", "in", "both").

        Args:
            which: ``"out"`` (connecter to binder), ``"in"`` (binder to connecter) or
                ``"both"``.

        Returns:
            The one or two directions, ``out`` first.

        Raises:
            TypeError: If ``which`` is not a ``str``.
            ValueError: If ``which`` is not ``"out"``, ``"in"`` or ``"both"``.
        """
        which = _check_direction(which)
        return {"out": [self.out], "in": [self.into], "both": [self.out, self.into]}[which]


class _VirtualListener:
    """A bound virtual endpoint; ``accept`` hands out the server ends of new links."""

    def __init__(self, network: VirtualNetwork, address: _Address, endpoint: str) -> None:
        self.network = network
        self.address = address
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
            if self.network.listeners.get(self.endpoint) is self:
                del self.network.listeners[self.endpoint]
        await trio.lowlevel.checkpoint()


@attrs.define(slots=True)
class _DropFault:
    """``count`` more messages to drop in ``directions`` of the links it names."""

    address: _Address
    directions: tuple[str, ...]
    remaining: int


@shares_doc
class VirtualNetwork:
    """The in-memory network of one ``trio.run``, with faults to inject.

    Installed by :func:`open_virtual_network` (or the ``virtual_network`` fixture),
    which makes it; while it is installed every ``tcp://`` and ``ipc://`` bind and
    connect of the run's sockets goes through it, as on one machine.

    Every fault method takes an ``endpoint`` that names a listener the way a connect
    would reach it (``tcp://127.0.0.1:5555``, ``tcp://localhost:5555`` and
    ``tcp://*:5555`` all name a bind on ``tcp://*:5555``), and checks its arguments at
    the call: ``TypeError`` for a wrong type, ``ValueError`` for a bad value, each
    naming the argument. Faults other than :meth:`cut` stand: they apply to links
    made later too, until undone. Directions are named from the connecting side:
    ``"out"`` is connecter to binder, ``"in"`` binder to connecter, ``"both"`` both.

    Args:
        capacity: Bytes each direction of a link buffers before the sender blocks
            (256 KiB by default).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        #: bound endpoint (as reported by ``bind``) -> listener
        self.listeners: dict[str, _VirtualListener] = {}
        #: live links, oldest first
        self.links: list[VirtualLink] = []
        #: messages dropped by :meth:`drop` so far
        self.dropped = 0
        self._ports = iter(_EPHEMERAL)
        self._ipc_names = 0
        # standing faults, applied to future links too
        self._stalled: dict[_Address, str] = {}
        self._delays: dict[_Address, tuple[float, str, bool]] = {}
        self._refused: list[_Address] = []
        self._drops: list[_DropFault] = []

    # -- the transport interface ----------------------------------------------------
    async def listen(self, endpoint: Endpoint) -> _VirtualListener:
        """Bind ``endpoint`` in the virtual network; ``OSError`` (EADDRINUSE) if taken.

        Port 0 (or ``*``) takes a free port, from 40001 up; ``ipc://*`` a new path.

        Args:
            endpoint: The parsed tcp or ipc endpoint to bind.

        Returns:
            The listener, which reports the bound endpoint (port or path resolved).

        Raises:
            OSError: ``EADDRINUSE`` if a bound endpoint overlaps this one, or no free
                port is left.
        """
        await trio.lowlevel.checkpoint()
        address = _address(endpoint)
        if address.transport == "ipc" and address.host == "*":
            self._ipc_names += 1
            address = _Address("ipc", f"virtual-{self._ipc_names}")
        elif address.transport == "tcp" and address.port == 0:
            address = attrs.evolve(address, port=self._free_port(address))
        taken = self._listener_for(address)
        if taken is not None:
            raise OSError(
                errno.EADDRINUSE,
                f"{endpoint}: address already in use by a bind on {taken.endpoint} (virtual)",
            )
        ipv6 = endpoint.host is not None and ":" in endpoint.host
        listener = _VirtualListener(self, address, _display(address, ipv6))
        self.listeners[listener.endpoint] = listener
        return listener

    async def connect(self, endpoint: Endpoint) -> trio.abc.Stream:
        """Connect to ``endpoint``; ``ConnectionRefusedError`` if nothing listens.

        The standing faults of its listener (stall, delay, drop) apply to the new link.

        Args:
            endpoint: The parsed tcp or ipc endpoint to connect to.

        Returns:
            The connecting end of a new :class:`VirtualLink`.

        Raises:
            ConnectionRefusedError: If nothing listens there, or connects to it are
                refused (:meth:`refuse`).
        """
        await trio.lowlevel.checkpoint()
        listener = self._listener_for(_address(endpoint))
        if listener is None or any(_overlaps(a, listener.address) for a in self._refused):
            raise ConnectionRefusedError(
                errno.ECONNREFUSED, f"{endpoint}: connection refused (virtual)"
            )
        link = VirtualLink(self, listener, str(endpoint), self.capacity)
        for address, which in self._stalled.items():
            if _overlaps(address, link.address):
                for direction in link.directions(which):
                    direction.stalled = True
        for address, (seconds, which, handshake) in self._delays.items():
            if _overlaps(address, link.address):
                for direction in link.directions(which):
                    direction.delay = seconds
                    direction.delay_handshake = handshake
        self.links.append(link)
        listener.pending.append(link)
        listener.lot.unpark_all()
        return link.client

    def _listener_for(self, address: _Address) -> _VirtualListener | None:
        """The listener a connect to ``address`` reaches: an exact bind, else a wildcard."""
        found = None
        for listener in self.listeners.values():
            if listener.address == address:
                return listener
            if _overlaps(listener.address, address):
                found = listener
        return found

    def _free_port(self, address: _Address) -> int:
        for port in self._ports:
            if self._listener_for(attrs.evolve(address, port=port)) is None:
                return port
        raise OSError(errno.EADDRINUSE, "no free virtual port left")

    def _forget(self, link: VirtualLink) -> None:
        if link.client._closed and link.server._closed and link in self.links:
            self.links.remove(link)

    def _matching(self, address: _Address | None) -> list[VirtualLink]:
        return [link for link in self.links if address is None or _overlaps(address, link.address)]

    def _take_drop(self, link: VirtualLink, direction: str) -> bool:
        """Whether the message ``link`` starts sending in ``direction`` is to be dropped."""
        for fault in self._drops:
            if direction in fault.directions and _overlaps(fault.address, link.address):
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._drops.remove(fault)
                self.dropped += 1
                return True
        return False

    # -- faults ------------------------------------------------------------------------
    def cut(self, endpoint: str | None = None) -> int:
        """Break every live link to ``endpoint`` (all links if None); returns how many.

        Both ends see ``trio.BrokenResourceError``, as after a reset; bytes still in
        flight are lost. Links made afterwards are not affected.

        Args:
            {fault_endpoint_or_none}

        Returns:
            The number of links broken.

        Raises:
            {fault_endpoint_or_none_errors}
        """
        links = self._matching(None if endpoint is None else _fault_endpoint(endpoint))
        for link in links:
            for direction in link.directions("both"):
                direction.broken = True
                direction.changed()
            self.links.remove(link)
        return len(links)

    def stall(self, endpoint: str, direction: str = "both") -> None:
        """Stop delivery on links to ``endpoint`` (existing and future) until resumed.

        Bytes sent meanwhile queue up to the link's capacity, then the sender blocks.

        Args:
            {fault_endpoint}
            direction: ``"out"``, ``"in"`` or ``"both"``.

        Raises:
            TypeError: If an argument has the wrong type.
            ValueError: If ``endpoint`` or ``direction`` is not valid.
        """
        address = _fault_endpoint(endpoint)
        direction = _check_direction(direction)
        self._stalled[address] = direction
        for link in self._matching(address):
            for d in link.directions(direction):
                d.stalled = True

    def resume(self, endpoint: str) -> None:
        """Undo :meth:`stall` for ``endpoint``: stalled bytes flow again, in order.

        Both directions of every link to ``endpoint`` are resumed.

        Args:
            {fault_endpoint}

        Raises:
            {fault_endpoint_errors}
        """
        address = _fault_endpoint(endpoint)
        for stalled in [a for a in self._stalled if _overlaps(a, address)]:
            del self._stalled[stalled]
        for link in self._matching(address):
            for d in link.directions("both"):
                d.stalled = False
                d.changed()

    def delay(
        self, endpoint: str, seconds: float, direction: str = "both", *, handshake: bool = True
    ) -> None:
        """Deliver each chunk on links to ``endpoint`` ``seconds`` after it was sent.

        Applies to existing and future links (``seconds=0`` undoes it); chunks already
        in flight keep their time. With ``handshake=True`` (the default, like a slow
        network) the greeting and handshake are delayed too, so a connection takes two
        round trips or more longer to come up (the greeting goes in stages); with
        ``handshake=False`` they pass at once and only what follows the handshake
        (messages and commands) is delayed.

        Args:
            {fault_endpoint}
            seconds: The delay in seconds, finite and at least 0; 0 removes the delay.
            direction: ``"out"``, ``"in"`` or ``"both"``.
            handshake: Whether the greeting and handshake are delayed too (keyword
                only).

        Raises:
            TypeError: If an argument has the wrong type.
            ValueError: If ``endpoint`` or ``direction`` is not valid, or ``seconds``
                is negative or not finite (use :meth:`stall` to hold bytes
                indefinitely).
        """
        address = _fault_endpoint(endpoint)
        seconds = _check_seconds(seconds)
        direction = _check_direction(direction)
        handshake = _check_flag("handshake", handshake)
        if seconds:
            self._delays[address] = (seconds, direction, handshake)
        else:
            self._delays.pop(address, None)
        for link in self._matching(address):
            for d in link.directions(direction):
                d.delay = seconds
                d.delay_handshake = handshake

    def drop(self, endpoint: str, count: int = 1, direction: str = "both") -> None:
        """Drop the next ``count`` whole messages sent on links to ``endpoint``.

        A message is dropped with all its frames, as the sending side writes it onto
        any link (existing or future) to ``endpoint`` in ``direction``, until ``count``
        have been dropped (:attr:`dropped` counts them). Commands (PING, PONG,
        SUBSCRIBE, CANCEL, the handshake) are never dropped. Under CURVE nothing is
        dropped: messages travel encrypted, with heartbeats and frame flags hidden,
        and the peer refuses a gap in the nonces, so a CURVE link leaves the count
        to other links.

        Args:
            {fault_endpoint}
            count: How many messages to drop, at least 1.
            direction: ``"out"``, ``"in"`` or ``"both"`` (either direction counts).

        Raises:
            TypeError: If an argument has the wrong type.
            ValueError: If ``endpoint`` or ``direction`` is not valid, or ``count`` is
                below 1.
        """
        address = _fault_endpoint(endpoint)
        count = _check_count(count)
        direction = _check_direction(direction)
        directions = ("out", "in") if direction == "both" else (direction,)
        self._drops.append(_DropFault(address, directions, count))

    def refuse(self, endpoint: str) -> None:
        """Make new connects to ``endpoint`` fail with ``ConnectionRefusedError``.

        Live links are not affected (:meth:`cut` them too for that).

        Args:
            {fault_endpoint}

        Raises:
            {fault_endpoint_errors}
        """
        self._refused.append(_fault_endpoint(endpoint))

    def admit(self, endpoint: str) -> None:
        """Undo :meth:`refuse`.

        Args:
            {fault_endpoint}

        Raises:
            {fault_endpoint_errors}
        """
        address = _fault_endpoint(endpoint)
        self._refused = [a for a in self._refused if not _overlaps(a, address)]

    def link_count(self, endpoint: str | None = None) -> int:
        """Live links to ``endpoint`` (all if None).

        Args:
            {fault_endpoint_or_none}

        Returns:
            The number of live links.

        Raises:
            {fault_endpoint_or_none_errors}
        """
        return len(self._matching(None if endpoint is None else _fault_endpoint(endpoint)))


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

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """As the real transport."""
        return self.real.codec(kind, options, endpoint, client=client)

    def abort(self, stream: trio.abc.Stream) -> None:
        """Nothing: a virtual link leaves nothing behind."""


@asynccontextmanager
async def open_virtual_network(capacity: int = DEFAULT_CAPACITY) -> AsyncIterator[VirtualNetwork]:
    """Route this ``trio.run``'s tcp/ipc endpoints through a new virtual network.

    Works on any clock; give the run a ``trio.testing.MockClock`` to test timers in
    virtual time. The real transports are back when the block ends.

    Args:
        capacity: Bytes each direction of a link buffers before the sender blocks.

    Yields:
        The installed :class:`VirtualNetwork`.

    Example::

        async with trizmq.testing.open_virtual_network() as net:
            async with trizmq.Pull(bind="tcp://127.0.0.1:5555") as pull:
                async with trizmq.Push(connect="tcp://127.0.0.1:5555") as push:
                    await push.send(b"hello")
                    assert await pull.recv() == b"hello"
                    net.cut("tcp://127.0.0.1:5555")  # the Push reconnects
    """
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
