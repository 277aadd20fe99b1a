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
from types import TracebackType

import attrs
import trio

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
]


@attrs.frozen
class MonitorEvent:
    """Base of every monitor event: the local endpoint it concerns."""

    endpoint: str


@attrs.frozen
class Listening(MonitorEvent):
    """A bind succeeded; ``endpoint`` is the resolved one."""


@attrs.frozen
class BindFailed(MonitorEvent):
    """A bind failed."""

    reason: str


@attrs.frozen
class Accepted(MonitorEvent):
    """A connection was accepted from ``address``."""

    address: str


@attrs.frozen
class Connected(MonitorEvent):
    """A connecter's transport connection is up (the handshake follows)."""


@attrs.frozen
class ConnectDelayed(MonitorEvent):
    """A connect attempt failed; the connecter will try again."""

    reason: str


@attrs.frozen
class ConnectRetried(MonitorEvent):
    """The next connect attempt starts after ``interval`` seconds."""

    interval: float


@attrs.frozen
class HandshakeSucceeded(MonitorEvent):
    """The ZMTP handshake completed with a peer of ``peer_type``."""

    address: str
    peer_type: str


@attrs.frozen
class HandshakeFailed(MonitorEvent):
    """The handshake was refused or timed out."""

    address: str
    reason: str


@attrs.frozen
class Disconnected(MonitorEvent):
    """A handshaken connection ended."""

    address: str


@attrs.frozen
class Closed(MonitorEvent):
    """A listener closed."""


class Monitor:
    """An async iterator over one socket's events; see the module docstring."""

    def __init__(self, capacity: int, detach: Callable[[Monitor], None]) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, not {capacity!r}")
        self.capacity = capacity
        #: events dropped because nobody read them in time
        self.dropped = 0
        self._events: deque[MonitorEvent] = deque()
        self._lot = trio.lowlevel.ParkingLot()
        self._closed = False
        self._detach = detach

    def emit(self, event: MonitorEvent) -> None:
        """Queue ``event`` (the runtime calls this)."""
        if self._closed:
            return
        if len(self._events) >= self.capacity:
            self.dropped += 1
            return
        self._events.append(event)
        self._lot.unpark_all()

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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
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
        """The next event; ``trio.EndOfChannel`` once the monitor is finished."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise trio.EndOfChannel from None
