"""The socket actor: the endpoints, peers and tasks of one socket.

A :class:`SocketRuntime` runs in the socket's nursery, the only place its tasks
start. It owns the endpoint table (what is bound, what is connected), hands each
endpoint to its transport (``trizmq.transport``: one table from scheme to
transport), and closes everything. The work is done by actors with one job each:

* per bound byte-stream endpoint, an **acceptor** (``acceptor.py``), which runs a
  **connection actor** (``connection_actor.py``: handshake, ZAP, attach, then a reader,
  a writer and a heartbeat task in the connection's own cancel scope) per peer;
* per connected byte-stream endpoint, a **connecter** (``connecter.py``), which
  connects, runs a connection actor, and reconnects with back-off;
* message transports (inproc, udp) run what they need through this runtime, seen
  as a :class:`~trizmq.transport.base.LinkHost`.

Peers move between states only through the :class:`~trizmq.nursery.peers.PeerTable`.
Messages never pass through this actor: they flow between the socket's strategy
and each peer's pipes.

Close: unbind everything, flush for ``linger`` seconds, end the inproc links,
then cancel every task. The runtime's tasks are protected from
``KeyboardInterrupt``: trio delivers a Ctrl-C to the program's main task instead,
so it never tears through a socket's nursery half-way through a write.
"""

from __future__ import annotations

import errno
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio

from .. import _monitor as monitor
from .._errors import os_error
from ..transport import MessageTransport, transport_for
from .acceptor import run_acceptor
from .connecter import Connecter
from .counting import SocketCounts
from .handshake_io import Zap
from .peers import Peer, PeerTable
from .pipe import Pipe, pipes_for
from .slots import HandshakeSlots

if TYPE_CHECKING:
    from .._options import Options
    from .._stats import SocketStats
    from ..patterns.sockets.base import PeerLike, SocketStrategy
    from ..patterns.sockets.socket_type import SocketType
    from ..transport.base import Endpoint, Listener
    from .fastpath.socket_state import FastPath

__all__ = ["SocketRuntime"]

log = logging.getLogger("trizmq")


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class _Connected(_Closable, Protocol):
    def holds(self, peer: Peer) -> bool: ...


class _Bound:
    """A bound byte-stream endpoint: its listener and its acceptor."""

    def __init__(self, listener: Listener, scope: trio.CancelScope) -> None:
        self.listener = listener
        self.scope = scope

    async def aclose(self) -> None:
        self.scope.cancel()
        with trio.CancelScope(shield=True):
            await self.listener.aclose()


