"""The socket's view of one peer: its two pipes and what it announced.

A :class:`Peer` is created by ``connect()`` (it outlives reconnects: a connecting
side keeps its queue) or by an accepted connection (it dies with the connection:
a binding side discards the queue when the peer leaves). Socket strategies in
``trizmq.patterns.sockets`` only ever see this object: they put messages into
:attr:`Peer.out_pipe`, take them from :attr:`Peer.in_pipe`, and never know
whether a writer task (tcp/ipc) or another socket (inproc) is on the far side.
"""

from __future__ import annotations

from typing import Any

import trio

from .pipe import Pipe

__all__ = ["Peer"]


class Peer:
    """One peer connection, present or (for a connecter between attempts) pending."""

    __slots__ = (
        "attached",
        "conn",
        "connected",
        "endpoint",
        "gone",
        "identity",
        "in_pipe",
        "kind",
        "on_gone",
        "out_pipe",
        "peer_type",
        "read_through",
        "remote_address",
        "routing_id",
        "scope",
        "ttl",
        "version",
        "writing",
    )

    def __init__(self, endpoint: str, kind: str, out_pipe: Pipe, in_pipe: Pipe) -> None:
        #: the local endpoint this peer came through (bound or connected)
        self.endpoint = endpoint
        #: "stream" (tcp/ipc, a writer task drains out_pipe) or "inproc" (the other socket does)
        self.kind = kind
        self.out_pipe = out_pipe
        self.in_pipe = in_pipe
        #: the peer's Socket-Type, identity and ZMTP version once the handshake is done
        self.peer_type = ""
        self.identity = b""
        self.version = (3, 1)
        self.routing_id: Any = None
        self.remote_address = ""
        #: the sans-I/O Connection of the live stream, if any
        self.conn: Any = None
        #: True while a handshaken connection (or an inproc link) carries this peer
        self.connected = False
        #: True while the socket's strategy routes to/from this peer
        self.attached = False
        #: True once the peer left for good: its in_pipe is read to the end, then it is dropped
        self.gone = False
        #: True while the writer task has taken messages but not finished send_all
        self.writing = False
        #: the cancel scope of the live connection: a disconnect cancels this scope only
        self.scope: trio.CancelScope | None = None
        #: seconds the peer's last PING allows before we must hear from it (0 = none)
        self.ttl = 0.0
        #: called when the remote side of an inproc link goes away
        self.on_gone: Any = None
        #: while a stream connection's reader runs (OS sockets only): the
        #: ``trizmq.nursery.engine.ReadThrough`` a receiving task may read it with
        self.read_through: Any = None

    @property
    def flushed(self) -> bool:
        """Nothing left to write: the out_pipe is empty and no write is under way."""
        if self.kind == "inproc":
            # a linked pipe is the other socket's queue; an unlinked one waits for a binder
            return self.connected or not self.out_pipe
        return not self.out_pipe and not self.writing

    def __repr__(self) -> str:
        return f"<Peer {self.peer_type or '?'} via {self.endpoint} {self.remote_address}>"
