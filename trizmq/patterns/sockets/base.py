"""The contract between a socket's runtime and its routing strategy.

A strategy is one socket type's routing decisions, synchronous and free of I/O:
which peer gets an outgoing message, which peer's message is read next, what an
incoming subscription changes. The runtime (``trizmq.nursery``) owns tasks and
pipes and calls these methods; a strategy never awaits. Blocking is expressed by
return values: :meth:`SocketStrategy.send` returns False and :meth:`recv` returns
None where the caller would have to wait, and the runtime parks the caller until
a pipe's ``on_writable``/``on_readable`` callback (wired to the socket's wake-up
functions) says something changed.

Peers are duck-typed (``trizmq.nursery.peer.Peer``): ``out_pipe``, ``in_pipe``
(with ``full``, ``put``, ``offer``, ``popleft``, ``poll``, ``__bool__``), ``gone``,
``connected``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..routing import FairQueue

__all__ = ["Fanout", "SocketStrategy", "can_take", "has_data"]


class Fanout:
    """One message queued to several tcp/ipc peers: their writers encode it once.

    The first writer to meet it stores the wire bytes in :attr:`wire`; the others
    reuse them (only connections without an encrypting mechanism share them).
    """

    __slots__ = ("frames", "wire")

    def __init__(self, frames: list[bytes]) -> None:
        self.frames = frames
        self.wire: bytes | None = None


def can_take(peer: Any) -> bool:
    """A peer whose outgoing pipe is under its high-water mark."""
    return not peer.out_pipe.full


def has_data(peer: Any) -> bool:
    """A peer with a message waiting in its incoming pipe."""
    return bool(peer.in_pipe)


class SocketStrategy:
    """Base strategy: fair-queued input, no output; subclasses fill in the rest."""

    #: the ZMTP Socket-Type this strategy implements
    socket_type: ClassVar[str] = ""
    can_send: ClassVar[bool] = False
    can_recv: ClassVar[bool] = True
    #: True when incoming items must be handled as they arrive (subscriptions on PUB/XPUB),
    #: rather than when the application reads
    eager: ClassVar[bool] = False
    #: True when peer commands (SUBSCRIBE, CANCEL, JOIN, LEAVE) matter to this type
    wants_commands: ClassVar[bool] = False

    def __init__(
        self,
        options: Mapping[str, Any],
        readable: Callable[[], None],
        writable: Callable[[], None],
    ) -> None:
        self.options = options
        #: wake the socket's receivers / senders
        self.readable = readable
        self.writable = writable
        self.inbound: FairQueue[Any] = FairQueue()
        #: True when :meth:`accept` would accept every message, so recv can skip calling
        #: it: when it is not overridden, or (SUB) while the subscriptions say so
        self.accepts_all = type(self).accept is SocketStrategy.accept

    # -- peers -------------------------------------------------------------------
    def attach(self, peer: Any) -> bool:
        """Start routing to and from ``peer``; False refuses it (PAIR's second peer)."""
        self.inbound.add(peer)
        return True

    def detach(self, peer: Any) -> None:
        """Stop routing to ``peer``; its unread input stays readable until drained."""
        if not peer.in_pipe:
            self.inbound.remove(peer)

    def connected(self, peer: Any) -> None:
        """A (re)established connection now carries ``peer`` (handshake done)."""

    def disconnected(self, peer: Any) -> None:
        """The connection under a kept ``peer`` was lost; a reconnect may follow."""

    # -- messages ----------------------------------------------------------------
    def send(self, msg: list[bytes]) -> bool:
        """Queue ``msg``; False means no peer can take it now (the caller waits)."""
        raise NotImplementedError

    def recv(self) -> list[bytes] | None:
        """The next message, fair-queued over peers; None when there is none."""
        inbound = self.inbound
        while True:
            peer = inbound.only
            if peer is None:
                peer = inbound.next_peer(has_data)
                if peer is None:
                    return None
            pipe = peer.in_pipe
            item = pipe.poll()
            if item is None:
                # the only peer has nothing waiting
                return None
            if peer.gone and not pipe:
                inbound.remove(peer)
            if item.__class__ is list and (self.accepts_all or self.accept(peer, item)):
                return item  # type: ignore[no-any-return,unused-ignore]

    def accept(self, peer: Any, msg: list[bytes]) -> bool:
        """Whether a message read from ``peer`` is delivered (SUB filters here)."""
        return True

    def incoming(self, peer: Any) -> None:
        """Eager strategies consume ``peer.in_pipe`` here as soon as it fills."""

    def statistics(self) -> dict[str, int]:
        """Peers known to the strategy."""
        return {"peers": len(self.inbound)}
