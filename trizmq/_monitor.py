"""Socket monitoring: typed events about a socket's endpoints and connections.

``sock.monitor()`` returns a :class:`Monitor`, an async iterator of events (one
frozen class per kind, all subclasses of :class:`MonitorEvent`, each with the
local ``endpoint``), as libzmq's ``zmq_socket_monitor`` reports them:

=====================  ==================================================
event                  when
=====================  ==================================================
``Listening``          a bind succeeded
``BindFailed``         a bind failed (the call raises too)
``Accepted``           a listener accepted a connection
``Connected``          a connecter's transport connection is up
``ConnectDelayed``     a connect attempt failed; another will follow
``ConnectRetried``     the next connect attempt is scheduled after ``interval``
``HandshakeSucceeded`` the ZMTP handshake completed (peer type known)
``HandshakeFailed``    the handshake was refused or timed out (``reason``)
``Disconnected``       a handshaken connection ended
``Closed``             a listener closed (unbind or socket close)
``Stats``              on request (:meth:`Monitor.request_stats`): the socket's
                       counters (libzmq's ``ZMQ_EVENT_PIPES_STATS``)
=====================  ==================================================

Rules: a monitor sees the events after its creation; it holds at most
``capacity`` undelivered events and drops the newest beyond that (counted in
:attr:`Monitor.dropped`), so a monitor nobody reads never grows without bound nor
slows the socket; iteration ends when the socket closes (after the events already
queued) or when the monitor is closed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import attrs
import trio

from ._stats import SocketStats

__all__ = [
    "Accepted",
    "BindFailed",
    "Closed",
    "ConnectDelayed",
    "ConnectRetried",
    "Connected",
    "Disconnected",
    "HandshakeFailed",
    "HandshakeSucceeded",
    "Listening",
    "Monitor",
    "MonitorEvent",
    "Stats",
]


@attrs.frozen
class MonitorEvent:
    """Base of every monitor event: the local endpoint it concerns.

    Events are frozen (immutable and hashable) and compare by value; each argument
    below is kept as the attribute of the same name, in every subclass too.

    Args:
        endpoint: The local endpoint concerned, as bound (port resolved) or as
            connected, e.g. ``"tcp://127.0.0.1:5555"``.
    """

    endpoint: str


@attrs.frozen
class Listening(MonitorEvent):
    """A bind succeeded; ``endpoint`` is the resolved one.

    Args:
        endpoint: The bound endpoint, with a port of ``0`` or ``*`` resolved to the
            port actually taken.
    """


@attrs.frozen
class BindFailed(MonitorEvent):
    """A bind failed (the ``bind`` call raises too).

    Args:
        endpoint: The endpoint that could not be bound.
        reason: Why, as a human-readable text (the operating system's error), not a
            stable error code.
    """

    reason: str


@attrs.frozen
class Accepted(MonitorEvent):
    """A connection was accepted from ``address``; the handshake follows.

    Args:
        endpoint: The bound endpoint that accepted the connection.
        address: The remote peer's address, e.g. ``"127.0.0.1:40550"``.
    """

    address: str


@attrs.frozen
class Connected(MonitorEvent):
    """A connecter's transport connection is up (the handshake follows).

    Args:
        endpoint: The endpoint connected to.
    """


@attrs.frozen
class ConnectDelayed(MonitorEvent):
    """A connect attempt failed; the connecter will try again.

    A :class:`ConnectRetried` with the wait before the next attempt follows.

    Args:
        endpoint: The endpoint the attempt was made to.
        reason: Why it failed (refused, unreachable, ...), as a human-readable text,
            not a stable error code.
    """

    reason: str


@attrs.frozen
class ConnectRetried(MonitorEvent):
    """The next connect attempt starts after ``interval`` seconds.

    Emitted after a failed attempt or a lost connection.

    Args:
        endpoint: The endpoint that will be connected to again.
        interval: Seconds until the next attempt, back-off and jitter included.
    """

    interval: float


@attrs.frozen
class HandshakeSucceeded(MonitorEvent):
    """The ZMTP handshake completed with a peer of ``peer_type``.

    Args:
        endpoint: The local endpoint of the connection (bound or connected to).
        address: The remote peer's address (``"127.0.0.1:40550"``) on the accepting
            side; ``""`` on the connecting side, where ``endpoint`` names the peer.
        peer_type: The peer's socket type, e.g. ``"PULL"``.
    """

    address: str
    peer_type: str


@attrs.frozen
class HandshakeFailed(MonitorEvent):
    """The handshake was refused or timed out.

    Also emitted when the peer left during the handshake, or when the connection was
    evicted by a newer one because every ``max_handshakes`` slot was taken.

    Args:
        endpoint: The local endpoint of the connection (bound or connected to).
        address: The remote peer's address on the accepting side; ``""`` on the
            connecting side.
        reason: Why, as a human-readable text, not a stable error code.
    """

    address: str
    reason: str


@attrs.frozen
class Disconnected(MonitorEvent):
    """A handshaken connection ended.

    A connection whose handshake had succeeded ended: the peer closed it, a
    heartbeat timed out or the peer broke the protocol. Connections dropped because
    the socket itself is closing are not reported.

    Args:
        endpoint: The local endpoint of the connection (bound or connected to).
        address: The remote peer's address on the accepting side; ``""`` on the
            connecting side.
    """

    address: str


@attrs.frozen
class Closed(MonitorEvent):
    """A listener closed (an ``unbind``, or the socket's close).

    Args:
        endpoint: The bound endpoint that closed.
    """


@attrs.frozen
class Stats(MonitorEvent):
    """The socket's counters, queued on request by :meth:`Monitor.request_stats`.

    What libzmq's ``ZMQ_EVENT_PIPES_STATS`` reports (queue depths, on request), and
    the rest of ``sock.stats()``: it is the same snapshot, taken as the request was
    made, in order with the other events.

    Args:
        endpoint: ``""``: the figures are the whole socket's (each peer's endpoint is
            in ``stats.peers``).
        stats: The snapshot, a :class:`trizmq.SocketStats`.
    """

    stats: SocketStats


class Monitor:
    """An async iterator over one socket's events, in order, bounded.

    Made by ``sock.monitor()``, not directly. A monitor sees the events emitted after
    its creation, in order. It holds at most ``capacity`` unread events: when it is
    full, newer events are dropped (never older ones) and counted in ``dropped``, so
    emitting never waits. Iteration ends, without error, when the socket closes
    (after the events already queued) or when the monitor is closed. Used as an
    async context manager it closes on the way out.

    Args:
        capacity: The most unread events held; at least 1.
        detach: Called with the monitor when it is closed (the socket forgets it).
        snapshot: Takes the socket's counters (``sock.stats``), for
            :meth:`request_stats`.

    Raises:
        ValueError: If ``capacity`` is below 1.
    """

    def __init__(
        self,
        capacity: int,
        detach: Callable[[Monitor], None],
        snapshot: Callable[[], SocketStats] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity!r}")
        self.capacity = capacity
        #: events dropped because nobody read them in time
        self.dropped = 0
        self._events: deque[MonitorEvent] = deque()
        self._lot = trio.lowlevel.ParkingLot()
        self._closed = False
        self._detach = detach
        self._snapshot = snapshot

    def emit(self, event: MonitorEvent) -> None:
        """Queue ``event`` (the runtime calls this).

        Does nothing once the monitor is closed; when ``capacity`` events are already
        waiting, the event is dropped and counted in ``dropped``. Never waits.

        Args:
            event: The event to queue.
        """
        if self._closed:
            return
        if len(self._events) >= self.capacity:
            self.dropped += 1
            return
        self._events.append(event)
        self._lot.unpark_all()

    def request_stats(self) -> None:
        """Queue a :class:`Stats` event with the socket's counters as they are now.

        The event goes to this monitor only, after the events already queued, under
        the same ``capacity`` as any other (dropped, and counted in ``dropped``, when
        the monitor is full). Does nothing once the monitor is closed. Call it from
        the socket's own ``trio.run``.
        """
        if self._closed or self._snapshot is None:
            return
        self.emit(Stats("", self._snapshot()))

    def close(self) -> None:
        """Stop monitoring; iteration ends after the events already queued."""
        if not self._closed:
            self._closed = True
            self._detach(self)
            self._lot.unpark_all()

    async def aclose(self) -> None:
        """Async form of :meth:`close`."""
        self.close()
        await trio.lowlevel.checkpoint()

    async def __aenter__(self) -> Monitor:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __aiter__(self) -> Monitor:
        return self

    async def __anext__(self) -> MonitorEvent:
        while not self._events:
            if self._closed:
                raise StopAsyncIteration
            await self._lot.park()
        await trio.lowlevel.checkpoint_if_cancelled()
        return self._events.popleft()

    async def next_event(self) -> MonitorEvent:
        """The next event; ``trio.EndOfChannel`` once the monitor is finished.

        Waits until an event is queued.

        Returns:
            The oldest unread event.

        Raises:
            trio.EndOfChannel: When the monitor is closed (or its socket is) and every
                queued event has been read.
        """
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None