class SocketRuntime:
    """Endpoints, peers and tasks of one socket, run in the socket's nursery."""

    def __init__(
        self,
        kind: SocketType,
        options: Options,
        strategy: SocketStrategy,
        nursery: trio.Nursery,
        wake_receivers: Callable[[], None],
        wake_senders: Callable[[], None],
        fast: FastPath | None,
    ) -> None:
        #: the socket's type: its row of the socket-type table
        self.socket_kind = kind
        self.socket_type = kind.name
        self.options = options
        self.strategy = strategy
        #: whether connections may queue one-frame messages as bytes for this type
        self.takes_bare_messages = strategy.takes_bare_messages()
        self.nursery = nursery
        #: the socket's fast-path state, or None on the portable path
        self.fast = fast
        self.identity: bytes = options.routing_id or b""
        self.peers = PeerTable(strategy, wake_receivers, wake_senders)
        #: bound endpoint (resolved) -> what unbinds it
        self.listeners: dict[str, _Closable] = {}
        #: connected endpoint -> what disconnects it
        self.connecters: dict[str, _Connected] = {}
        self.closing = False
        self.zap = Zap(options)
        #: accepted connections still in their handshake (the slow-loris defence)
        self.handshake_slots = HandshakeSlots(options)
        #: counts kept by transports (udp datagrams dropped, malformed)
        self.counters: Counter[str] = Counter()
        #: the socket's own counts (connections, departed peers) and its snapshot
        self.counts = SocketCounts(kind.name, kind.drops_at_hwm)
        self.peers.retired = lambda peer: self.counts.retire(peer, self.strategy)
        #: where monitor events go (the socket fans them out to its monitors)
        self.emit: Callable[[monitor.MonitorEvent], None] = lambda event: None
        strategy.kick = self.kick  # type: ignore[attr-defined]

    def reconfigure(self, options: Options) -> None:
        """Options changed at run time: what reads them from now on (new connections,
        binds and connects, ZAP, the handshake deadlines) sees the new ones."""
        self.options = options
        self.identity = options.routing_id or b""
        self.zap.options = options
        self.handshake_slots.options = options
        self.strategy.reconfigure(options)

    def kick(self, peer: PeerLike) -> None:
        """End one peer's connection or link (ROUTER handover), keeping the others."""
        closer = peer.closer  # type: ignore[attr-defined]
        if closer is not None:
            closer()

    # -- endpoints -----------------------------------------------------------------------
    async def bind(self, endpoint: Endpoint) -> str:
        """Listen on ``endpoint``; return the endpoint actually bound."""
        transport = transport_for(endpoint.transport)
        if isinstance(transport, MessageTransport):
            binding = await transport.bind(endpoint, self)
            self.listeners[binding.endpoint] = binding
            return binding.endpoint
        try:
            listener = await transport.listen(endpoint, self.options)
        except (OSError, ValueError) as exc:
            self.emit(monitor.BindFailed(str(endpoint), str(exc)))
            raise
        resolved = listener.endpoint
        self.emit(monitor.Listening(resolved))
        scope = await self.nursery.start(run_acceptor, self, transport, listener)
        self.listeners[resolved] = _Bound(listener, scope)
        return resolved

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on ``endpoint`` (as returned by :meth:`bind`)."""
        bound = self.listeners.pop(endpoint, None)
        if bound is None:
            raise os_error(errno.ENOENT, f"{endpoint} is not bound")
        await bound.aclose()
        self.emit(monitor.Closed(endpoint))

    async def connect(self, endpoint: Endpoint) -> Peer | None:
        """Start connecting to ``endpoint`` in the background; its kept peer, if any."""
        key = str(endpoint)
        if key in self.connecters:
            raise os_error(errno.EISCONN, f"{key} is already connected")
        transport = transport_for(endpoint.transport)
        if isinstance(transport, MessageTransport):
            binding = await transport.connect(endpoint, self)
            if not binding.ended:
                self.connecters[key] = binding
            return binding.peer
        connecter = Connecter(self, transport, endpoint)
        self.connecters[key] = connecter
        await self.nursery.start(connecter.run)
        return connecter.kept

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint`` and drop its peer and queue."""
        connecter = self.connecters.pop(endpoint, None)
        if connecter is None:
            raise os_error(errno.ENOENT, f"{endpoint} is not connected")
        await connecter.aclose()

    # -- the host of message transports ----------------------------------------------------
    def new_link_peer(
        self,
        endpoint: str,
        *,
        out_hwm: int = 0,
        in_hwm: int = 0,
        across: Peer | None = None,
        datagram: bool = False,
        shared_queue: bool = False,
    ) -> Peer:
        """A peer over new pipes (``shared_queue``: another socket will read them), or
        over ``across``'s pipes (the other end of an inproc link: its out_pipe is our
        in_pipe)."""
        if across is not None:
            swapped = Peer(endpoint, across.in_pipe, across.out_pipe, shared_queue=True)
            return self.peers.add(swapped)
        out_pipe, in_pipe = pipes_for(out_hwm, in_hwm, link=shared_queue, **self._conflating())
        return self.peers.add(
            Peer(endpoint, out_pipe, in_pipe, datagram=datagram, shared_queue=shared_queue)
        )

    def new_pipes(self) -> tuple[Pipe, Pipe]:
        """The (outgoing, incoming) pipes of a new connection's peer: bounded by the
        HWMs, or conflating (``conflate``)."""
        options = self.options
        return pipes_for(options.sndhwm, options.rcvhwm, **self._conflating())

    def _conflating(self) -> dict[str, bool]:
        """Which of a new peer's queues conflate (``conflate``, where the type says)."""
        conflate, kind = self.options.conflate, self.socket_kind
        return {
            "conflate_out": conflate and kind.conflate_out,
            "conflate_in": conflate and kind.conflate_in,
        }

    def attach(self, peer: Peer) -> bool:
        """Route to and from ``peer``; False when the strategy refuses it."""
        return self.peers.attach(peer)

    def link_up(self, peer: Peer, peer_type: str, identity: bytes) -> None:
        """``peer``'s link is live."""
        peer.peer_type, peer.identity = peer_type, identity
        self.peers.live(peer)
        self.peers.flush_lot.unpark_all()  # a lingering connect's queue now has a reader
        if peer.in_pipe and peer.in_pipe.on_readable is not None:
            peer.in_pipe.on_readable()

    def link_down(self, peer: Peer) -> None:
        """``peer``'s link is gone for good (its queue stays the other socket's)."""
        if peer.gone:
            return
        self.peers.leave(peer, drop_queue=False)
        for key, connected in list(self.connecters.items()):
            if connected.holds(peer):
                del self.connecters[key]

    async def run_task(
        self, task: Callable[[trio.TaskStatus[trio.CancelScope]], Awaitable[None]]
    ) -> trio.CancelScope:
        """Run ``task`` in the socket's nursery; its cancel scope once it started."""
        scope: trio.CancelScope = await self.nursery.start(task)
        return scope

    def flushed(self) -> None:
        """A queue may have drained: closing looks again."""
        if self.closing:
            self.peers.flush_lot.unpark_all()

    def count(self, name: str, amount: int = 1) -> None:
        """Add to one of the transports' counters."""
        self.counters[name] += amount

    # -- close --------------------------------------------------------------------------------
    async def close(self, linger: float | None) -> None:
        """Unbind everything, flush for ``linger`` seconds, then cancel every task.

        Only the flush can be cut short: an enclosing cancellation abandons it (trio's
        rule for ``aclose``: a cancelled close still closes, promptly), and the rest,
        which is bounded, runs shielded whatever happens.
        """
        self.closing = True
        try:
            with trio.CancelScope(shield=True):
                for endpoint in list(self.listeners):
                    try:
                        await self.unbind(endpoint)
                    except OSError as exc:  # pragma: no cover - unbinding our own listener
                        log.debug("%s: unbind on close failed: %s", endpoint, exc)
            if linger is None or linger > 0:
                with trio.move_on_after(math.inf if linger is None else linger):
                    while not self.peers.all_flushed():
                        await self.peers.flush_lot.park()
        finally:
            with trio.CancelScope(shield=True):
                for key, connected in list(self.connecters.items()):
                    if not isinstance(connected, Connecter):
                        del self.connecters[key]
                        await connected.aclose()
            for peer in self.peers:
                if peer.shared_queue and peer.closer is not None:
                    peer.closer()
            self.nursery.cancel_scope.cancel()

    def stats(self) -> SocketStats:
        """The socket's counters now (``sock.stats()``; see ``counting.py``)."""
        return self.counts.snapshot(self)

    def statistics(self) -> dict[str, object]:
        """Endpoints, live peers and queue lengths."""
        queued_out, queued_in = self.peers.queued()
        return {
            "bound": sorted(self.listeners),
            "connected": sorted(self.connecters),
            "live_peers": self.peers.live_count(),
            "queued_out": queued_out,
            "queued_in": queued_in,
        }
