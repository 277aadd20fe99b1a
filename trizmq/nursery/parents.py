"""What each actor of the runtime sees of its parent: one :class:`~typing.Protocol` per child.

A child actor is handed its parent, typed as the few calls and attributes it uses
on it, never as the parent's class: so no actor imports the module of the actor
that runs it, each child can be tested with a fake parent, and the imports inside
``trizmq.nursery`` point one way (the order is in ``docs/architecture.md``, "the
order inside the runtime"). This module sits below every actor and below the fast
path, which types against it too; it imports nothing of the runtime but what the
Protocols name, and that only for the type checker, and the heartbeat's
``HeartbeatParent``, which the reader's and the writer's views extend.

Who uses which (every parent of a connection's task is a ``ConnectionActor``,
every other parent is the socket's ``SocketRuntime``):

* the connection actor: :class:`ConnectionParent`; the acceptor:
  :class:`AcceptorParent`; the connecter: :class:`ConnecterParent`; the snapshot
  of the socket's counts: :class:`CountsParent`;
* the reader: :class:`ReaderParent`; the writer: :class:`WriterParent` (which reads
  the socket through the connection as a :class:`SocketState`); the heartbeat task
  sees its connection as ``heartbeat.HeartbeatParent`` (what to log it as, how to
  end it), which both of theirs extend;
* the fast path: :class:`ReadThroughParent` (its read-through) and
  :class:`ConnectionCodec` (its write-through);
* the acceptor, the connecter and the connection actor report to the socket's
  counts as :class:`Counts`.

:class:`Input` and :class:`Output`, where a reader's bytes come from and where a
writer's go, live here too: they are what the connection hands its reader and
writer (trio's stream calls, or the fast path's system calls).

The Protocols are annotations only: an actor reads its parent's attributes as it
always did, with no wrapper in between.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

from .heartbeat import HeartbeatParent

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Iterable

    import trio

    from .._monitor import MonitorEvent
    from .._options import Options
    from ..patterns.sockets.base import SocketStrategy
    from ..patterns.sockets.socket_type import SocketType
    from ..transport.base import Codec
    from ..zmtp import ProtocolError
    from ..zmtp.connection import Received
    from ..zmtp.encoding import Buffer
    from ..zmtp.outbound import Outbound
    from .handshake_io import Zap
    from .heartbeat import Heartbeat
    from .peers import Peer, PeerTable
    from .pipe import Pipe
    from .slots import HandshakeSlots

__all__ = [
    "AcceptorParent",
    "ConnecterParent",
    "ConnectionCodec",
    "ConnectionParent",
    "Counts",
    "CountsParent",
    "Input",
    "Output",
    "ReadThroughParent",
    "ReaderParent",
    "SocketState",
    "WriterParent",
]

#: the type of the socket's fast-path state (``FastPath``): its class sits above this
#: module, since the fast path types against the Protocols here
FastT_co = TypeVar("FastT_co", covariant=True)


# -- the socket, as its actors see it -------------------------------------------------------
class Counts(Protocol):
    """The socket's counts (``SocketCounts``), as the actors that report to them see them."""

    def event(self, name: str) -> None:
        """One connection event (accepted, connected, reconnects) happened."""
        ...

    def handshake_failed(self, cause: str) -> None:
        """A handshake failed for ``cause``."""
        ...

    def disconnected(self, cause: str) -> None:
        """A connection that was up ended for ``cause``."""
        ...


class SocketState(Protocol):
    """The socket, as a connection's writer and heartbeat read it (``actor.runtime``):
    its options, whether it is closing, and its peer table (whose ``flush_lot`` a
    closing socket lingers on)."""

    @property
    def options(self) -> Options: ...

    @property
    def closing(self) -> bool: ...

    @property
    def peers(self) -> PeerTable: ...


class ConnectionParent(SocketState, Protocol[FastT_co]):
    """The socket, as one of its connection actors sees it: what a handshake needs
    (ZAP, the handshake slots), the peer table a handshaken peer joins, where
    monitor events and counts go, and the socket's fast path (``None``: the
    portable path)."""

    @property
    def socket_type(self) -> str: ...

    @property
    def socket_kind(self) -> SocketType:
        """The socket's type: its row of the socket-type table."""
        ...

    @property
    def strategy(self) -> SocketStrategy: ...

    @property
    def takes_bare_messages(self) -> bool: ...

    @property
    def fast(self) -> FastT_co | None: ...

    @property
    def zap(self) -> Zap: ...

    @property
    def handshake_slots(self) -> HandshakeSlots: ...

    @property
    def counts(self) -> Counts: ...

    def emit(self, event: MonitorEvent) -> None:
        """Report a monitor event."""
        ...


