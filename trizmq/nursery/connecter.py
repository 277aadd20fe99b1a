"""The connecter of one connected byte-stream endpoint: connect, run, reconnect.

Rules:

* ``connect()`` returns at once; the connecter connects in the background, runs the
  connection, and reconnects after it is lost, for as long as the endpoint stays
  connected (ZeroMQ semantics: connecting before the peer binds works).
* Its delays are :class:`~trizmq.patterns.backoff.Backoff`'s: ``reconnect_ivl``
  doubling to ``reconnect_ivl_max``, at least a second (doubling to 30 s) after a
  refused handshake, with jitter.
* Without ``immediate`` the connecter's peer is made and routed at ``connect()``
  and kept across reconnects, so messages queue for it while no connection is up
  (a PAIR already paired cannot route it: it then connects like an immediate
  one). With ``immediate`` every connection gets a fresh peer, routed once its
  handshake succeeds, whose unsent messages go with the connection.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from ..patterns.backoff import Backoff, Outcome
from .connection_actor import ConnectionActor
from .peers import Peer

if TYPE_CHECKING:
    from ..transport.base import Endpoint, StreamTransport
    from .fastpath.socket_state import FastPath
    from .parents import ConnecterParent

__all__ = ["Connecter"]

log = logging.getLogger("trizmq")

#: our own generator: the jitter never disturbs (nor depends on) the application's random state
_JITTER = random.Random()


class Connecter:
    """One connected endpoint: its peer (kept, or one per connection) and its task."""

    def __init__(
        self, runtime: ConnecterParent[FastPath], transport: StreamTransport, endpoint: Endpoint
    ) -> None:
        self.runtime = runtime
        self.transport = transport
        self.endpoint = endpoint
        options = runtime.options
        #: the peer kept across reconnects (None with ``immediate``, or a taken PAIR)
        self.kept: Peer | None = None
        if not options.immediate:
            peer = runtime.peers.add(Peer(str(endpoint), *runtime.new_pipes()))
            if runtime.peers.attach(peer):
                self.kept = peer
            else:
                runtime.peers.leave(peer)
        #: the connecter task's scope (cancelled by disconnect and close)
        self.scope: trio.CancelScope | None = None
        #: the peer of the connection under way, if any
        self.current: Peer | None = None

    def holds(self, peer: Peer) -> bool:
        """Whether ``peer`` is this endpoint's (kept, or of the connection under way)."""
        return peer is self.kept or peer is self.current

    async def aclose(self) -> None:
        """Stop connecting; the kept peer and its queue go."""
        if self.scope is not None:
            self.scope.cancel()
        if self.kept is not None:
            self.runtime.peers.leave(self.kept)
        await trio.lowlevel.checkpoint()

    @enable_ki_protection
    async def run(
        self, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Connect, run the connection, and reconnect with back-off, forever."""
        runtime, endpoint = self.runtime, self.endpoint
        options = runtime.options
        backoff = Backoff(options.reconnect_ivl, options.reconnect_ivl_max, _JITTER.uniform)
        shown = str(endpoint)
        first = True
        with trio.CancelScope() as scope:
            self.scope = scope
            task_status.started(scope)
            while True:
                try:
                    stream = await self.transport.connect(endpoint, options)
                except OSError as exc:
                    log.debug("%s: connect failed: %s", shown, exc)
                    runtime.emit(monitor.ConnectDelayed(shown, str(exc)))
                    outcome = Outcome.LOST
                else:
                    runtime.counts.event("connected")
                    if not first:
                        runtime.counts.event("reconnects")
                    first = False
                    runtime.emit(monitor.Connected(shown))
                    outcome = await self._run_connection(stream)
                wait = backoff.next_wait(outcome)
                runtime.emit(monitor.ConnectRetried(shown, wait))
                await trio.sleep(wait)

    async def _run_connection(self, stream: trio.abc.Stream) -> Outcome:
        runtime = self.runtime
        peer = self.kept
        if peer is None:
            peer = runtime.peers.add(Peer(str(self.endpoint), *runtime.new_pipes()))
        self.current = peer
        codec = self.transport.codec(
            runtime.socket_kind, runtime.options, self.endpoint, client=True
        )
        try:
            return await ConnectionActor(runtime, stream, peer, codec).run(kept=peer is self.kept)
        finally:
            self.current = None
            if peer is not self.kept:
                runtime.peers.leave(peer)
            with trio.CancelScope(shield=True):
                await stream.aclose()
