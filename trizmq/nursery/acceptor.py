"""The acceptor of one bound byte-stream endpoint: a connection actor per peer.

Rules:

* A binding side makes a fresh peer per accepted connection; the peer lives as long
  as its connection, and its unsent messages are dropped when it ends (unread
  incoming messages stay readable until drained), as 29/PUBSUB and 28/REQREP say.
* At most ``max_handshakes`` accepted connections are in their handshake at once,
  each within its greeting deadline; the acceptor never stops accepting, and a
  newcomer that finds every slot taken evicts a handshake (``slots.py``: the
  slow-loris defence), so a flood costs bounded memory and descriptors and a
  well-behaved peer still gets through.
* An ``accept`` that fails for lack of resources (EMFILE) is logged and retried
  after a breath; the socket goes on serving its other peers.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from .connection_actor import ConnectionActor
from .peers import Peer

if TYPE_CHECKING:
    from ..transport.base import Endpoint, Listener, StreamTransport
    from .fastpath.socket_state import FastPath
    from .parents import AcceptorParent
    from .slots import HandshakeSlot, HandshakeSlots

__all__ = ["run_acceptor"]

log = logging.getLogger("trizmq")


@enable_ki_protection
async def run_acceptor(
    runtime: AcceptorParent[FastPath],
    transport: StreamTransport,
    listener: Listener,
    task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept connections on ``listener`` until unbound or closed."""
    endpoint = listener.endpoint
    bound = transport.parse(endpoint, endpoint.partition("://")[2], for_bind=True)
    slots = runtime.handshake_slots
    with trio.CancelScope() as scope:
        task_status.started(scope)
        while True:
            try:
                stream, address = await listener.accept()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                return
            except OSError as exc:
                # EMFILE and friends: log, breathe, go on serving the others
                log.warning("%s: accept failed: %s", endpoint, exc)
                await trio.sleep(0.1)
                continue
            try:
                slot = await slots.admit(endpoint, address)
            except BaseException:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
                raise
            runtime.counts.event("accepted")
            runtime.emit(monitor.Accepted(endpoint, address))
            runtime.nursery.start_soon(
                _serve, runtime, transport, stream, endpoint, address, slot, bound
            )
            del slot  # the connection's own from here: given back when its handshake ends


class _Admission:
    """An accepted connection's handshake slot, given back once, when its handshake
    ends: nothing of the slot (its cancel scope, its place in the table) stays with a
    connection that lives on for hours (a crowd of idle peers is memory the cyclic
    garbage collector walks)."""

    __slots__ = ("_slots", "cut", "slot")

    def __init__(self, slots: HandshakeSlots, slot: HandshakeSlot) -> None:
        self._slots = slots
        self.slot: HandshakeSlot | None = slot
        #: the handshake was cut short by its slot (evicted, or silent too long)
        self.cut = False

    def release(self) -> None:
        """Give the slot back (once; later calls do nothing)."""
        slot = self.slot
        if slot is not None:
            self.slot = None
            self.cut = slot.scope.cancelled_caught
            self._slots.release(slot)


@enable_ki_protection
async def _serve(
    runtime: AcceptorParent[FastPath],
    transport: StreamTransport,
    stream: trio.abc.Stream,
    endpoint: str,
    address: str,
    slot: HandshakeSlot,
    bound: Endpoint,
) -> None:
    """One accepted connection: a fresh peer that lives as long as the stream."""
    admission = _Admission(runtime.handshake_slots, slot)
    del slot  # the admission holds it until the handshake ends
    # trio < 0.28 keeps a copy of a KI-protected coroutine's arguments in its frame's
    # locals dict (where it marks the protection); reading the locals refreshes the
    # copy, which then no longer holds the slot
    locals()
    options = runtime.options
    peer = runtime.peers.add(Peer(endpoint, *runtime.new_pipes()))
    peer.remote_address = address
    try:
        codec = transport.codec(runtime.socket_kind, options, bound, client=False)
        actor = ConnectionActor(runtime, stream, peer, codec)
        await actor.run(kept=False, handshake_done=admission.release, slot=admission.slot)
    finally:
        # a failed handshake frees its slot (handshake_done) and closes the stream
        # (aclose closes before it yields) in one step: an acceptor waiting for the
        # slot never sees more than max_handshakes connections open in a handshake
        admission.release()
        if admission.cut:
            transport.abort(stream)  # evicted or silent: no TIME_WAIT left for it
        runtime.peers.leave(peer)
        with trio.CancelScope(shield=True):
            await stream.aclose()