class ConnecterParent(ConnectionParent[FastT_co], Protocol[FastT_co]):
    """The socket, as the connecter of one connected endpoint sees it: a connection
    actor's parent that also makes the pipes of a new peer."""

    def new_pipes(self) -> tuple[Pipe, Pipe]:
        """The (outgoing, incoming) pipes of a new connection's peer."""
        ...


class AcceptorParent(ConnecterParent[FastT_co], Protocol[FastT_co]):
    """The socket, as the acceptor of one bound endpoint sees it: what a connecter
    sees (a connection actor's parent that also makes the pipes of a new peer), and
    the nursery it runs each accepted connection in."""

    @property
    def nursery(self) -> trio.Nursery: ...


class CountsParent(Protocol):
    """The socket, as the snapshot of its counts (``SocketCounts.snapshot``) reads it:
    its strategy, its peers and the transports' counters."""

    @property
    def strategy(self) -> SocketStrategy: ...

    @property
    def peers(self) -> Iterable[Peer]: ...

    @property
    def counters(self) -> Counter[str]: ...


# -- one connection, as its tasks and the fast path see it -------------------------------------
class Input(Protocol):
    """Where a reader's bytes come from."""

    def start(self) -> None:
        """The handshake's leftovers are handed on: reading starts."""
        ...

    def stop(self) -> None:
        """The connection ended."""
        ...

    async def receive(self) -> bytes | bytearray:
        """The next bytes, b"" at the end."""
        ...

    async def after(self, size: int, pipe: Pipe) -> None:
        """A read of ``size`` bytes was handed on to ``pipe``."""
        ...


class Output(Protocol):
    """Where a writer's bytes go."""

    async def write(self, data: Buffer) -> None:
        """Write all of ``data``."""
        ...

    async def pause(self) -> None:
        """Between two batches: let other tasks run."""
        ...

    async def idle(self) -> None:
        """Wait until the pipe has work."""
        ...


class ConnectionCodec(Protocol):
    """A connection's peer and codec: what the fast path's write-through
    (``RawOutput``) reads, and what every other child of a connection reads too."""

    @property
    def peer(self) -> Peer: ...

    @property
    def codec(self) -> Codec: ...


class ReadThroughParent(ConnectionCodec, Protocol):
    """A connection, as whatever turns its reads into messages sees it (the fast
    path's read-through, ``ReadThrough``, and the reader): the calls that hand a
    read on and that end the connection the way the reader would."""

    def received(self, data: bytes | bytearray) -> None:
        """One read's bytes: the peer was heard, and what they completed goes on."""
        ...

    def refuse(self, exc: ProtocolError) -> None:
        """The peer broke the protocol: drop it."""
        ...

    def log_closed(self) -> None:
        """The peer closed the connection."""
        ...

    def log_lost(self, exc: BaseException) -> None:
        """The connection broke."""
        ...

    def close(self) -> None:
        """End the connection."""
        ...


class ReaderParent(ReadThroughParent, HeartbeatParent, Protocol):
    """A connection, as its reader sees it: a read-through's calls and a heartbeat
    task's, plus where its bytes come from and its heartbeat (told when
    back-pressure stops the reader; the TTL that bounds its next read)."""

    @property
    def input(self) -> Input: ...

    @property
    def heartbeat(self) -> Heartbeat: ...

    def deliver(self, events: list[Received]) -> None:
        """Hand a batch of parsed events (the handshake's leftovers) to the peer."""
        ...


class WriterParent(ConnectionCodec, HeartbeatParent, Protocol):
    """A connection, as its writer sees it: a heartbeat task's calls, plus where the
    bytes go, its heartbeat (told when a PING is written), and whether the socket is
    closing (a closing socket's linger waits on the writers)."""

    @property
    def output(self) -> Output: ...

    @property
    def runtime(self) -> SocketState: ...

    @property
    def heartbeat(self) -> Heartbeat: ...

    @property
    def outbound(self) -> Outbound:
        """The connection's sending half (``trizmq.zmtp.outbound``)."""
        ...
